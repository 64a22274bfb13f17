"""Lead images on news and blog pages in the layouts of 16 kinds of real sites
(tests/newslayouts.py), each page showing one lead picture: extraction (this tree's,
or another commit's with ``--ref``) and then this tree's heuristics stage steps at
defaults (``heuristics.build_steps``: language ID, node cleanup, the image-count
bound, the text rules). Prints, per layout and over all, the share of pages kept
with an image, the share whose first node is the lead picture, and what the others
were rejected for.

    .venv/bin/python benchmarks/bench_lead_images.py
    .venv/bin/python benchmarks/bench_lead_images.py --ref f65feb6   # the extraction of that commit
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import importlib
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from newslayouts import news_pages  # noqa: E402
from pagebuild import html_page  # noqa: E402

from mmcurate.pipeline.config import ExtractConfig, HeuristicsConfig  # noqa: E402
from mmcurate.schemas import ImageNode, TextNode  # noqa: E402
from mmcurate.stages.engines.extraction.page_documents import extract_document  # noqa: E402
from mmcurate.stages.heuristics import build_steps  # noqa: E402
from mmcurate.stages.results import apply_filters  # noqa: E402


def extractor(ref: str | None, workdir: Path):
    """``(html, url) -> Extraction`` of this tree, or of ``ref`` (exported as ``mmref``,
    its nodes turned into this tree's node types)."""
    if ref is None:
        from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura

        config = ExtractConfig()
        return lambda html, url: extract_trafilatura(html, url, config)
    from bench_heuristics_ab import export

    export(ref, workdir)
    sys.path.insert(0, str(workdir))
    adapter = importlib.import_module("mmref.stages.engines.extraction.trafilatura_adapter")
    ref_config = importlib.import_module("mmref.stages.config").ExtractConfig()
    result = importlib.import_module("mmcurate.stages.engines.extraction.result")

    def convert(node):
        kind = TextNode if type(node).__name__ == "TextNode" else ImageNode
        return kind(**{f.name: getattr(node, f.name) for f in dataclasses.fields(kind) if hasattr(node, f.name)})

    def extract(html: str, url: str):
        got = adapter.extract_trafilatura(html, url, ref_config)
        return result.Extraction(nodes=tuple(map(convert, got.nodes)), title=got.title, metadata=dict(got.metadata))

    return extract


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default=None, help="extract with this commit's tree instead of this one")
    parser.add_argument("--per-layout", type=int, default=3, help="pages of each layout (default 3)")
    args = parser.parse_args()
    pages = news_pages(args.per_layout)
    steps = build_steps(HeuristicsConfig())
    config = ExtractConfig()
    by_layout: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    reasons: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        extract = extractor(args.ref, Path(tmp))
        for i, page in enumerate(pages):
            doc, failure = extract_document(html_page(f"p{i}", page.html, page.url), config, extract)
            counts = by_layout[page.layout]
            counts["pages"] += 1
            if failure is not None:
                reasons[f"error {type(failure).__name__}"] += 1
                continue
            lead_first = bool(doc.nodes) and isinstance(doc.nodes[0], ImageNode) and doc.nodes[0].src in page.lead_urls
            counts["lead_first"] += lead_first
            out, verdict = apply_filters(doc, steps)
            if verdict is None and out.image_nodes:
                counts["kept_with_image"] += 1
            else:
                reasons[verdict.reason if verdict is not None else "kept without an image"] += 1
    print(f"extraction of {args.ref or 'this tree'}; heuristics of this tree at defaults")
    print(f"{'layout':<24} {'pages':>5} {'kept with image':>16} {'lead image first':>17}")
    total = collections.Counter()
    for layout, counts in by_layout.items():
        total.update(counts)
        print(f"{layout:<24} {counts['pages']:>5} {counts['kept_with_image']:>16} {counts['lead_first']:>17}")
    n = total["pages"]
    print(f"{'all':<24} {n:>5} {total['kept_with_image']:>9} ({total['kept_with_image'] / n:.1%}) {total['lead_first']:>9} ({total['lead_first'] / n:.1%})")
    if reasons:
        print("not kept with an image:", ", ".join(f"{r} {k}" for r, k in reasons.most_common()))


if __name__ == "__main__":
    main()
