"""The whole-pipeline runs that tests share (fixtures in tests/conftest.py), and
what a test needs to use one: its output, the copy to write into, the small input's stages."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mmcurate.pipeline.cli import main

DEMO = Path(__file__).resolve().parent / "fixtures" / "warc" / "demo.warc.gz"
SMALL_STAGES = "heuristics"  # the small WARC's runs: one phase, the fewest transforms


@dataclass(frozen=True)
class FinishedRun:
    """A run's output directory and what the run printed."""

    inputs: tuple[Path, ...]
    output: Path
    stdout: str
    stderr: str

    @property
    def manifest(self) -> dict:
        return json.loads((self.output / "manifest.json").read_text())

    def rows(self, table: str, columns=None) -> list[dict]:
        return pq.read_table(self.output / table, columns=columns).to_pylist()


def run_outcome(out: Path):
    """(kept ids, decision rows, manifest) of a finished run: what two runners must agree on."""
    kept = sorted(pq.read_table(out / "documents").column("doc_id").to_pylist())
    rows = sorted(
        (r["doc_id"], r["stage"], r["kind"], r["reason"])
        for r in pq.read_table(out / "decisions", columns=["doc_id", "stage", "kind", "reason"]).to_pylist()
    )
    return kept, rows, json.loads((out / "manifest.json").read_text())


def copy_run(source: Path, target: Path) -> Path:
    """A copy of a finished output that a test may write into (links kept as links,
    so the copy's versions and ``.current`` are its own)."""
    shutil.copytree(source, target, symlinks=True)
    return target


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def run_direct(inputs: list[Path], output: Path, *extra: str) -> FinishedRun:
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        # Progress would be printed every 10 ms if --quiet did not silence it
        # (tests/pipeline/test_run_scale.py::test_quiet_run_prints_no_progress_but_the_funnel).
        mp.setattr("mmcurate.pipeline.progress.ProgressMonitor.EVERY", 0.01)
        code = main(["run", *map(str, inputs), "-o", str(output), "--runner-preset", "direct", "--quiet", *extra])
    assert code == 0, err.getvalue()[-3000:]
    return FinishedRun(tuple(inputs), output, out.getvalue(), err.getvalue())
