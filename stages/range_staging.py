"""The first phase's staging, written per input range, so a killed run resumes from
the ranges it finished (``pipeline/phases.py``).

``ReadWarc`` cuts each WARC into ranges of whole records (``stages/read.py``). In the
first phase of ``mmcurate run`` the ranges are read by a staged reader
(``ReadStagedRangeFn``, ``ReadStagedFilesInOrderFn`` under ``read.limit``,
``ReadStagedBatchFn`` for CC-index pointers), which skips the ranges an earlier run
finished (their markers, listed when the pipeline is built), stamps each record it
reads with its range (``Provenance.range``: every document and decision row made
from the record carries it on) and, once the range is read, writes the range's read
record (``reads/<range id>.json``: the pages and captured images it read and the
reader's own counters for it).

Each output the phase stages (its documents, each stage's decision rows, the
captured images) goes through its own ``StageRecordsFn``, which writes each record
into a file of that record's range: a run of records of one range in a file of its
own (``r-<range id>-<output>-<first record's offset and digest>.parquet``), written under a
temporary name and renamed into place when a record of another range comes or the
bundle ends, with the page rows and decision rows it holds in its footer. The names
are deterministic, so a retried bundle replaces its files rather than adding to them.
Nothing needs the steps to be fused: fused, a range's files are in place as soon as
the next range is read; not fused, at the end of each bundle.

A rerun (``finish_ranges``) finds a range finished when its read record is there and
its files in place hold exactly the pages (and captured images) it counted; it writes
that range's marker (``ranges/<range id>.json``, with the reader's counters and the
page funnel of the stages after it, rebuilt from the footers), and removes everything
else of the phase, to be read again. So the funnel of a resumed run counts the
finished ranges as an uninterrupted run would.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput

from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE, Decision, Document
from mmcurate.stages.config import ReadConfig
from mmcurate.stages.engines.staging_files import (
    TableWriter,
    marker_path,
    range_id,
    range_part,
    range_parts,
    read_record_path,
    read_records,
    stale_files,
    write_marker,
)
from mmcurate.stages.engines.warc.index_pointers import PointerBatch
from mmcurate.stages.read import IMAGES, ReadChunkFn, ReadFilesInOrderFn
from mmcurate.stages.read import STAGE as READ_STAGE
from mmcurate.stages.read_index import ReadBatchFn
from mmcurate.stages.results import COUNTER_KEPT, ERRORS, REJECTED, error_counter, rejected_counter

# The staging tables: a page ends as a staged document or a decision row.
DOCS = "docs"
DECISIONS = "decisions"
CAPTURED = "captured"

# Counter of the ranges read by this run (namespace "staging"); pipeline/phases.py takes
# it out of the funnel's counters and reports it per phase.
NAMESPACE = "staging"
RANGES_READ = "ranges_read"


@dataclasses.dataclass(frozen=True)
class RangeStaging:
    """Where and how a phase stages per input range: ``tables`` (table -> directory)
    under ``phase_dir``, the ranges an earlier run finished (``done``: range id -> the pages its
    marker counted) and whether captured images are staged."""

    phase_dir: str
    tables: Mapping[str, str]
    done: Mapping[str, int]
    needs_captured: bool


class _StagedReading:
    """What the staged readers share: the ranges an earlier run finished are skipped,
    each record read is stamped with its range, and each range read gets its read
    record. Goes before the reader it stages in the bases."""

    def __init__(self, config: ReadConfig, staging: RangeStaging):
        super().__init__(config)
        self._staging = staging
        self._ranges_read = None

    def setup(self) -> None:
        super().setup()
        self._ranges_read = Metrics.counter(NAMESPACE, RANGES_READ)

    def _staged(self, chunk: tuple[str, int, int], reading: Iterator, facts: Optional[dict] = None) -> Iterator:
        """What ``reading`` (of ``chunk``) yields, stamped with the range; nothing for
        a range an earlier run staged: its marker holds its files and counters."""
        if range_id(*chunk) in self._staging.done:
            return iter(())
        return self._stamped(chunk, iter(reading), facts or {})

    def _stamped(self, chunk: tuple[str, int, int], reading: Iterator, facts: dict) -> Iterator:
        stamp = chunk[1:]
        pages = captured = 0
        counters = self._counters
        tally: dict[tuple[str, str], int] = {}
        while True:
            # The reader's own increments only: what runs downstream of a yield is not counted here.
            counters.tally = tally
            try:
                output = next(reading)
            except StopIteration:
                break
            finally:
                counters.tally = None
            tag = getattr(output, "tag", None)
            record = output.value if tag is not None else output
            record = dataclasses.replace(record, provenance=dataclasses.replace(record.provenance, range=stamp))
            if tag == IMAGES:
                captured += 1
            elif tag in (None, REJECTED, ERRORS):
                pages += 1
            yield TaggedOutput(tag, record) if tag is not None else record
        self._ranges_read.inc()
        read = {**facts, "range": list(chunk), "pages": pages, "captured": captured,
                "counters": [[ns, name, value] for (ns, name), value in sorted(tally.items())]}
        write_marker(FileSystems, read_record_path(FileSystems, self._staging.phase_dir, range_id(*chunk)), read)


class ReadStagedRangeFn(_StagedReading, ReadChunkFn):
    """``ReadChunkFn`` that stamps each range it reads and skips the ranges an
    earlier run finished. A file read whole (``read.reshuffle: false``) is the range
    ``(path, 0, -1)``."""

    def process(self, chunk: tuple[str, int, int]) -> Iterator:
        chunk = (chunk[0], int(chunk[1]), int(chunk[2]))
        return self._staged(chunk, super().process(chunk))


class ReadStagedFilesInOrderFn(_StagedReading, ReadFilesInOrderFn):
    """``ReadFilesInOrderFn`` (``read.limit``: the first N pages, files in path order)
    that stamps each file it reads as the range ``(path, 0, -1)``. A file an earlier
    run finished is skipped and its pages (its marker's, up to the limit: the same
    pages, since files are always taken in the same order) count towards the limit,
    so the rerun reads the same first N pages."""

    def _read_in_turn(self, path: str) -> Iterator:
        chunk = (path, 0, -1)
        self._remaining -= self._staging.done.get(range_id(*chunk), 0)
        return self._staged(chunk, super()._read_in_turn(path))


class ReadStagedBatchFn(_StagedReading, ReadBatchFn):
    """``ReadBatchFn`` (``--index``: the pointers into one file, in a batch) that
    stamps each batch it reads as the range of bytes its pointers span, and skips
    the batches an earlier run finished; the marker also holds the bytes the pointers
    name (``bytes``: the live progress's measure of an index run)."""

    def process(self, batch: PointerBatch) -> Iterator:
        batch = PointerBatch(*batch)
        return self._staged((batch.path, batch.start, batch.end), super().process(batch), {"bytes": batch.bytes})


def range_counters(read: Mapping[str, Any], rows: Mapping[tuple, int], chain: Sequence[str]) -> dict[tuple[str, str], int]:
    """A finished range's counters: the reader's (``read``, its read record), then each
    stage's page rejections and errors (``rows``: (subject, stage, kind, reason) ->
    count) and what it kept (``chain``: the stages in funnel order)."""
    counters = {(ns, name): value for ns, name, value in read["counters"]}
    removed: dict[str, int] = {}
    for (subject, stage, kind, reason), n in rows.items():
        if subject != SUBJECT_PAGE:
            continue
        removed[stage] = removed.get(stage, 0) + n
        if stage == READ_STAGE:
            continue  # the reader counted its own
        name = rejected_counter(reason) if kind == KIND_REJECTED else error_counter(reason)
        counters[(stage, name)] = counters.get((stage, name), 0) + n
    kept = read["pages"]
    for stage in chain:
        kept -= removed.get(stage, 0)
        if kept:  # as Beam reports a counter never incremented: not at all
            counters[(stage, COUNTER_KEPT)] = kept
    return counters


class _RunOfRange:
    """The file a ``StageRecordsFn`` is filling: records of one range, in a row."""

    def __init__(self, rid: str, writer: TableWriter):
        self.rid = rid
        self.writer = writer
        self.pages = 0
        self.rows: dict[tuple[str, str, str, str], int] = {}


class StageRecordsFn(beam.DoFn):
    """Stages each record of one output (``table``, written as ``output``) into a file
    of its range (see the module docstring); a record no staged reader stamped goes
    on, for Beam's sink. ``row`` makes a record's staging row (its key and the pickled
    record); ``prepare`` turns a decision row into
    what is staged (without the rejected document it carries, unless recycling needs
    it)."""

    def __init__(
        self,
        staging: RangeStaging,
        table: str,
        output: str,
        row: Callable[[Any], dict],
        prepare: Optional[Callable[[Decision], Decision]] = None,
    ):
        self._staging = staging
        self._table = table
        self._output = output
        self._row = row
        self._prepare = prepare

    def start_bundle(self) -> None:
        self._run: Optional[_RunOfRange] = None

    def process(self, record: Any) -> Iterator:
        if self._prepare is not None:
            record = self._prepare(record)
        prov = record.provenance
        if not prov.range:
            yield record
            return
        rid = range_id(prov.warc_file, *prov.range)
        row = self._row(record)
        run = self._run
        if run is None or run.rid != rid:
            self._close()
            # Named by its first record (its offset and a digest of the record itself: two rows of
            # one page share the offset), so a retried bundle rewrites the same files.
            first = f"{prov.offset}-{hashlib.sha1(row['record']).hexdigest()[:8]}"
            final = range_part(FileSystems, self._staging.tables[self._table], rid, self._output, first)
            run = self._run = _RunOfRange(rid, TableWriter(FileSystems, final))
        run.writer.add(row)
        if isinstance(record, Decision):
            key = (record.subject, record.stage, record.kind, record.reason)
            run.rows[key] = run.rows.get(key, 0) + 1
            if record.subject == SUBJECT_PAGE:
                run.pages += 1
        elif isinstance(record, Document):
            run.pages += 1

    def _close(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            rows = [[*key, n] for key, n in sorted(run.rows.items())]
            run.writer.commit({"pages": run.pages, "rows": rows})

    def finish_bundle(self) -> None:
        self._close()

    def teardown(self) -> None:
        run = getattr(self, "_run", None)
        if run is not None:
            run.writer.abandon()


def whole_ranges(phase_dir: str, tables: Sequence[str], needs_captured: bool, chain: Sequence[str]):
    """The ranges of a first phase whose read record is there and whose files in place
    hold every page (and captured image) it counted: range id -> its marker (with
    ``range_counters``); and the read records and range parts found."""
    fs = FileSystems
    reads = read_records(fs, phase_dir)
    parts = range_parts(fs, phase_dir, tables)
    whole = {}
    for rid, read in reads.items():
        mine = parts.get(rid, [])
        pages = sum(p.pages for p in mine)
        captured = sum(p.num_rows for p in mine if p.table == CAPTURED)
        if pages != read["pages"] or (needs_captured and captured != read["captured"]):
            continue
        rows: dict[tuple, int] = {}
        for part in mine:
            for subject, stage, kind, reason, n in part.rows:
                key = (subject, stage, kind, reason)
                rows[key] = rows.get(key, 0) + n
        counters = range_counters(read, rows, chain)
        tables_rows = {t: sum(p.num_rows for p in mine if p.table == t) for t in sorted({p.table for p in mine})}
        whole[rid] = {**read, "counters": [[ns, name, v] for (ns, name), v in sorted(counters.items())], "tables": tables_rows}
    return whole, reads, parts


def finish_ranges(phase_dir: str, tables: Sequence[str], needs_captured: bool, chain: Sequence[str]) -> dict[str, dict]:
    """What a killed run left of a first phase: the ranges it finished
    (``whole_ranges``) get their markers, and every other file of its tables and every
    other read record is removed, to be read again. Returns the markers: range id ->
    marker."""
    fs = FileSystems
    finished, reads, parts = whole_ranges(phase_dir, tables, needs_captured, chain)
    for rid, marker in finished.items():
        write_marker(fs, marker_path(fs, phase_dir, rid), marker)
    stale = [p.path for rid, ps in parts.items() if rid not in finished for p in ps]
    stale += stale_files(fs, phase_dir, tables, finished)
    stale += [read_record_path(fs, phase_dir, rid) for rid in reads if rid not in finished]
    stale = sorted(set(stale))
    if stale:
        fs.delete(stale)
    return finished


def without_document(decision: Decision) -> Decision:
    return decision if decision.document is None else dataclasses.replace(decision, document=None)
