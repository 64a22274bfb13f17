"""Running at scale on one machine: DirectRunner multi-process against in-process,
reruns that give the same output, a killed run restarted into the same output,
live progress, and the funnel rebuilt from rows for runners without metrics."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.run import counters_from_rows, run_curation
from mmcurate.pipeline import progress
from shared_runs import SMALL_STAGES, copy_run
from warcbuild import repeat_pages

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "demo.warc.gz"


def stable(row: dict) -> dict:
    """A row without its timing signals (``*.seconds``), the one thing that varies."""
    return {**row, "signals": [s for s in row["signals"] or [] if not s["key"].endswith(".seconds")]}


def outcome(out: Path):
    """(kept ids, full decision rows but timings, manifest) of a finished run."""
    kept = sorted(pq.read_table(out / "documents").column("doc_id").to_pylist())
    rows = sorted(
        (stable(r) for r in pq.read_table(out / "decisions").to_pylist()),
        key=lambda r: (r["doc_id"], r["stage"], r["reason"]),
    )
    return kept, rows, json.loads((out / "manifest.json").read_text())


@pytest.fixture(scope="module")
def direct(demo_run):
    """The session's DirectRunner run of the demo WARC (tests/conftest.py)."""
    return outcome(demo_run.output)


def assert_same_run(got, want) -> None:
    kept, rows, manifest = got
    want_kept, want_rows, want = want
    assert kept == want_kept and len(kept) > 0
    assert rows == want_rows
    assert manifest["totals"] == want["totals"] and manifest["records"] == want["records"]
    assert {s: e.get("rejected_by_reason") for s, e in manifest["stages"].items()} == {
        s: e.get("rejected_by_reason") for s, e in want["stages"].items()
    }


LOCAL = ["--runner-preset", "local", "--runner-opt", "workers=2", "--quiet"]


@pytest.mark.slow
def test_multi_process_gives_the_same_ids_rows_and_counts(direct, tmp_path):
    out = tmp_path / "out"
    assert main(["run", str(DEMO), "-o", str(out), *LOCAL]) == 0
    got = outcome(out)
    assert_same_run(got, direct)
    assert [p["phase"] for p in got[2]["phases"]] == ["0-read", "1-dedup"]


def test_multi_process_on_a_small_warc_gives_the_same_ids_rows_and_counts(small_run, tmp_path):
    """The quick check of the local multi-process runner (the demo WARC's is slow)."""
    out = tmp_path / "out"
    assert main(["run", *map(str, small_run.inputs), "-o", str(out), "--stages", SMALL_STAGES, *LOCAL]) == 0
    assert_same_run(outcome(out), outcome(small_run.output))


def test_rerun_gives_the_same_ids_counts_and_decision_rows(direct, tmp_path):
    out = tmp_path / "again"
    assert main(["run", str(DEMO), "-o", str(out), "--runner-preset", "direct", "--quiet"]) == 0
    kept, rows, manifest = outcome(out)
    want_kept, want_rows, want = direct
    assert kept == want_kept
    assert rows == want_rows  # every column, provenance and signals included (timings aside)
    assert manifest["totals"] == want["totals"]
    assert manifest["config_sha256"] == want["config_sha256"]
    docs = sorted(pq.read_table(out / "documents").to_pylist(), key=lambda r: r["doc_id"])
    assert [d["texts"] for d in docs] == [d["texts"] for d in sorted(
        pq.read_table(Path(want["output"]) / "documents").to_pylist(), key=lambda r: r["doc_id"])]


@pytest.mark.slow
def test_killed_run_restarts_into_the_same_output_complete_and_not_duplicated(demo_run, tmp_path):
    big = tmp_path / "big.warc.gz"
    pages = repeat_pages(DEMO, big, 8)
    # A complete earlier run into the same directory (a copy of the session's).
    out = copy_run(demo_run.output, tmp_path / "out")
    before = outcome(out)
    cmd = [sys.executable, "-m", "mmcurate.pipeline.cli", "run", str(big), "-o", str(out), "--runner-preset", "direct", "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(4)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the run and its extractor children
    proc.wait()
    # Killed midway: the earlier output is untouched, never half-replaced.
    assert outcome(out)[0] == before[0] and outcome(out)[2]["run_id"] == before[2]["run_id"]
    # Restarted into the same output: complete, every page exactly once.
    assert main(["run", str(big), "-o", str(out), "--runner-preset", "direct", "--quiet"]) == 0
    kept, rows, manifest = outcome(out)
    assert manifest["totals"]["pages"] == pages and manifest["totals"]["conserved"]
    assert len(kept) == len(set(kept)) == manifest["totals"]["kept"] > 0
    ids = [r["doc_id"] for r in rows]
    assert len(ids) == len(set(ids)) == manifest["totals"]["rejected"] + manifest["totals"]["errors"]
    assert not set(ids) & set(kept)
    names = {p.name for p in out.iterdir()}
    assert {"decisions", "documents", "manifest.json"} <= names and ".staging" not in names


def test_local_run_shows_each_stages_progress_ending_at_the_funnel(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress.ProgressMonitor, "EVERY", 0.05)
    monkeypatch.setattr(progress.ProgressMonitor, "LOG_FACTOR", 1)
    big = tmp_path / "big.warc.gz"
    repeat_pages(DEMO, big, 2)
    manifest = run_curation([str(big)], str(tmp_path / "out"), load_config(), ["--runner=DirectRunner"], progress=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("read ")]
    assert lines
    shown = [progress_figures(line) for line in lines]
    # The last line, printed as the run ends, holds every stage's figures: the funnel's.
    funnel = {
        stage: (entry["in"],) if stage in ("read", "write") else (entry["in"], entry["kept"])
        for stage, entry in manifest["stages"].items()
        if entry.get("enabled") and stage != "recycle"
    }
    assert shown[-1] == funnel, lines[-1]
    assert set(funnel) > {"read", "extract", "write"}
    # Figures only grow; the input read is its size at the end.
    for earlier, later in zip(shown, shown[1:]):
        assert all(n <= m for stage in earlier for n, m in zip(earlier[stage], later[stage]))
    assert re.search(r"\(100% of [\d.]+ MB\)", lines[-1]), lines[-1]
    assert progress.ENV not in os.environ


def progress_figures(line: str) -> dict[str, tuple[int, ...]]:
    """Per stage on a progress line "read N pages (...) | stage IN->KEPT | write N | ...":
    (in, kept), and (pages,) for read, (kept,) for write."""
    figures = {"read": (int(re.match(r"read ([\d,]+) pages", line).group(1).replace(",", "")),)}
    for stage, numbers in re.findall(r"\| (\w+) ([\d,]+(?:(?:→|->)[\d,]+)?)(?= \|)", line):
        figures[stage] = tuple(int(n.replace(",", "")) for n in re.split("→|->", numbers))
    return figures


def test_quiet_run_prints_no_progress_but_the_funnel(demo_run):
    # The session's run is --quiet, with ProgressMonitor.EVERY at 0.01 s (tests/conftest.py).
    assert "pages/s" not in demo_run.stderr
    assert "conservation holds" in demo_run.stdout and "heuristics" in demo_run.stdout


def test_funnel_from_rows_matches_the_metrics(direct, tmp_path):
    """For runners without metrics (DaskRunner): the page funnel follows from rows."""
    _, _, want = direct
    from mmcurate.pipeline import publication as out

    written = out.table_summary(want["output"])
    counters = counters_from_rows(load_config(), written)
    assert counters[("read", "pages")] == want["totals"]["pages"]
    for stage in ["read", "extract", *want["stages_run"][2:-1]]:
        assert counters[(stage, "kept")] == want["stages"][stage]["kept"], stage
    assert counters[("read", f"rejected.{reasons.HTTP_STATUS_NOT_OK}")] == want["stages"]["read"]["rejected"]
