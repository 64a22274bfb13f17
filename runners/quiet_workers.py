"""Quiet start-up of DirectRunner worker processes (the ``local`` preset).

In ``multi_processing`` mode each worker is a ``python -m
apache_beam.runners.worker.sdk_worker_main`` child that writes to the stderr it
inherits, and forwards its log records to the runner, which logs them again: with a
worker per core, every start-up notice of Beam's appears twice per worker (the
bigquery client's "apitools not found", "Discarding unparseable args", "No
semi_persistent_directory found", "Logging handler created"). None of them says
anything about the run.

``QuietWorkerStartup`` points file descriptor 2 (this process's stderr, and so the
workers') at a pipe for the duration of the run; a thread copies everything to the
real stderr except lines carrying one of ``NOISE``, and counts what it dropped.
Lines are passed on as they complete; a partial line ending in a carriage return
(the live progress line) is passed on at once.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from typing import Optional, Sequence

# Start-up notices of Beam's SDK harness that say nothing about a run (Beam 2.77).
NOISE = (
    b"apitools not found, and bigquery client libraries are not available",
    b"No semi_persistent_directory found",
    b"Logging handler created.",
)
# The harness re-parses the pipeline options and cannot place these two DirectRunner
# flags; a notice that names any other flag is kept.
_UNPARSEABLE = re.compile(rb"Discarding unparseable args: \[([^\]]*)\]")
_RUNNER_ONLY_ARGS = {b"--direct_runner_use_stacked_bundle", b"--pipeline_type_check"}


def wanted(line: bytes) -> bool:
    if any(noise in line for noise in NOISE):
        return False
    match = _UNPARSEABLE.search(line)
    return not (match and set(re.findall(rb"--[\w-]+", match.group(1))) <= _RUNNER_ONLY_ARGS)


def uses_worker_processes(beam_args: Sequence[str]) -> bool:
    """Whether the Beam flags run DirectRunner workers as child processes."""
    for i, arg in enumerate(beam_args):
        if arg == "--direct_running_mode=multi_processing":
            return True
        if arg == "--direct_running_mode" and i + 1 < len(beam_args) and beam_args[i + 1] == "multi_processing":
            return True
    return False


class QuietWorkerStartup:
    """Filters Beam's worker start-up notices out of fd 2 while active."""

    def __init__(self) -> None:
        self.dropped = 0
        self._saved: Optional[int] = None
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "QuietWorkerStartup":
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        self._saved = os.dup(2)
        os.dup2(write_end, 2)
        os.close(write_end)
        self._thread = threading.Thread(target=self._copy, args=(read_end,), name="quiet-workers", daemon=True)
        self._thread.start()
        return self

    def _copy(self, read_end: int) -> None:
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                kept = [line + b"\n" for line in lines if wanted(line)]
                self.dropped += len(lines) - len(kept)
                out = b"".join(kept)
                if b"\r" in pending and wanted(pending):
                    out, pending = out + pending, b""
                if out:
                    os.write(self._saved, out)
        if pending and wanted(pending):
            os.write(self._saved, pending)

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        # Restoring fd 2 closes this process's write end of the pipe; the reader
        # ends once the workers (which the run has finished with) closed theirs.
        os.dup2(self._saved, 2)
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive():
                return  # a worker still holds the pipe: the thread keeps the saved fd
        os.close(self._saved)
