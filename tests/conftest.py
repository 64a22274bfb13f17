"""Session-wide fixtures: whole-pipeline runs shared by every test that reads them.

A run of the whole pipeline costs seconds of Beam start-up whatever its input, so
each distinct run (input, runner, config) happens once per test session and many
tests read its output (tests/shared_runs.py):

- ``demo_run``: the demo WARC, default config, DirectRunner in one process
  (``--runner-preset direct --quiet``): the baseline other runners, reruns, range
  reads and the report are compared with.
- ``small_run``: a five-page WARC (``small_warc``, tests/small_corpus.py) through
  stage heuristics only (one phase): the baseline of the quick runner checks
  (Portable, Dask, local multi-process) that ``make test`` keeps while their runs
  of the demo WARC are ``slow``.

Both outputs are READ ONLY: a test that writes into a run (a report, a rerun into
the same directory) works on ``copy_run(run.output, tmp_path / "x")``. The session
fails at teardown if a shared output was changed.

Under pytest-xdist (``make test`` runs three workers), the first worker to need a run
makes it and the others wait for it and read the same output (a file lock in the
session's base temporary directory).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from pathlib import Path
from typing import Callable

import pytest

from shared_runs import DEMO, SMALL_STAGES, FinishedRun, run_direct, snapshot
from small_corpus import write_small_warc


@contextlib.contextmanager
def _read_only(run: FinishedRun):
    before = snapshot(run.output)
    yield run
    changed = sorted(set(before.items()) ^ set(snapshot(run.output).items()))
    assert not changed, f"a test wrote into the shared run {run.output}: {changed[:5]} (use copy_run)"


def _session_dir(tmp_path_factory, worker_id: str) -> Path:
    """A directory of this test session that every xdist worker shares."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if worker_id != "master" else base


def _once(directory: Path, make: Callable[[Path], FinishedRun]) -> FinishedRun:
    """``make(directory)`` by the first worker that asks; the same run for the others."""
    directory.mkdir(parents=True, exist_ok=True)
    done = directory / "run.json"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            run = make(directory)
            saved = {"inputs": list(map(str, run.inputs)), "output": str(run.output), "stdout": run.stdout, "stderr": run.stderr}
            done.write_text(json.dumps(saved))
        saved = json.loads(done.read_text())
    return FinishedRun(tuple(map(Path, saved["inputs"])), Path(saved["output"]), saved["stdout"], saved["stderr"])


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory, worker_id) -> FinishedRun:
    """The demo WARC through the default stages on DirectRunner, once per session."""
    directory = _session_dir(tmp_path_factory, worker_id) / "demo-run"
    with _read_only(_once(directory, lambda d: run_direct([DEMO], d / "out"))) as run:
        yield run


@pytest.fixture(scope="session")
def small_warc(tmp_path_factory, worker_id) -> Path:
    directory = _session_dir(tmp_path_factory, worker_id) / "small-warc"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "small.warc.gz"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            write_small_warc(directory / "writing.warc.gz")
            (directory / "writing.warc.gz").rename(path)
    return path


@pytest.fixture(scope="session")
def small_run(small_warc, tmp_path_factory, worker_id) -> FinishedRun:
    """``small_warc`` through stage heuristics on DirectRunner, once per session."""
    directory = _session_dir(tmp_path_factory, worker_id) / "small-run"
    with _read_only(_once(directory, lambda d: run_direct([small_warc], d / "out", "--stages", SMALL_STAGES))) as run:
        yield run


@pytest.fixture(scope="session")
def worker_id(request) -> str:
    """The xdist worker ("gw0", ...), or "master" without xdist (xdist's own
    fixture when the plugin is active)."""
    return getattr(request.config, "workerinput", {}).get("workerid", "master")


@pytest.fixture
def prism_calls(monkeypatch):
    """Every pipeline offered to Beam's PrismRunner in this process; the offer fails
    at once (as it does without network), so a run that makes one still finishes."""
    from apache_beam.runners.portability import prism_runner

    calls = []

    def run_pipeline(self, pipeline, options):
        calls.append(options)
        raise RuntimeError("the PrismRunner was asked to run a pipeline")

    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline", run_pipeline)
    return calls
