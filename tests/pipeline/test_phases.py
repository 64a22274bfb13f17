"""The phases of a run: where they cut, and that the staged corpus-wide stages
decide exactly as the same stages joined in memory in one pipeline."""

from __future__ import annotations

import sys
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest

from mmcurate.pipeline.build import build_pipeline, plan_phases
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.run import run_curation

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_run_scale import DEMO, stable  # noqa: E402

STAGES = "heuristics,dedup,quality,images"


def test_phases_cut_at_each_corpus_wide_stage():
    phases = plan_phases(load_config(overrides=[f"run.stages={STAGES},recycle"]))
    assert [(p.dirname, p.stages, p.final) for p in phases] == [
        ("0-read", ("heuristics",), False),
        ("1-dedup", ("dedup", "quality"), False),
        ("2-images", ("images",), True),
    ]
    # A run without a corpus-wide stage ends with a write phase of no stage (its first phase stages by range).
    phases = plan_phases(load_config(overrides=["run.stages=heuristics"]))
    assert [(p.dirname, p.stages, p.final) for p in phases] == [("0-read", ("heuristics",), False), ("1-write", (), True)]


def tables(directory: Path) -> dict[str, list]:
    def rows(table):
        return sorted((stable(r) if "signals" in r else r for r in pq.read_table(directory / table).to_pylist()), key=repr)

    return {"documents": rows("documents"), "decisions": rows("decisions"), "images": rows("images")}


@pytest.mark.slow  # two whole-pipeline builds with every corpus-wide stage: minutes on a 2-core machine
def test_staged_phases_write_what_one_in_memory_pipeline_writes(tmp_path):
    config = load_config(overrides=[f"run.stages={STAGES}"])
    manifest = run_curation([str(DEMO)], str(tmp_path / "phased"), config, ["--runner=DirectRunner"])
    assert [p["phase"] for p in manifest["phases"]] == ["0-read", "1-dedup", "2-images"]
    with beam.Pipeline(runner="DirectRunner") as p:
        build_pipeline(p, [str(DEMO)], str(tmp_path / "whole"), config)
    phased, whole = tables(tmp_path / "phased"), tables(tmp_path / "whole")
    assert len(phased["documents"]) > 0 and len(phased["images"]) > 0
    assert {r["stage"] for r in phased["decisions"]} >= {"read", "heuristics", "dedup", "images"}
    assert phased == whole
