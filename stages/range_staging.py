"""The first phase's staging, written per input range, so a killed run resumes from
the ranges it finished (``pipeline/phases.py``).

``ReadWarc`` cuts each WARC into ranges of whole records (``stages/read.py``) and
reads each with ``ReadChunkFn``. In the first phase of ``mmcurate run``,
``ReadStagedRangeFn`` reads them instead: it skips the ranges an earlier run
finished (their markers, listed when the pipeline is built), and around each range
it reads opens a ``RangeFiles`` (``engines/staging_files.py``) that the stagers
downstream (``StageRecordsFn``, one on each output the phase stages) write into.
A file read whole (``read.reshuffle: false``, or ``ReadStagedFilesInOrderFn`` under
``read.limit``) is the range ``(path, 0, -1)``; a batch of CC-index pointers
(``ReadStagedBatchFn``) is the range of bytes they span. What is staged is the next
phase's staging tables, or, when the first phase is the run's last, the rows of the
output tables (``pipeline/range_outputs.py`` wires both).
Steps between a ParDo and the next one without a shuffle between them are fused
by every Beam runner that runs Python in its SDK harness (Direct, Portable, Flink,
Dataflow): the records a range's pages become are staged by the same thread,
while the range is being read. When reading ends, the range's files are renamed
into place and its marker is written, with the range's counters (every
``StageCounters`` increment made while it was read: ``results.tallied``).

The marker is written only when the range is provably whole: every page the range
read ended as a staged document or page decision row *of that range* (by
provenance), every captured image it read was staged, and nothing of another range
was staged meanwhile. A record that reaches a stager outside its range's reading
(a runner that does not fuse these steps, such as the Dask runner, or a stage that
holds records back) is staged by Beam's Parquet sink instead (``loose``), and its
range is made not resumable before the record goes on (``_Ledger.spill``): a range
still being read gets no marker, and the marker of a range this process already
finished is removed. A rerun reads such a range again (and removes what the killed
run left of it), so nothing is lost or counted twice. What this cannot see is a
record produced after its range's marker by a run killed before the record reached
a stager. No step of the first phase produces one: a step emits an image's decision
row in the same call as the document it took the image from, so the row is on its
way before that page's document (which the marker waits for) can be staged.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any, Callable, Iterator, Mapping, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from mmcurate.schemas import SUBJECT_PAGE, Decision
from mmcurate.stages.config import ReadConfig
from mmcurate.stages.engines.staging_files import RangeFiles, TableFormat, in_range, range_id, remove_marker, to_row
from mmcurate.stages.engines.warc.index_pointers import PointerBatch
from mmcurate.stages.read import IMAGES, ReadChunkFn, ReadFilesInOrderFn
from mmcurate.stages.read_index import ReadBatchFn
from mmcurate.stages.results import ERRORS, REJECTED, tallied

# Tables and what a page ends as in them: a staged document (``docs``, or the output
# table ``documents`` when the phase is the run's last) or a decision row.
DOCS = "docs"
DOCUMENTS = "documents"
DECISIONS = "decisions"
CAPTURED = "captured"

# Counter of the ranges read by this run (namespace "staging"); pipeline/phases.py takes
# it out of the funnel's counters and reports it per phase.
NAMESPACE = "staging"
RANGES_READ = "ranges_read"

_CURRENT = threading.local()


class _Reading:
    """The range being read on this thread, and what its pages became so far."""

    def __init__(self, files: RangeFiles, needs_captured: bool):
        self.files = files
        self.needs_captured = needs_captured
        self.pages_read = 0
        self.captured_read = 0
        self.pages_staged = 0
        self.foreign = False  # a record of another range reached a stager during it
        self.spilled = False  # a record of it went past its files (``_Ledger.spill``)

    def complete(self) -> bool:
        captured = self.captured_read if self.needs_captured else 0
        return (
            not self.foreign
            and not self.spilled
            and self.pages_staged == self.pages_read
            and self.files.rows(CAPTURED) == captured
        )


class _Mark:
    """A range this process marked finished; ``written`` is set once ``finish`` is over
    (its marker written, or not after all)."""

    __slots__ = ("chunk", "written")

    def __init__(self, chunk: tuple[str, int, int]):
        self.chunk = chunk
        self.written = threading.Event()


class _Ledger:
    """The ranges this process is reading and those it marked finished, per phase
    directory, so that a record staged outside its range's files makes that range
    not resumable (``spill``), whichever thread reads or read it. The lock guards the
    bookkeeping only: a range's files are finished, and a marker removed, outside it,
    so one range's (remote) writes never hold up the other threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._reading: dict[str, list[_Reading]] = {}
        self._marked: dict[str, dict[str, list[_Mark]]] = {}  # phase dir -> file -> marked ranges

    def begin(self, reading: _Reading) -> None:
        with self._lock:
            self._reading.setdefault(reading.files.phase_dir, []).append(reading)

    def drop(self, reading: _Reading) -> None:
        """``reading`` failed: it is no longer read, and gets no marker."""
        with self._lock:
            self._reading[reading.files.phase_dir].remove(reading)

    def end(self, reading: _Reading, finish: Callable[[bool], None]) -> None:
        """``reading`` is over: ``finish(complete)`` finishes its files (with a marker
        when complete). A complete range is recorded as marked before its marker is
        written, so a record spilled meanwhile finds it (``spill`` waits for the
        marker, then removes it)."""
        files = reading.files
        mark = None
        with self._lock:
            self._reading[files.phase_dir].remove(reading)
            complete = reading.complete()
            if complete:
                mark = _Mark((files.path, files.start, files.end))
                self._marked.setdefault(files.phase_dir, {}).setdefault(files.path, []).append(mark)
        try:
            finish(complete)
        except BaseException:
            if mark is not None:
                with self._lock:
                    marks = self._marked[files.phase_dir][files.path]
                    if mark in marks:
                        marks.remove(mark)
            raise
        finally:
            if mark is not None:
                mark.written.set()

    def spill(self, phase_dir: str, warc_file: str, offset: int) -> None:
        """A record at ``offset`` of ``warc_file`` goes past its range's files: that
        range, being read, gets no marker; marked, its marker is removed (once written)
        before this returns, so the record never reaches the loose sink while its
        range's marker stands."""
        with self._lock:
            for reading in self._reading.get(phase_dir, ()):
                if reading.files.owns(warc_file, offset):
                    reading.spilled = True
            marks = self._marked.get(phase_dir, {}).get(warc_file)
            doomed = [m for m in marks or () if in_range(m.chunk, warc_file, offset)]
            for mark in doomed:
                marks.remove(mark)
        for mark in doomed:
            mark.written.wait()
            remove_marker(FileSystems, phase_dir, range_id(*mark.chunk))


_LEDGER = _Ledger()


@dataclasses.dataclass(frozen=True)
class RangeStaging:
    """Where and how a phase stages per input range: ``tables`` (table -> directory)
    under ``phase_dir``, ``formats`` (how a table other than a staging table is
    written), the ranges an earlier run finished (``done``: range id -> the pages its
    marker counted) and whether captured images are staged."""

    phase_dir: str
    tables: Mapping[str, str]
    done: Mapping[str, int]
    needs_captured: bool
    formats: Mapping[str, TableFormat] = dataclasses.field(default_factory=dict)

    def staged(self, chunk: tuple[str, int, int], outputs: Iterator, ranges_read, facts=None) -> Iterator:
        """``outputs`` (what reading ``chunk`` yields), passed on while the stagers
        downstream write into the range's files; then the files are finished, with a
        marker when the range is whole (holding ``facts`` too)."""
        files = RangeFiles(FileSystems, self.phase_dir, self.tables, chunk, self.formats)
        reading = _Reading(files, self.needs_captured)
        tally: dict[tuple[str, str], int] = {}
        outer = getattr(_CURRENT, "reading", None)
        _CURRENT.reading = reading
        _LEDGER.begin(reading)
        try:
            with tallied(tally):
                for output in outputs:
                    tag = getattr(output, "tag", None)
                    if tag == IMAGES:
                        reading.captured_read += 1
                    elif tag in (None, REJECTED, ERRORS):
                        reading.pages_read += 1
                    yield output
        except BaseException:
            _LEDGER.drop(reading)
            files.abandon()
            raise
        finally:
            _CURRENT.reading = outer
        facts = {**(facts or {}), "pages": reading.pages_read, "captured": reading.captured_read}
        _LEDGER.end(reading, lambda complete: files.finish(complete, tally, facts))
        ranges_read.inc()


class _StagedReading:
    """What the staged readers share: the ``RangeStaging``, the counter of ranges
    read, and ``_staged``. Goes before the reader it stages in the bases."""

    def __init__(self, config: ReadConfig, staging: RangeStaging):
        super().__init__(config)
        self._staging = staging
        self._ranges_read = None

    def setup(self) -> None:
        super().setup()
        self._ranges_read = Metrics.counter(NAMESPACE, RANGES_READ)

    def _staged(self, chunk: tuple[str, int, int], reading: Iterator, facts=None) -> Iterator:
        """What ``reading`` (of ``chunk``) yields, staged; nothing for a range staged by
        an earlier run: its marker holds its files and counters."""
        if range_id(*chunk) in self._staging.done:
            return iter(())
        return self._staging.staged(chunk, reading, self._ranges_read, facts)


class ReadStagedRangeFn(_StagedReading, ReadChunkFn):
    """``ReadChunkFn`` that stages each range it reads (``staging``) and skips the
    ranges an earlier run finished. A file read whole (``read.reshuffle: false``) is
    the range ``(path, 0, -1)``."""

    def process(self, chunk: tuple[str, int, int]) -> Iterator:
        chunk = (chunk[0], int(chunk[1]), int(chunk[2]))
        return self._staged(chunk, super().process(chunk))


class ReadStagedFilesInOrderFn(_StagedReading, ReadFilesInOrderFn):
    """``ReadFilesInOrderFn`` (``read.limit``: the first N pages, files in path order)
    that stages each file it reads as the range ``(path, 0, -1)``. A file an earlier
    run finished is skipped and its pages (its marker's, up to the limit: the same
    pages, since files are always taken in the same order) count towards the limit,
    so the rerun reads the same first N pages."""

    def _read_in_turn(self, path: str) -> Iterator:
        chunk = (path, 0, -1)
        self._remaining -= self._staging.done.get(range_id(*chunk), 0)
        return self._staged(chunk, super()._read_in_turn(path))


class ReadStagedBatchFn(_StagedReading, ReadBatchFn):
    """``ReadBatchFn`` (``--index``: the pointers into one file, in a batch) that stages
    each batch it reads as the range of bytes its pointers span, and skips the
    batches an earlier run finished; the marker also holds the bytes the pointers
    name (``bytes``: the live progress's measure of an index run)."""

    def process(self, batch: PointerBatch) -> Iterator:
        batch = PointerBatch(*batch)
        return self._staged((batch.path, batch.start, batch.end), super().process(batch), {"bytes": batch.bytes})


class StageRecordsFn(beam.DoFn):
    """Stages each record into the files of the range being read (a phase's, under
    ``phase_dir``), when it belongs to it; any other record goes on (the ``loose``
    output, for Beam's sink), its own range made not resumable first (``_Ledger``).
    ``prepare`` turns a record into what is staged (decision rows drop the rejected
    document they carry unless recycling needs it); ``row`` makes the file's row of
    it (``staged_row``: a staging table's row, the record's key and the pickled
    record; or an output table's row, for the tables of a run's last phase)."""

    def __init__(
        self,
        phase_dir: str,
        table: str,
        row: Callable[[Any], dict],
        prepare: Optional[Callable[[Any], Any]] = None,
    ):
        self._phase_dir = phase_dir
        self._table = table
        self._row = row
        self._prepare = prepare

    def process(self, record: Any) -> Iterator:
        if self._prepare is not None:
            record = self._prepare(record)
        reading: Optional[_Reading] = getattr(_CURRENT, "reading", None)
        prov = record.provenance
        if reading is not None and reading.files.owns(prov.warc_file, prov.offset):
            reading.files.add(self._table, self._row(record))
            if self._table in (DOCS, DOCUMENTS) or (self._table == DECISIONS and record.subject == SUBJECT_PAGE):
                reading.pages_staged += 1
            return
        if reading is not None:
            reading.foreign = True
        _LEDGER.spill(self._phase_dir, prov.warc_file, prov.offset)
        yield record


def staged_row(key: Callable[[Any], str]) -> Callable[[Any], dict]:
    """A staging table's row of a record: ``key(record)`` and the pickled record."""
    return functools.partial(to_row, key=key)


def without_document(decision: Decision) -> Decision:
    return decision if decision.document is None else dataclasses.replace(decision, document=None)
