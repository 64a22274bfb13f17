"""Live progress of a local run: per stage, documents in and kept; input read.

Beam's DirectRunner gives no metrics until a run ends, so local runs report
progress over a side channel. ``mmcurate run`` opens a UDP socket on 127.0.0.1 and
names it in the environment variable ``MMCURATE_PROGRESS`` (``host:port/run_id``);
worker processes of local runners inherit it (in-process workers, DirectRunner's
worker subprocesses, PortableRunner's LOOPBACK workers). ``pipeline.build`` passes
each stage's outputs through ``CountFn``, which tallies them in the worker
process; the process's running totals are sent every half second and at the end
of each bundle. Where the variable is unset (remote workers on Flink, Dataflow,
Dask) counting does nothing: those runs rely on the runner's UI. Progress never
affects what a run produces.

A stage's figures are those of the funnel table (``pipeline.manifest``): kept,
and its page decisions by their ``stage``, so in = kept + rejected + errors.

A resumed run counts what it takes from staging too (``ProgressMonitor.resumed``):
the counters and input bytes of the phases and input ranges an earlier run
finished, so its share of the input reaches 100% as an uninterrupted run's does;
its rate and ETA are this run's own (pages and bytes read since it started).
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Mapping, Optional, TextIO

import apache_beam as beam

from mmcurate.pipeline.config import STAGE_NAMES
from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE
from mmcurate.stages.results import COUNTER_KEPT, counters_by_namespace, outcome_counts

ENV = "MMCURATE_PROGRESS"
_SEND_EVERY = 0.5
# Between two records a reader emitted from one file, a gap shorter than this is
# records it read and skipped (requests, metadata, other payloads): counted as read.
# Well under stages.read.MIN_CHUNK_BYTES (the smallest range a file is cut into), so
# two ranges read apart are never joined; over the few kB of the request and metadata
# records between two responses of a crawl.
SKIPPED_GAP = 32 * 1024


class _Span:
    """Bytes of the input files read in this process: the byte ranges its records
    cover, joined across gaps under ``gap``."""

    def __init__(self):
        self.files: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
        self.total = 0

    def add(self, path: str, start: int, end: int, gap: int) -> None:
        starts, ends = self.files.setdefault((path, gap), ([], []))
        lo = hi = bisect.bisect_left(starts, start)
        if lo > 0 and ends[lo - 1] + gap >= start:
            lo -= 1
        while hi < len(starts) and starts[hi] <= end + gap:
            hi += 1
        if lo < hi:
            self.total -= sum(ends[lo:hi]) - sum(starts[lo:hi])
            start, end = min(start, starts[lo]), max(end, *ends[lo:hi])
        starts[lo:hi], ends[lo:hi] = [start], [end]
        self.total += end - start


class _Reporter:
    """One per worker process and run: running totals, sent by a daemon thread."""

    def __init__(self, target: str):
        self.target = target
        address, _, self.run_id = target.partition("/")
        host, _, port = address.rpartition(":")
        self.address = (host, int(port))
        self.sender = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.counts: Counter[str] = Counter()
        self.span = _Span()
        self.changed = False
        self.lock = threading.Lock()
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        threading.Thread(target=self._loop, name="mmcurate-progress", daemon=True).start()

    def count(self, key: str) -> None:
        with self.lock:
            self.counts[key] += 1
            self.changed = True

    def read(self, provenance, gap: int) -> None:
        length = max(provenance.length, 0)
        with self.lock:
            self.span.add(provenance.warc_file, provenance.offset, provenance.offset + length, gap)
            self.changed = True

    def send(self) -> None:
        with self.lock:
            if not self.changed:
                return
            self.changed = False
            message = {"run": self.run_id, "sender": self.sender, "counts": dict(self.counts), "bytes": self.span.total}
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


class CountFn(beam.DoFn):
    """A pass-through that counts a stage's output for the live progress line:
    ``stage``'s kept documents, or (``stage`` None) decision rows of pages, under
    the stage each names. With ``read_gap`` (>= 0) each element's provenance also
    counts the input bytes read (``SKIPPED_GAP``; 0 for a reader of single
    records, e.g. by index)."""

    def __init__(self, stage: Optional[str] = None, read_gap: int = -1):
        self._stage = stage
        self._read_gap = read_gap

    def process(self, element):
        reporter = _current()
        if reporter is not None:
            if self._stage is not None:
                reporter.count(f"{self._stage}.kept")
            elif getattr(element, "subject", None) == SUBJECT_PAGE:
                kind = "rejected" if element.kind == KIND_REJECTED else "errors"
                reporter.count(f"{element.stage}.{kind}")
            if self._read_gap >= 0:
                reporter.read(element.provenance, self._read_gap)
        yield element

    def finish_bundle(self):
        reporter = _current()
        if reporter is not None:
            reporter.send()  # the last totals reach the launcher before the run ends


def count(pcoll: beam.PCollection, label: str, stage: Optional[str] = None, read_gap: int = -1) -> beam.PCollection:
    """``pcoll`` passed through ``CountFn``."""
    return pcoll | label >> beam.ParDo(CountFn(stage, read_gap))


def counts_from_counters(counters: Mapping[tuple[str, str], int]) -> dict[str, int]:
    """The progress counts of Beam counters ((stage, name) -> value): each stage's
    kept, rejected and errors, as the manifest's funnel reads them (a count only
    where the stage counted one of its kind)."""
    counts: dict[str, int] = {}
    for stage, names in counters_by_namespace(counters).items():
        if stage not in STAGE_NAMES:
            continue
        rejected, errors = outcome_counts(names)
        if COUNTER_KEPT in names:
            counts[f"{stage}.kept"] = names[COUNTER_KEPT]
        if rejected:
            counts[f"{stage}.rejected"] = sum(rejected.values())
        if errors:
            counts[f"{stage}.errors"] = sum(errors.values())
    return counts


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def stage_figures(counts: dict[str, int]) -> dict[str, tuple[int, int]]:
    """(in, kept) per stage that has counted anything, in funnel order."""
    figures = {}
    for stage in STAGE_NAMES:
        kept, rejected, errors = (counts.get(f"{stage}.{kind}", 0) for kind in ("kept", "rejected", "errors"))
        if f"{stage}.kept" in counts or rejected or errors:
            figures[stage] = (kept + rejected + errors, kept)
    return figures


class ProgressMonitor:
    """The launcher's side: receives worker totals and prints a progress line.

    Use as a context manager around a run; it sets and restores ``MMCURATE_PROGRESS``.
    Nothing is printed until a worker has reported (remote workers never do); the
    last line, printed as the run ends, holds each stage's final figures.
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
        self.arrow = "→" if _can_write(self.out, "→") else "->"
        self.latest: dict[str, dict] = {}
        # What an earlier run finished, taken from staging: counts and input bytes.
        self.baseline: Counter[str] = Counter()
        self.baseline_bytes = 0
        self.lines = 0
        self.printed = ""
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

    def resumed(self, counts: Mapping[str, int], read_bytes: int) -> None:
        """Adds what the run takes from staging (an earlier run's finished phases or
        input ranges): progress counts (``counts_from_counters``) and input bytes."""
        self.baseline.update(counts)
        self.baseline_bytes += read_bytes

    def totals(self, live: bool = False) -> tuple[dict[str, int], int]:
        """Every worker's counts summed, and the input bytes read, with what was taken
        from staging (not with ``live``: this run's own reading only)."""
        counts: Counter[str] = Counter() if live else Counter(self.baseline)
        for message in list(self.latest.values()):
            counts.update(message.get("counts", {}))
        read_bytes = sum(int(m.get("bytes", 0)) for m in list(self.latest.values()))
        return dict(counts), read_bytes + (0 if live else self.baseline_bytes)

    def line(self) -> str:
        counts, read_bytes = self.totals()
        live_counts, live_bytes = self.totals(live=True)
        figures = stage_figures(counts)
        elapsed = max(time.monotonic() - self._started, 1e-6)
        pages = figures.get("read", (0, 0))[0]
        text = f"read {pages:,} pages"
        if self.total_bytes > 0:
            done = min(read_bytes / self.total_bytes, 1.0)
            left = max(self.total_bytes - read_bytes, 0)
            text += f" ({100 * done:.0f}% of {self.total_bytes / 1e6:,.1f} MB"
            eta = 0 < live_bytes and round(100 * done) < 100
            text += f", ETA {_duration(elapsed * left / live_bytes)})" if eta else ")"
        for stage, (n_in, kept) in figures.items():
            if stage != "read":
                text += f" | {stage} {kept:,}" if stage == "write" else f" | {stage} {n_in:,}{self.arrow}{kept:,}"
        live_pages = stage_figures(live_counts).get("read", (0, 0))[0]
        text += f" | {live_pages / elapsed:,.1f} pages/s, {_duration(elapsed)} elapsed"
        if self.tty:  # a line wider than the terminal would not redraw in place
            width = shutil.get_terminal_size().columns - 1
            text = text if len(text) <= width else text[: width - 3] + "..."
        return text

    def _receive(self) -> bool:
        try:
            data = self._socket.recv(65536)
        except (socket.timeout, OSError):
            return False
        try:
            message = json.loads(data)
        except ValueError:
            return True
        if isinstance(message, dict) and message.get("run") == self.run_id:
            self.latest[str(message.get("sender"))] = message
        return True

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            self._receive()
            now = time.monotonic()
            if (self.latest or self.baseline) and now - last >= (self.every if self.tty else self.LOG_FACTOR * self.every):
                last = now
                self._print(self.line())

    def _print(self, text: str) -> None:
        self.printed = text.rsplit(" | ", 1)[0]  # the figures, without rate and time
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
        if _reporter is not None and _reporter.target == self.target:
            _reporter.send()  # an in-process worker's last counts
        while self._receive():  # what the workers sent last
            pass
        self._socket.close()
        if self._previous_env is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self._previous_env
        final = self.line() if self.latest or self.baseline else ""
        if final and (self.tty or final.rsplit(" | ", 1)[0] != self.printed):
            self._print(final)
        if self.tty and self.lines:
            self.out.write("\n")
            self.out.flush()


def _can_write(out: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(out, "encoding", None) or "ascii")
    except (LookupError, UnicodeEncodeError):
        return False
    return True
