"""Resuming by input range in a run without a corpus-wide stage (its first phase
stages per range, its write phase writes the tables from staging), under --limit and
without read.reshuffle (a range per file), from an index (a batch of pointers per
range), and the progress a resumed run shows."""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from warcio.archiveiterator import ArchiveIterator

from mmcurate.pipeline import progress
from mmcurate.pipeline.build import plan_phases
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.phases import run_phases
from mmcurate.schemas.tables import TABLES
from mmcurate.stages.read_index import ReadWarcIndex

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_resume import DEMO, RANGE_FILES, kill_once_ranges_are_marked, split_input  # noqa: E402,F401
from test_run_scale import outcome, progress_figures, stable  # noqa: E402
from warcbuild import WarcBuilder, html_responses  # noqa: E402


def _two_files(directory: Path) -> str:
    """Two WARCs of three demo pages each: the pattern matching both."""
    for part in range(2):
        with WarcBuilder.open(directory / f"part{part}.warc.gz") as warc:
            for url, payload, content_type, status in html_responses(DEMO)[part * 3 : part * 3 + 3]:
                warc.response(url, payload, content_type, status=status)
    return str(directory / "part*.warc.gz")


def _index(directory: Path) -> str:
    """A CC-index style table of the response records of both files."""
    names, offsets, lengths = [], [], []
    for path in sorted(directory.glob("part*.warc.gz")):
        with open(path, "rb") as fh:
            records = ArchiveIterator(fh)
            for record in records:
                if record.rec_type == "response":
                    names.append(str(path))
                    offsets.append(records.get_record_offset())
                    lengths.append(records.get_record_length())
    index = directory / "pointers.parquet"
    pq.write_table(pa.table({"warc_filename": names, "warc_record_offset": offsets, "warc_record_length": lengths}), index)
    return str(index)


def _run(inputs: str, root: Path, config, monitor=None, index=False):
    """Every phase of a run into staging ``root`` (no publication): counters, report.
    With ``index``, ``inputs`` is an index of pointers."""
    phases = plan_phases(config)
    reader = ReadWarcIndex([inputs], "", config.read) if index else None
    options = PipelineOptions(["--runner=DirectRunner"])
    return run_phases(phases, str(root), options, [inputs], config, reader, monitor)


def _tables(phase: Path) -> dict[str, list]:
    """Each assembled table: its files, with their rows (timings aside) in order."""
    got = {}
    for table in TABLES:
        files = sorted((phase / "tables" / table).iterdir())
        got[table] = [(f.name, [stable(r) if "signals" in r else r for r in pq.read_table(f).to_pylist()]) for f in files]
    return got


def _untimed(counters) -> dict:
    """The page funnel of a run's counters (what a finished range's marker restores):
    the reader's own, and each stage's kept, rejections and errors."""
    return {k: v for k, v in counters.items() if not k[1].endswith("micros")
            and (k[0] == "read" or k[1] == "kept" or k[1].startswith(("rejected.", "errors.")))}


def _keep_first_range(whole: Path, resumed: Path) -> str:
    """What a run killed after its first range (in path order) leaves: that range's
    read record and parts, copied into ``resumed``; the range id."""
    markers = sorted(whole.glob("0-read/reads/*.json"), key=lambda p: json.loads(p.read_text())["range"])
    rid = markers[0].stem
    for path in whole.glob(f"0-read/**/*{rid}*"):
        target = resumed / path.relative_to(whole)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return rid


CASES = {
    "one phase": ["run.stages=[heuristics]"],
    "limit": ["run.stages=[heuristics]", "read.limit=4"],
    "no reshuffle": ["run.stages=[heuristics]", "read.reshuffle=false"],
    "index": ["run.stages=[heuristics]"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_rerun_reads_only_the_ranges_not_finished_and_assembles_the_same_tables(case, tmp_path, monkeypatch):
    monkeypatch.setattr(progress.ProgressMonitor, "EVERY", 0.05)
    monkeypatch.setattr(progress.ProgressMonitor, "LOG_FACTOR", 1)
    inputs = _two_files(tmp_path)
    index = case == "index"  # the pointers into each file are one batch: a range
    if index:
        inputs = _index(tmp_path)
    config = load_config(overrides=CASES[case])
    counters, report = _run(inputs, tmp_path / "whole", config, index=index)
    assert report[0]["ranges"] == {"read": 2, "resumed": 0}
    loose = list((tmp_path / "whole").glob("0-read/*/part-*.parquet"))
    assert sum(pq.ParquetFile(f).metadata.num_rows for f in loose) == 0  # every record went to its range's files
    pages = 4 if case == "limit" else 6
    assert counters[("read", "pages")] == pages

    # A run killed after its first range: the rerun reads the other one only.
    rid = _keep_first_range(tmp_path / "whole", tmp_path / "again")
    size = sum(p.stat().st_size for p in tmp_path.glob("part*.warc.gz"))
    if index:
        size = sum(pq.read_table(inputs).column("warc_record_length").to_pylist())
    shown = io.StringIO()
    with progress.ProgressMonitor(size, "r", out=shown) as monitor:
        again, report = _run(inputs, tmp_path / "again", config, monitor, index=index)
    assert report[0]["ranges"] == {"read": 1, "resumed": 1}
    read = [p for p in (tmp_path / "again").glob("0-read/reads/*.json") if p.stem != rid]
    if case == "limit":  # the first file's 3 pages count towards the limit: 1 page of the second is read
        assert len(read) == 1 and json.loads(read[0].read_text())["pages"] == 1
    assert _untimed(again) == _untimed(counters)
    want = _tables(tmp_path / "whole" / "1-write")
    assert _tables(tmp_path / "again" / "1-write") == want
    assert [name for name, _ in want["documents"]] == ["part-00000-of-00001.parquet"]
    assert sum(len(rows) for table in ("documents", "decisions") for _, rows in want[table]) == pages

    # Its progress counts the range taken from staging: the whole funnel, all of the input.
    last = shown.getvalue().splitlines()[-1]
    funnel = progress.stage_figures(progress.counts_from_counters(counters))
    want_figures = {"read": (pages,), "extract": funnel["extract"], "heuristics": funnel["heuristics"]}
    if funnel["heuristics"][1]:  # the write phase counts the documents it writes, when there are any
        want_figures["write"] = (funnel["heuristics"][1],)
    assert progress_figures(last) == want_figures, last
    if case != "limit":  # (a limited run reads only part of its input)
        assert re.search(r"\(100% of [\d.]+ MB\)", last), last


def test_progress_adds_what_was_taken_from_staging_but_rates_only_this_runs_reading():
    m = progress.ProgressMonitor(total_bytes=4_000_000, run_id="r", out=io.StringIO())
    m._socket.close()
    m._started = time.monotonic() - 10
    m.resumed(progress.counts_from_counters({("read", "kept"): 30, ("read", "rejected.http_status"): 2,
                                             ("extract", "kept"): 25, ("extract", "errors.Timeout"): 5,
                                             ("read", "micros"): 99, ("staging", "ranges_read"): 3}), 3_000_000)
    m.latest = {"a": {"counts": {"read.kept": 8, "extract.kept": 8}, "bytes": 500_000}}
    assert m.line() == "read 40 pages (88% of 4.0 MB, ETA 10s) | extract 38->33 | 0.8 pages/s, 10s elapsed"


# -- a real kill ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_one_phase_run_killed_inside_it_reads_only_the_ranges_it_had_not_finished(split_input, tmp_path):  # noqa: F811
    inputs = str(split_input / "part*.warc.gz")
    args = ["--stages", "heuristics"]
    whole = tmp_path / "whole"
    assert main(["run", inputs, "-o", str(whole), "--runner-preset", "direct", "--quiet", *args]) == 0
    want_kept, want_rows, want = outcome(whole)
    assert want["phases"][0]["ranges"] == {"read": RANGE_FILES, "resumed": 0}

    output = tmp_path / "out"
    finished = kill_once_ranges_are_marked(inputs, output, *args)

    assert main(["run", inputs, "-o", str(output), "--runner-preset", "direct", "--quiet", *args]) == 0
    kept, rows, manifest = outcome(output)
    assert manifest["phases"][0]["ranges"] == {"read": RANGE_FILES - finished, "resumed": finished}
    assert kept == want_kept and len(kept) > 0 and rows == want_rows
    assert manifest["totals"] == want["totals"] and manifest["records"] == want["records"]
    untimed = {k: {n: v for n, v in e.items() if n != "seconds"} for k, e in manifest["stages"].items()}
    assert untimed == {k: {n: v for n, v in e.items() if n != "seconds"} for k, e in want["stages"].items()}
    assert manifest["tables"] == want["tables"] and manifest["image_decisions"] == want["image_decisions"]
    untimed_safety = [{k: {n: v for n, v in e.items() if n != "seconds"} for k, e in m["safety"].items()}
                      for m in (manifest, want)]
    assert untimed_safety[0] == untimed_safety[1] and manifest["counter_mismatches"] == []
    # The same files, each with the same rows in the same order.
    for table in TABLES:
        names = sorted(p.name for p in (output / table).iterdir())
        assert names == sorted(p.name for p in (whole / table).iterdir()) == ["part-00000-of-00001.parquet"]
        got = [stable(r) if "signals" in r else r for r in pq.read_table(output / table / names[0]).to_pylist()]
        assert got == [stable(r) if "signals" in r else r for r in pq.read_table(whole / table / names[0]).to_pylist()]
    assert not (output / ".staging").exists()
