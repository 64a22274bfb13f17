"""Fixtures of tests/pipeline. `report_run`: one small real run shared by
test_report.py and test_inspect.py -- the small generated WARC (tests/small_corpus.py)
with captured images through read -> extract -> heuristics -> dedup -> images on the
DirectRunner."""

from __future__ import annotations

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
def report_run(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    return build_and_run(tmp_path_factory.mktemp("report-run"))
