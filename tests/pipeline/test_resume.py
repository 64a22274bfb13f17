"""Runs that die or meet each other: resuming after a SIGKILL, Ctrl-C, two runs into
one directory, a publication killed at every step, the same WARC under two names,
and --limit."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import reasons
from mmcurate.pipeline import publication as out
from mmcurate.pipeline.build import build_phase, plan_phases
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.phases import STAGED_TABLES, query_counters
from mmcurate.stages.range_staging import finish_ranges, whole_ranges
from mmcurate.stages.engines import staging_files
from mmcurate.schemas.tables import TABLES
from shared_runs import SMALL_STAGES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "warc"
DEMO = FIXTURES / "demo.warc.gz"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_run_scale import outcome  # noqa: E402
from warcbuild import WarcBuilder, html_responses, repeat_pages  # noqa: E402


def cli(*args) -> list[str]:
    return [sys.executable, "-m", "mmcurate.pipeline.cli", "run", *map(str, args), "--runner-preset", "direct"]


def wait_for(predicate, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before the point the test waits for"
        assert time.monotonic() < deadline, "the run never reached the point the test waits for"
        time.sleep(0.05)


def finished_phases(output: Path) -> list[str]:
    return sorted(p.parent.name for p in output.glob(".staging/*/*/_COMPLETE.json"))


def kill_after_first_phase(warc: Path, output: Path) -> None:
    """Starts a run and SIGKILLs it (and its extractor children) as soon as its
    first phase has finished, inside the next one."""
    proc = subprocess.Popen(cli(warc, "-o", output, "-q"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_for(lambda: finished_phases(output) == ["0-read"], 300, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.warc.gz"
    repeat_pages(DEMO, path, 6)
    return path


def untimed(stage: dict) -> dict:
    return {k: v for k, v in stage.items() if k != "seconds"}


@pytest.fixture(scope="module")
def uninterrupted(big, tmp_path_factory):
    output = tmp_path_factory.mktemp("whole") / "out"
    assert main(["run", str(big), "-o", str(output), "--runner-preset", "direct", "--quiet"]) == 0
    return outcome(output)


@pytest.mark.slow
def test_a_run_killed_after_its_first_phase_resumes_there_and_gives_the_same_output(big, uninterrupted, tmp_path):
    output = tmp_path / "out"
    kill_after_first_phase(big, output)
    assert not (output / "manifest.json").exists()  # nothing published
    assert main(["run", str(big), "-o", str(output), "--runner-preset", "direct", "--quiet"]) == 0
    kept, rows, manifest = outcome(output)
    want_kept, want_rows, want = uninterrupted
    assert [(p["phase"], p["resumed"]) for p in manifest["phases"]] == [("0-read", True), ("1-dedup", False)]
    assert kept == want_kept and rows == want_rows
    assert manifest["totals"] == want["totals"]
    # Every figure of the read stage but its processing time, which no two runs share.
    assert untimed(manifest["stages"]["read"]) == untimed(want["stages"]["read"])
    assert not (output / ".staging").exists()


# -- resuming inside the first phase, by input range ------------------------------------

RANGE_FILES = 5


def finished_ranges(output: Path) -> list[str]:
    """The first phase's ranges a rerun would keep: read, and their files whole in place."""
    phases = list(output.glob(".staging/*/0-read"))
    if not phases:
        return []
    whole, _, _ = whole_ranges(str(phases[0]), STAGED_TABLES, False, ("read", "extract", "heuristics"))
    return sorted(whole)


@pytest.fixture(scope="module")
def split_input(tmp_path_factory) -> Path:
    """The demo pages dealt over small WARCs: each file is one input range."""
    directory = tmp_path_factory.mktemp("split")
    pages = html_responses(DEMO) * 2
    for part in range(RANGE_FILES):
        with WarcBuilder.open(directory / f"part{part}.warc.gz") as warc:
            for i, (url, payload, content_type, status) in enumerate(pages[part::RANGE_FILES]):
                warc.response(f"{url}#p{part}-{i}", payload, content_type, status=status)
    return directory


def kill_once_ranges_are_marked(inputs: str, output: Path, *args: str) -> int:
    """Starts a run and SIGKILLs it once some of its first phase's ranges are marked,
    before all are; how many were."""
    proc = subprocess.Popen(cli(inputs, "-o", output, "-q", *args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_for(lambda: len(finished_ranges(output)) >= 1, 300, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = len(finished_ranges(output))
    assert 0 < finished < RANGE_FILES, "the run was killed after all its ranges: nothing left to resume"
    assert finished_phases(output) == [] and not (output / "manifest.json").exists()
    return finished


def _first_phase(inputs: str, root: Path, done: dict) -> dict:
    """Runs the first phase of a default run alone; its counters."""
    config = load_config()
    phases = plan_phases(config)
    pipeline = beam.Pipeline(options=beam.options.pipeline_options.PipelineOptions(["--runner=DirectRunner"]))
    build_phase(pipeline, phases, phases[0], str(root), [inputs], config, done_ranges=done)
    result = pipeline.run()
    result.wait_until_finish()
    return query_counters(result)


def test_each_range_of_the_first_phase_is_staged_with_the_counters_beam_counted(tmp_path):
    """The counters a range's marker records are Beam's own for that range (the
    reader's, and each stage's page funnel), and a range named as done is not read
    again."""
    for part in range(2):
        with WarcBuilder.open(tmp_path / f"part{part}.warc.gz") as warc:
            for url, payload, content_type, status in html_responses(DEMO)[part * 3 : part * 3 + 3]:
                warc.response(url, payload, content_type, status=status)
    inputs = str(tmp_path / "part*.warc.gz")
    counters = _first_phase(inputs, tmp_path / "run", {})
    phase = str(tmp_path / "run" / "0-read")
    markers = finish_ranges(phase, STAGED_TABLES, False, ("read", "extract", "heuristics"))
    assert len(markers) == 2 and counters.pop(("staging", "ranges_read")) == 2
    funnel = {k: v for k, v in counters.items() if k[1] != "micros" and k != ("read", "files")
              and (k[0] == "read" or k[1] == "kept" or k[1].startswith(("rejected.", "errors.")))}
    tallied = {k: v for k, v in staging_files.summed_counters(markers.values()).items() if k[1] != "micros"}
    assert tallied == funnel and tallied[("read", "pages")] == 6
    assert sum(m["pages"] for m in markers.values()) == 6
    # Every page is a staged document or decision row in its range's files; Beam's sink got nothing.
    staged = [r for t in ("docs", "decisions") for f in staging_files.staged_files(FileSystems, f"{phase}/{t}")
              for u in staging_files.list_units(FileSystems, f) for r in staging_files.read_unit(FileSystems, u)]
    assert len(staged) == 6 and all(r.provenance.warc_file.startswith(str(tmp_path)) for r in staged)
    assert not [f for f in staging_files.staged_files(FileSystems, f"{phase}/docs") if "/part-" in f
                and pq.ParquetFile(f).metadata.num_rows]

    first, second = sorted(markers, key=lambda rid: markers[rid]["range"][0])
    again = _first_phase(inputs, tmp_path / "again", {first: markers[first]["pages"]})
    assert again[("staging", "ranges_read")] == 1
    rerun = finish_ranges(str(tmp_path / "again" / "0-read"), STAGED_TABLES, False, ("read", "extract", "heuristics"))
    assert list(rerun) == [second]
    assert again[("read", "pages")] == markers[second]["pages"]


@pytest.mark.slow
def test_a_run_killed_inside_its_first_phase_reads_only_the_ranges_it_had_not_finished(split_input, tmp_path):
    inputs = str(split_input / "part*.warc.gz")
    whole = tmp_path / "whole"
    assert main(["run", inputs, "-o", str(whole), "--runner-preset", "direct", "--quiet"]) == 0
    want_kept, want_rows, want = outcome(whole)
    assert want["phases"][0]["ranges"] == {"read": RANGE_FILES, "resumed": 0}

    output = tmp_path / "out"
    finished = kill_once_ranges_are_marked(inputs, output)

    assert main(["run", inputs, "-o", str(output), "--runner-preset", "direct", "--quiet"]) == 0
    kept, rows, manifest = outcome(output)
    # Read this time: only the ranges without a marker; the others came from staging.
    assert manifest["phases"][0]["ranges"] == {"read": RANGE_FILES - finished, "resumed": finished}
    assert [p["resumed"] for p in manifest["phases"]] == [False, False]
    assert kept == want_kept and len(kept) > 0 and rows == want_rows
    assert manifest["totals"] == want["totals"]
    # The restored counters of the finished ranges: every stage's figures but processing time.
    assert {k: untimed(v) for k, v in manifest["stages"].items()} == {k: untimed(v) for k, v in want["stages"].items()}
    assert manifest["records"] == want["records"] and manifest["counter_mismatches"] == []
    assert not (output / ".staging").exists()


@pytest.mark.slow
def test_ctrl_c_inside_the_first_phase_keeps_the_finished_ranges(split_input, tmp_path):
    output = tmp_path / "out"
    ctrl_c_keeps_the_finished_ranges(cli(split_input / "part*.warc.gz", "-o", output, "-q"), output)


def ctrl_c_keeps_the_finished_ranges(command: list[str], output: Path) -> None:
    """Starts ``command`` (a run into ``output``), sends its process group a Ctrl-C
    once a first-phase range is marked, and checks the run ends with its one line."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    wait_for(lambda: len(finished_ranges(output)) >= 1, 300, proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.decode().splitlines() if line.strip()]
    finished = len(finished_ranges(output))
    assert proc.returncode == 130 and 0 < finished < RANGE_FILES, (proc.returncode, finished, lines)
    assert lines == [f"mmcurate: interrupted; {finished} input range(s) of phase 0-read are kept in "
                     f"{next(output.glob('.staging/*'))}: run the same command again to resume"], lines


@pytest.mark.slow
def test_no_resume_starts_over(big, uninterrupted, tmp_path):
    output = tmp_path / "out"
    kill_after_first_phase(big, output)
    assert main(["run", str(big), "-o", str(output), "--runner-preset", "direct", "--quiet", "--no-resume"]) == 0
    kept, rows, manifest = outcome(output)
    assert [p["resumed"] for p in manifest["phases"]] == [False, False]
    assert kept == uninterrupted[0] and rows == uninterrupted[1]


@pytest.mark.slow
def test_ctrl_c_ends_the_run_with_one_line(big, tmp_path):
    output = tmp_path / "out"
    proc = subprocess.Popen(cli(big, "-o", output, "-q"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    # While the first range is being staged: nothing to resume from, so staging goes.
    wait_for(lambda: any(output.glob(".staging/*/0-read/*/*.parquet")), 120, proc)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole foreground group
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert proc.returncode == 130, err.decode()[-2000:]
    assert lines == ["mmcurate: interrupted before any phase finished; staging removed, nothing published"], lines
    assert not (output / ".staging").exists()
    # After the first phase: the run can resume, so staging stays.
    proc = subprocess.Popen(cli(big, "-o", output, "-q"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    wait_for(lambda: finished_phases(output) == ["0-read"], 300, proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert proc.returncode == 130 and len(lines) == 1 and "run the same command again to resume" in lines[0], lines
    assert finished_phases(output) == ["0-read"]


def test_a_second_run_into_a_directory_in_use_is_refused_with_one_line(small_warc, tmp_path, capsys):
    output = tmp_path / "out"
    with out.lock_output(str(output)):  # what a run holds while it works
        code = main(["run", str(DEMO), "-o", str(output), "--runner-preset", "direct", "--quiet"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 1
    assert err == [f"mmcurate: output {output} is in use by another run (pid {os.getpid()}); "
                   "wait for it to end or choose another --output"]
    assert not (output / "manifest.json").exists()
    # Free again: the run goes ahead (the small WARC, one phase: the quickest whole run).
    assert main(["run", str(small_warc), "-o", str(output), "--stages", SMALL_STAGES, "--runner-preset", "direct", "--quiet"]) == 0


def test_a_concurrent_run_is_refused_while_the_first_one_works(tmp_path):
    huge = tmp_path / "huge.warc.gz"
    repeat_pages(DEMO, huge, 1000)  # minutes of work, even on a loaded machine: still running when the second run asks
    output = tmp_path / "out"
    first = subprocess.Popen(cli(huge, "-o", output, "-q"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        wait_for(lambda: any(output.glob(".staging/*/run.json")), 120, first)
        second = subprocess.run(cli(DEMO, "-o", output, "-q"), capture_output=True, timeout=120)
        assert first.poll() is None, "the first run ended before the second one asked"
        lines = second.stderr.decode().splitlines()
        assert second.returncode == 1 and len(lines) == 1 and "is in use by another run" in lines[0], lines
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


# -- publication killed at every step --------------------------------------------------


def _fake_version(directory: Path, label: str) -> dict:
    """Staged tables whose every row names ``label``, and its manifest."""
    for table in TABLES:
        (directory / table).mkdir(parents=True)
        pq.write_table(pa.table({"run": [label, label]}), directory / table / "part-00000-of-00001.parquet")
    return {"run_id": label}


def _view(output: Path) -> set[str]:
    """Every run label a reader sees through DIR/<table> and DIR/manifest.json."""
    seen = {json.loads((output / "manifest.json").read_text())["run_id"]}
    for table in TABLES:
        seen.update(pq.read_table(output / table).column("run").to_pylist())
    return seen


def _publish_and_die(output: str, staged: str, label: str, after: int) -> None:
    """Publishes, and SIGKILLs itself at the ``after``-th filesystem step."""
    steps = {"n": 0}
    real = {name: getattr(os, name) for name in ("replace", "symlink", "makedirs", "rmdir", "remove")}

    def step(name):
        def wrapped(*args, **kwargs):
            steps["n"] += 1
            if steps["n"] == after:
                os.kill(os.getpid(), signal.SIGKILL)
            return real[name](*args, **kwargs)
        return wrapped

    for name in real:
        setattr(os, name, step(name))
    out.publish(output, staged, label, {"run_id": label})
    os._exit(0)


def test_a_publication_killed_at_any_step_leaves_the_old_output_or_the_new(tmp_path):
    ctx = multiprocessing.get_context("fork")
    step = 1
    while True:
        output = tmp_path / f"out{step}"
        output.mkdir()
        _fake_version(tmp_path / f"old{step}", "old")
        out.publish(str(output), str(tmp_path / f"old{step}"), "old", {"run_id": "old"})
        assert _view(output) == {"old"}
        staged = tmp_path / f"new{step}"
        _fake_version(staged, "new")
        child = ctx.Process(target=_publish_and_die, args=(str(output), str(staged), "new", step))
        child.start()
        child.join()
        killed = child.exitcode == -signal.SIGKILL
        view = _view(output)
        assert view in ({"old"}, {"new"}), (step, view)
        # Published again (what the rerun does): the new output, whole.
        out.publish(str(output), str(staged), "new", {"run_id": "new"})
        assert _view(output) == {"new"}
        assert [p.name for p in (output / out.VERSIONS).iterdir()] == ["new"]
        assert sorted(p.name for p in output.iterdir()) == [".current", ".versions", *sorted([*TABLES, "manifest.json"])]
        if not killed:
            break  # the publication finished before the step: every step has been tried
        step += 1
    assert step > 5  # moves, the manifest, the links and the swap were each interrupted


def test_an_output_written_before_versions_is_replaced_cleanly(tmp_path):
    output = tmp_path / "out"
    _fake_version(output, "legacy")
    (output / "manifest.json").write_text(json.dumps({"run_id": "legacy"}))
    assert _view(output) == {"legacy"}
    staged = tmp_path / "staged"
    _fake_version(staged, "new")
    out.publish(str(output), str(staged), "new", {"run_id": "new"})
    assert _view(output) == {"new"}
    assert [p.name for p in (output / out.VERSIONS).iterdir()] == ["new"]


# -- the same WARC under two names, and --limit --------------------------------------


@pytest.fixture(scope="module")
def single_run(demo_run):
    """The session's run of the demo WARC (tests/conftest.py)."""
    return outcome(demo_run.output)


def test_the_same_warc_under_two_names_keeps_one_copy_of_each_page(single_run, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copy(DEMO, inputs / "CC-MAIN-a.warc.gz")
    shutil.copy(DEMO, inputs / "CC-MAIN-a (1).warc.gz")  # downloaded twice
    output = tmp_path / "out"
    assert main(["run", str(inputs / "*.warc.gz"), "-o", str(output), "--runner-preset", "direct", "--quiet"]) == 0
    kept, rows, manifest = outcome(output)
    want_kept, want_rows, want = single_run
    assert kept == want_kept and len(kept) > 0  # every kept page once, none lost
    assert manifest["totals"]["pages"] == 2 * want["totals"]["pages"] and manifest["totals"]["conserved"]
    copies = [r for r in rows if r["stage"] == "dedup" and r["doc_id"] in set(kept)]
    assert len(copies) == len(kept)  # the other copy of each, as a duplicate of it
    assert {r["reason"] for r in copies} <= {reasons.DEDUP_SAME_URL, reasons.DEDUP_EXACT_TEXT}
    assert all(r["detail"] == f"survivor={r['doc_id']}" for r in copies)
    # Ties between copies of one record go to the smaller (file, offset): the other file loses.
    assert {r["warc_file"] for r in copies} == {str(inputs / "CC-MAIN-a.warc.gz")}


def test_limit_reads_only_the_first_pages(single_run, tmp_path):
    output = tmp_path / "out"
    assert main(["run", str(DEMO), "-o", str(output), "--runner-preset", "direct", "--quiet", "--limit", "5"]) == 0
    kept, rows, manifest = outcome(output)
    assert manifest["totals"]["pages"] == 5 and manifest["totals"]["conserved"]
    assert manifest["config"]["read"]["limit"] == 5
    offsets = sorted(r["warc_offset"] for r in pq.read_table(output / "documents").to_pylist() + rows)
    first_five = sorted(r["warc_offset"] for r in
                        pq.read_table(Path(single_run[2]["output"]) / "documents").to_pylist() + single_run[1])[:5]
    assert offsets == first_five
