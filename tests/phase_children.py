"""What tests/pipeline/test_phase_process.py runs in a child process: module-level
functions (a spawned child imports them by name) and a launcher to kill."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

from mmcurate.pipeline.phase_process import ask, call_in_child
from mmcurate.pipeline.phases import RunError

log = logging.getLogger("mmcurate.tests.child")


def logs_and_returns(value):
    log.debug("not shown: below the launcher's level")
    log.info("child says %s", value)
    log.warning("child warns")
    return value, os.getpid(), os.environ.get("MMCURATE_TEST_ENV")


def fails(message: str):
    raise RunError(message)


class NeedsTwo(Exception):
    def __init__(self, first, second):
        super().__init__(f"{first}/{second}")


def fails_unpicklably():
    raise NeedsTwo("a", "b")


def dies(after: str = "") -> None:
    """Exits with 3 at once, without Python's clean-up; with ``after``, once that
    file holds a pid (another child has started and written it)."""
    deadline = time.monotonic() + 120
    while after and not (Path(after).exists() and Path(after).read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    os._exit(3)


def waits(marker: str):
    """Writes its pid to ``marker``, then waits; on KeyboardInterrupt writes that too."""
    try:  # an interrupt that comes as soon as the pid is written is noted too
        Path(marker).write_text(str(os.getpid()))
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        Path(marker + ".interrupted").write_text("yes")
        raise


def takes_until_none(tag: str) -> list:
    """Asks the launcher for items (``ask(tag)``) until it answers None: those it got."""
    got = []
    while (item := ask(tag)) is not None:
        got.append(item)
    return got


def takes_one_then_fails(tag: str):
    raise RunError(f"failed after taking {ask(tag)!r}")


def launch(marker: str) -> None:
    """A launcher: runs ``waits`` in a child; notes a KeyboardInterrupt once the child is gone."""
    # Python's own Ctrl-C handling, even when started by a process that ignores SIGINT
    # (pytest-xdist's workers do, and an ignored signal stays ignored in a child).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        call_in_child(waits, marker)
    except KeyboardInterrupt:
        Path(marker + ".launcher").write_text("interrupted")
        sys.exit(0)


if __name__ == "__main__":
    launch(sys.argv[1])
