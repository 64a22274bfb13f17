"""Fixtures of tests/pipeline. `report_run`: one small real run shared by
test_report.py and test_inspect.py -- the small generated WARC (tests/small_corpus.py)
with captured images through read -> extract -> heuristics -> dedup -> images on the
DirectRunner."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

from mmcurate.pipeline.cli import main
from mmcurate.schemas import make_doc_id
from small_corpus import write_small_warc


def build_and_run(root: Path) -> tuple[Path, dict[str, str]]:
    """Writes root/in.warc.gz, runs the pipeline into root/out; returns (out, name -> doc_id)."""
    ids = write_small_warc(root / "in.warc.gz")
    out = root / "out"
    code = main(["run", str(root / "in.warc.gz"), "--output", str(out), "--stages", "heuristics,dedup,images", "--quiet"])
    assert code == 0
    return out, {name: make_doc_id(record_id) for name, record_id in ids.items()}


@pytest.fixture(scope="session")
def report_run(tmp_path_factory, worker_id) -> tuple[Path, dict[str, str]]:
    """Made once per session: the first xdist worker that asks runs it, the others
    wait on the lock and read the same output (tests/conftest.py does the same for
    its shared runs). Tests only add report.html to it."""
    base = tmp_path_factory.getbasetemp()
    directory = (base.parent if worker_id != "master" else base) / "report-run"
    directory.mkdir(parents=True, exist_ok=True)
    done = directory / "ids.json"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _, ids = build_and_run(directory)
            done.write_text(json.dumps(ids))
        ids = json.loads(done.read_text())
    return directory / "out", ids
