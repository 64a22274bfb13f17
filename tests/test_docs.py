"""README.md and docs/: every relative link reaches a file and heading that exist,
and docs/tables.md lists every column of every output table with its type."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mmcurate.schemas.tables import SCHEMAS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file (outside code fences)."""
    found, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_the_readme_links_every_reference_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, page.name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.name}: {target}"


def test_tables_doc_lists_every_column_with_its_type():
    text = (ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
    for table, schema in SCHEMAS.items():
        section = text.split(f"### `{table}`", 1)[1].split("\n### ", 1)[0]
        rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| (.+) \|$", section, flags=re.M)
        listed = {name: kind.replace("\\|", "|") for name, kind, _ in rows}
        expected = {f.name: str(f.type).replace("list<item: ", "list<") for f in schema}
        assert listed == expected, table


def test_the_code_map_names_every_package_and_only_paths_that_exist():
    """README's "Code map": a line per folder (every package of the tree among them)
    and per important module, each naming paths that exist."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Code map\n", 1)[1].split("\n## ", 1)[0]
    named = set()
    for cell in re.findall(r"^\| ([^|]+) \|", section, flags=re.M):
        named.update(re.findall(r"`([^`]+)`", cell))
    assert named and not [path for path in named if not (ROOT / path).exists()]
    packages = {
        init.parent.relative_to(ROOT).as_posix() + "/"
        for folder in ("schemas", "filters", "stages", "runners", "pipeline")
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert not packages - named, f"packages missing from the code map: {sorted(packages - named)}"
