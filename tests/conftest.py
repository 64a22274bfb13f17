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
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from shared_runs import DEMO, SMALL_STAGES, FinishedRun, run_direct, snapshot
from small_corpus import write_small_warc


@contextlib.contextmanager
def _read_only(run: FinishedRun):
    before = snapshot(run.output)
    yield run
    changed = sorted(set(before.items()) ^ set(snapshot(run.output).items()))
    assert not changed, f"a test wrote into the shared run {run.output}: {changed[:5]} (use copy_run)"


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> FinishedRun:
    """The demo WARC through the default stages on DirectRunner, once per session."""
    with _read_only(run_direct([DEMO], tmp_path_factory.mktemp("demo-run") / "out")) as run:
        yield run


@pytest.fixture(scope="session")
def small_warc(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("small-warc") / "small.warc.gz"
    write_small_warc(path)
    return path


@pytest.fixture(scope="session")
def small_run(small_warc, tmp_path_factory) -> FinishedRun:
    """``small_warc`` through stage heuristics on DirectRunner, once per session."""
    output = tmp_path_factory.mktemp("small-run") / "out"
    with _read_only(run_direct([small_warc], output, "--stages", SMALL_STAGES)) as run:
        yield run
