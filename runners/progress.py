"""Live progress of a local run: pages read, bytes read, documents kept.

Beam's DirectRunner gives no metrics until a run ends, so local runs report
progress over a side channel. ``mmcurate run`` opens a UDP socket on 127.0.0.1 and
names it in the environment variable ``MMCURATE_PROGRESS`` (``host:port/run_id``);
worker processes of local runners inherit it (in-process workers, DirectRunner's
worker subprocesses, PortableRunner's LOOPBACK workers). In each worker process
``add`` tallies what the read stage and the kept-document pass-through saw, and a
daemon thread sends the process's running totals every half second. Where the
variable is unset (remote workers on Flink, Dataflow, Dask) ``add`` does nothing:
those runs rely on the runner's UI. Progress never affects what a run produces.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from typing import Optional, TextIO

import apache_beam as beam

ENV = "MMCURATE_PROGRESS"
FIELDS = ("pages", "bytes", "kept")
_SEND_EVERY = 0.5


class _Reporter:
    """One per worker process and run: running totals, sent by a daemon thread."""

    def __init__(self, target: str):
        self.target = target
        address, _, self.run_id = target.partition("/")
        host, _, port = address.rpartition(":")
        self.address = (host, int(port))
        self.sender = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.totals = dict.fromkeys(FIELDS, 0)
        self.lock = threading.Lock()
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        threading.Thread(target=self._loop, name="mmcurate-progress", daemon=True).start()

    def add(self, counts: dict[str, int]) -> None:
        with self.lock:
            for key, n in counts.items():
                self.totals[key] += n

    def send(self) -> None:
        with self.lock:
            message = {"run": self.run_id, "sender": self.sender, **self.totals}
        try:
            self.socket.sendto(json.dumps(message).encode(), self.address)
        except OSError:
            pass  # the launcher is gone; progress is best effort

    def _loop(self) -> None:
        while True:
            time.sleep(_SEND_EVERY)
            if _reporter is not self:  # a later run's reporter took over
                return
            self.send()


_reporter: Optional[_Reporter] = None
_reporter_lock = threading.Lock()


def _current() -> Optional[_Reporter]:
    global _reporter
    target = os.environ.get(ENV)
    if not target:
        return None
    with _reporter_lock:
        if _reporter is None or _reporter.target != target:
            _reporter = _Reporter(target)
        return _reporter


def add(**counts: int) -> None:
    """Adds to this process's progress totals (``pages``, ``bytes``, ``kept``)."""
    reporter = _current()
    if reporter is not None:
        reporter.add(counts)


class CountKeptFn(beam.DoFn):
    """Pass-through that counts the documents reaching the write stage."""

    def process(self, element):
        add(kept=1)
        yield element


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class ProgressMonitor:
    """The launcher's side: receives worker totals and prints a progress line.

    Use as a context manager around a run; it sets and restores ``MMCURATE_PROGRESS``.
    Nothing is printed until a worker has reported (remote workers never do).
    """

    # Seconds between progress lines: on a terminal the line redraws in place; in
    # a log file or a pipe a new line is written LOG_FACTOR times less often.
    EVERY = 1.0
    LOG_FACTOR = 10

    def __init__(self, total_bytes: int, run_id: str, out: Optional[TextIO] = None, every: Optional[float] = None):
        self.total_bytes = total_bytes
        self.run_id = run_id
        self.out = out if out is not None else sys.stderr
        self.every = every if every is not None else self.EVERY
        self.tty = hasattr(self.out, "isatty") and self.out.isatty()
        self.latest: dict[str, dict[str, int]] = {}
        self.lines = 0
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mmcurate-progress-monitor", daemon=True)
        self._previous_env: Optional[str] = None
        self._started = 0.0

    @property
    def target(self) -> str:
        host, port = self._socket.getsockname()
        return f"{host}:{port}/{self.run_id}"

    def totals(self) -> dict[str, int]:
        summed = dict.fromkeys(FIELDS, 0)
        for sender in list(self.latest.values()):
            for key in FIELDS:
                summed[key] += sender.get(key, 0)
        return summed

    def line(self) -> str:
        t = self.totals()
        elapsed = max(time.monotonic() - self._started, 1e-6)
        text = f"read {t['pages']:,} pages, kept {t['kept']:,}, {t['pages'] / elapsed:,.1f} pages/s"
        if self.total_bytes > 0:
            done = min(t["bytes"] / self.total_bytes, 1.0)
            text += f", {100 * done:.0f}% of {self.total_bytes / 1e6:,.1f} MB"
            if 0 < done < 1:
                text += f", ETA {_duration(elapsed * (1 - done) / done)}"
        return text + f", {_duration(elapsed)} elapsed"

    def _receive(self) -> None:
        try:
            data = self._socket.recv(65536)
        except (socket.timeout, OSError):
            return
        try:
            message = json.loads(data)
        except ValueError:
            return
        if isinstance(message, dict) and message.get("run") == self.run_id:
            self.latest[str(message.get("sender"))] = message

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            self._receive()
            now = time.monotonic()
            if self.latest and now - last >= (self.every if self.tty else self.LOG_FACTOR * self.every):
                last = now
                self._print(self.line())

    def _print(self, text: str) -> None:
        self.lines += 1
        self.out.write(f"\r{text}\033[K" if self.tty else f"{text}\n")
        self.out.flush()

    def __enter__(self) -> "ProgressMonitor":
        self._previous_env = os.environ.get(ENV)
        os.environ[ENV] = self.target
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()
        if self._previous_env is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self._previous_env
        if self.tty and self.lines:
            self.out.write("\n")
            self.out.flush()
