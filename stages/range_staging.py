"""The first phase's staging, written per input range, so a killed run resumes from
the ranges it finished (``pipeline/phases.py``).

``ReadWarc`` cuts each WARC into ranges of whole records (``stages/read.py``). In the
first phase of ``mmcurate run`` the ranges are read by a staged reader
(``ReadStagedRangeFn``, ``ReadStagedFilesInOrderFn`` under ``read.limit``,
``ReadStagedBatchFn`` for CC-index pointers), which skips the ranges an earlier run
finished (their markers, listed when the pipeline is built) and, on a tagged output
``ranges``, brackets each range it reads with two ``RangeEdge`` records: one before
its first record, and one after its last that says how many pages and captured images
it read, with the reader's own counters for the range.

Every record the phase keeps or decides (documents, decision rows, captured images)
and the edges meet in one step, ``StageRangesFn``, which writes each record into the
files of the range it came from (``engines/staging_files.RangeFiles``: temporary
names, renamed when done) while that range is open in its bundle. As soon as a closed
range has staged every page it read (each page ends as exactly one document or page
decision row) and every captured image, its files are renamed into place and its
marker is written, by this same step. Whatever is not in an open range (a runner that
splits the steps into other bundles, a stage that holds records back past its range's
bundle) goes on as it is, to Beam's sinks (the ``loose`` outputs); a range still open
when its bundle ends keeps its files, in place but without a marker, so a rerun reads
it again. Correctness needs no fusion of steps: fused, each range is staged whole and
marked as it ends; not fused, the records take Beam's sinks and nothing is marked.
A record that reaches this step after its range was marked (it cannot, when pages are
conserved) removes the marker before it goes on, so a marker never names a range
whose records are elsewhere.

A marker holds the range's counters: the reader's own (namespace ``read``) and the
page funnel of the stages after it, rebuilt from the rows staged (each stage's
rejections and errors by reason, and what each kept), so that a resumed run's
manifest counts the finished ranges as an uninterrupted run would.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput

from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE, CapturedImage, Decision, Document
from mmcurate.stages.config import ReadConfig
from mmcurate.stages.engines.staging_files import RangeFiles, TableFormat, in_range, range_id, remove_marker
from mmcurate.stages.engines.warc.index_pointers import PointerBatch
from mmcurate.stages.read import IMAGES, RANGES, ReadChunkFn, ReadFilesInOrderFn
from mmcurate.stages.read_index import ReadBatchFn
from mmcurate.stages.results import COUNTER_KEPT, ERRORS, REJECTED, error_counter, rejected_counter

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


@dataclasses.dataclass(frozen=True)
class RangeEdge:
    """The start (``closed`` False) or the end of one range's reading; the end says
    what the range read (``pages``, ``captured``), the reader's counters for it and
    other facts for its marker (``bytes`` of an index batch)."""

    chunk: tuple[str, int, int]
    closed: bool = False
    pages: int = 0
    captured: int = 0
    counters: tuple[tuple[str, str, int], ...] = ()
    facts: tuple[tuple[str, Any], ...] = ()


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


class _StagedReading:
    """What the staged readers share: the ranges an earlier run finished are skipped,
    and each range read is bracketed by its ``RangeEdge`` records. Goes before the
    reader it stages in the bases."""

    def __init__(self, config: ReadConfig, staging: RangeStaging):
        super().__init__(config)
        self._staging = staging
        self._ranges_read = None

    def setup(self) -> None:
        super().setup()
        self._ranges_read = Metrics.counter(NAMESPACE, RANGES_READ)

    def _staged(self, chunk: tuple[str, int, int], reading: Iterator, facts: Optional[dict] = None) -> Iterator:
        """What ``reading`` (of ``chunk``) yields, between the range's edges; nothing
        for a range an earlier run staged: its marker holds its files and counters."""
        if range_id(*chunk) in self._staging.done:
            return iter(())
        return self._bracketed(chunk, iter(reading), facts or {})

    def _bracketed(self, chunk: tuple[str, int, int], reading: Iterator, facts: dict) -> Iterator:
        yield TaggedOutput(RANGES, RangeEdge(chunk))
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
            if tag == IMAGES:
                captured += 1
            elif tag in (None, REJECTED, ERRORS):
                pages += 1
            yield output
        self._ranges_read.inc()
        read_counters = tuple((ns, name, value) for (ns, name), value in sorted(tally.items()))
        yield TaggedOutput(RANGES, RangeEdge(chunk, True, pages, captured, read_counters, tuple(sorted(facts.items()))))


class ReadStagedRangeFn(_StagedReading, ReadChunkFn):
    """``ReadChunkFn`` that brackets each range it reads and skips the ranges an
    earlier run finished. A file read whole (``read.reshuffle: false``) is the range
    ``(path, 0, -1)``."""

    def process(self, chunk: tuple[str, int, int]) -> Iterator:
        chunk = (chunk[0], int(chunk[1]), int(chunk[2]))
        return self._staged(chunk, super().process(chunk))


class ReadStagedFilesInOrderFn(_StagedReading, ReadFilesInOrderFn):
    """``ReadFilesInOrderFn`` (``read.limit``: the first N pages, files in path order)
    that brackets each file it reads as the range ``(path, 0, -1)``. A file an earlier
    run finished is skipped and its pages (its marker's, up to the limit: the same
    pages, since files are always taken in the same order) count towards the limit,
    so the rerun reads the same first N pages."""

    def _read_in_turn(self, path: str) -> Iterator:
        chunk = (path, 0, -1)
        self._remaining -= self._staging.done.get(range_id(*chunk), 0)
        return self._staged(chunk, super()._read_in_turn(path))


class ReadStagedBatchFn(_StagedReading, ReadBatchFn):
    """``ReadBatchFn`` (``--index``: the pointers into one file, in a batch) that
    brackets each batch it reads as the range of bytes its pointers span, and skips
    the batches an earlier run finished; the marker also holds the bytes the pointers
    name (``bytes``: the live progress's measure of an index run)."""

    def process(self, batch: PointerBatch) -> Iterator:
        batch = PointerBatch(*batch)
        return self._staged((batch.path, batch.start, batch.end), super().process(batch), {"bytes": batch.bytes})


class _Open:
    """A range open in this bundle: its files, its closing edge once seen, and the
    pages and rows staged into it."""

    __slots__ = ("files", "edge", "pages", "rows")

    def __init__(self, files: RangeFiles):
        self.files = files
        self.edge: Optional[RangeEdge] = None
        self.pages = 0
        self.rows: list[tuple[str, str, str, str]] = []  # (subject, stage, kind, reason) of each decision row

    def complete(self, needs_captured: bool) -> bool:
        edge = self.edge
        return (
            edge is not None
            and self.pages == edge.pages
            and (not needs_captured or self.files.rows(CAPTURED) == edge.captured)
        )


def range_counters(edge: RangeEdge, open_range: _Open, chain: Sequence[str]) -> dict[tuple[str, str], int]:
    """A finished range's counters: the reader's, then each stage's page rejections
    and errors and what it kept (``chain``: the stages in funnel order), from the rows
    staged."""
    counters = {(ns, name): value for ns, name, value in edge.counters}
    removed: dict[str, int] = {}
    for subject, stage, kind, reason in open_range.rows:
        if subject != SUBJECT_PAGE:
            continue
        name = rejected_counter(reason) if kind == KIND_REJECTED else error_counter(reason)
        counters[(stage, name)] = counters.get((stage, name), 0) + 1
        removed[stage] = removed.get(stage, 0) + 1
    kept = edge.pages
    for stage in chain:
        kept -= removed.get(stage, 0)
        counters[(stage, COUNTER_KEPT)] = kept
    return counters


class StageRangesFn(beam.DoFn):
    """Stages each record into the files of its range, while the range is open in
    this bundle (see the module docstring); any other record goes on, on the output
    named after its table, for Beam's sink. ``rows`` gives each table's row of a
    record (a staging table's key and pickled record, or an output table's row);
    ``prepare`` turns a decision row into what is staged (without the rejected
    document it carries, unless recycling needs it); ``chain`` names the stages whose
    page funnel a marker records."""

    def __init__(
        self,
        staging: RangeStaging,
        doc_table: str,
        rows: Mapping[str, Callable[[Any], dict]],
        chain: Sequence[str],
        prepare: Optional[Callable[[Decision], Decision]] = None,
    ):
        self._staging = staging
        self._doc_table = doc_table
        self._rows = dict(rows)
        self._chain = tuple(chain)
        self._prepare = prepare

    def setup(self) -> None:
        self._marked: dict[str, tuple[str, int, int]] = {}  # range id -> range, of those this instance marked

    def start_bundle(self) -> None:
        self._open: dict[str, list[_Open]] = {}

    def process(self, item: Any) -> Iterator:
        if isinstance(item, RangeEdge):
            self._edge(item)
            return
        if isinstance(item, Document):
            table = self._doc_table
        elif isinstance(item, CapturedImage):
            table = CAPTURED
        else:
            table = DECISIONS
            if self._prepare is not None:
                item = self._prepare(item)
        prov = item.provenance
        open_range = next((r for r in self._open.get(prov.warc_file, ()) if r.files.owns(prov.warc_file, prov.offset)), None)
        if open_range is None:
            self._unmark(prov.warc_file, prov.offset)
            yield TaggedOutput(table, item)
            return
        open_range.files.add(table, self._rows[table](item))
        if table == DECISIONS:
            open_range.rows.append((item.subject, item.stage, item.kind, item.reason))
        if table == self._doc_table or (table == DECISIONS and item.subject == SUBJECT_PAGE):
            open_range.pages += 1
        self._finish_if_complete(open_range)

    def _edge(self, edge: RangeEdge) -> None:
        path = edge.chunk[0]
        if not edge.closed:
            staging = self._staging
            files = RangeFiles(FileSystems, staging.phase_dir, staging.tables, edge.chunk, staging.formats)
            self._open.setdefault(path, []).append(_Open(files))
            return
        open_range = next((r for r in self._open.get(path, ()) if (r.files.start, r.files.end) == edge.chunk[1:]), None)
        if open_range is not None:  # else its opening edge was in another bundle: its records went on
            open_range.edge = edge
            self._finish_if_complete(open_range)

    def _finish_if_complete(self, open_range: _Open) -> None:
        if not open_range.complete(self._staging.needs_captured):
            return
        files, edge = open_range.files, open_range.edge
        self._open[files.path].remove(open_range)
        facts = {**dict(edge.facts), "pages": edge.pages, "captured": edge.captured}
        files.finish(True, range_counters(edge, open_range, self._chain), facts)
        self._marked[files.rid] = (files.path, files.start, files.end)

    def _unmark(self, warc_file: str, offset: int) -> None:
        """A record outside every open range: a range this instance marked that holds
        it is no longer whole, so its marker goes (a rerun reads it again)."""
        for rid in [rid for rid, chunk in self._marked.items() if in_range(chunk, warc_file, offset)]:
            remove_marker(FileSystems, self._staging.phase_dir, rid)
            del self._marked[rid]

    def finish_bundle(self) -> None:
        # Ranges still open: their files go in place without a marker (a rerun reads them again).
        for ranges in self._open.values():
            for open_range in ranges:
                open_range.files.finish(False, {}, {})
        self._open = {}

    def teardown(self) -> None:
        for ranges in getattr(self, "_open", {}).values():
            for open_range in ranges:
                open_range.files.abandon()


def without_document(decision: Decision) -> Decision:
    return decision if decision.document is None else dataclasses.replace(decision, document=None)
