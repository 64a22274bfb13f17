"""Stage `read`: WARC (and ARC) files in, decoded HTML pages and captured images out.

``ReadWarc`` matches file patterns on any Beam filesystem, streams each file's
records with warcio (one file per DoFn call, never the whole file in memory) and
sorts them:

- ``response``/``resource`` records whose payload is HTML are *pages*. Each page
  ends as exactly one of: a ``Page`` (2xx), a ``rejected`` row (other HTTP status)
  or an ``error`` row (e.g. ``PayloadTooLarge``).
- ``image/*`` payloads become ``CapturedImage`` for later image retrieval; one over
  ``read.max_image_bytes`` becomes a ``CapturedImage`` without bytes that records
  its size (``oversize``), so the images stage reports ``image.capture_too_large``.
- ``revisit``, ``request``, ``metadata``, ``warcinfo``, ``conversion`` records and
  other payloads are only counted (``records.<type>``, ``mime.<mime>``).
- A corrupt or truncated file keeps every record read before the fault and adds
  one error row for each damaged region, counted as one page so that
  ``pages == kept + rejected + errors`` holds; reading resumes at the next record
  start (``engines/warc/reader.py`` says how).

The work is done by the Beam-free engine in ``stages/engines/warc/`` (records are
sorted by ``records.sort_record``, files read by ``reader.read_archive``, charsets
decoded by ``engines/charset_decoding.py``); this module turns its events into
outputs, decision rows and counters.

Error reasons are exception type names: per record ``PayloadTooLarge``,
``InvalidHttpStatus`` (or any unexpected exception while reading that record);
per fault in a file ``NotAnArchive``, ``MalformedRecord``, ``TruncatedRecord``,
``RecordLengthMismatch``, ``TruncatedFile``, warcio's ``ArchiveLoadFailed``, or the
filesystem's error. An exception warcio raises from inside its own header parsing
(e.g. ``AttributeError`` on a gzip member cut inside the record headers) is named
``TruncatedRecord`` when the data ends inside that record, else ``MalformedRecord``,
with warcio's message in the detail (``engines/warc/faults.py``).

Counters (namespace ``read``): ``files``, ``files.empty``, ``records.<warc_type>``,
``mime.<mime>``, ``images``, ``images.too_large``, ``images.status_not_ok``,
``pages``, ``kept``, ``rejected.<reason>``, ``errors.<ExceptionType>``, ``micros``.
"""

from __future__ import annotations

import logging
import time
from typing import BinaryIO, Iterator, NamedTuple, Optional, Sequence

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import reasons
from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, SUBJECT_PAGE, CapturedImage, Decision, Page, Provenance, make_doc_id
from mmcurate.stages.config import ReadConfig
from mmcurate.stages.engines.warc import range_reads
from mmcurate.stages.engines.warc.boundaries import chunk_boundaries
from mmcurate.stages.engines.warc.reader import Fault, RecordRead, read_archive
from mmcurate.stages.engines.warc.records import HttpNotOk
from mmcurate.stages.engines.warc.streams import RangeStream
from mmcurate.stages.results import ERRORS, REJECTED, StageCounters, error_detail

log = logging.getLogger(__name__)

STAGE = "read"

# Output tags of the reading ParDo (rejected and errors come from stages.results).
PAGES = "pages"
IMAGES = "images"


class ReadResult(NamedTuple):
    """What ``ReadWarc`` returns: four PCollections."""

    pages: beam.PCollection  # Page
    images: beam.PCollection  # CapturedImage
    rejected: beam.PCollection  # Decision, kind "rejected"
    errors: beam.PCollection  # Decision, kind "error"


def open_archive(path: str) -> BinaryIO:
    """``path`` opened on any Beam filesystem, as stored (a .warc.gz stays gzip)."""
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def captured_payload(image: CapturedImage, max_bytes: int = 1 << 62) -> bytes:
    """The bytes of a captured image, read again from its record on any Beam
    filesystem (``range_reads.captured_payload``)."""
    return range_reads.captured_payload(image, open_archive, max_bytes)


class ReadWarcFileFn(beam.DoFn):
    """Reads one WARC/ARC file (a path on any Beam filesystem): pages on the main
    output, ``CapturedImage`` on ``images``, decision rows on ``rejected``/``errors``."""

    def __init__(self, config: ReadConfig):
        self._config = config
        self._counters: Optional[StageCounters] = None
        # Pages still to read under read.limit (None: no limit).
        self._remaining: Optional[int] = None

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, path: str) -> Iterator:
        self._counters.inc("files")
        yield from self._timed(self._read_file(path))

    def _timed(self, batches: Iterator[list]) -> Iterator:
        counters = self._counters
        while True:  # time our own work per record, not what runs downstream of a yield
            started = time.perf_counter()
            batch = next(batches, None)
            counters.micros(started)
            if batch is None:
                return
            yield from batch

    def _count_page(self) -> None:
        self._counters.inc("pages")
        if self._remaining is not None:
            self._remaining -= 1

    def _exhausted(self) -> bool:
        return self._remaining is not None and self._remaining <= 0

    def _read_file(self, path: str) -> Iterator[list]:
        try:
            raw = open_archive(path)
        except Exception as exc:  # missing, unreadable: a fault at byte 0
            yield self._fault(path, 0, exc)
            return
        with raw:
            yield from self.read_stream(path, raw)

    def read_stream(self, path: str, raw: BinaryIO, base: int = 0) -> Iterator[list]:
        """Reads every record of ``raw``, a stream that starts at byte ``base`` of
        ``path`` (a whole file, or a byte range of records): batches of outputs, with
        offsets counted from the start of ``path``, until ``read.limit`` pages have
        been read. Needs ``setup()`` to have run."""
        for event in read_archive(path, raw, self._config, self._counters.inc, base):
            if isinstance(event, Fault):
                yield self._fault(path, event.offset, event.error, url=event.url, note=event.note)
            else:
                yield self._emit(path, event)
            if self._exhausted():
                return  # read.limit reached: the rest is not read, so it is no fault

    def _fault(self, path: str, offset: int, exc: BaseException, url: str = "", note: str = "") -> list:
        """The error row for a fault in the file at ``offset`` (no page to name)."""
        counters = self._counters
        self._count_page()
        counters.error(exc)
        log.warning("%s: fault at byte %d (%s: %s)%s", path, offset, type(exc).__name__, exc, note)
        row = Decision(
            doc_id=make_doc_id(url=path, date=f"fault@{offset}"),
            url=url,
            stage=STAGE,
            kind=KIND_ERROR,
            reason=type(exc).__name__,
            provenance=Provenance(warc_file=path, offset=offset),
            detail=f"{path} at byte {offset}: {error_detail(exc)}{note}",
            subject=SUBJECT_PAGE,
        )
        return [beam.pvalue.TaggedOutput(ERRORS, row)]

    def _emit(self, path: str, read: RecordRead) -> list:
        counters = self._counters
        counters.inc(f"records.{read.rec_type}")
        value = read.value
        if isinstance(value, Exception):
            self._count_page()
            counters.error(value)
            log.debug("%s: record at %d failed", path, read.offset, exc_info=value)
            row = Decision(
                doc_id=make_doc_id(read.record_id, read.url, read.date),
                url=read.url,
                stage=STAGE,
                kind=KIND_ERROR,
                reason=type(value).__name__,
                provenance=Provenance(path, read.record_id, read.date, read.offset, read.length),
                detail=error_detail(value),
                subject=SUBJECT_PAGE,
            )
            return [beam.pvalue.TaggedOutput(ERRORS, row)]
        if read.counter:
            counters.inc(read.counter)
        if value is None:
            return []
        if isinstance(value, Page):
            self._count_page()
            counters.kept()
            return [value]
        if isinstance(value, HttpNotOk):
            self._count_page()
            counters.rejected(reasons.HTTP_STATUS_NOT_OK)
            row = Decision(
                doc_id=value.doc_id,
                url=value.url,
                stage=STAGE,
                kind=KIND_REJECTED,
                reason=reasons.HTTP_STATUS_NOT_OK,
                provenance=value.provenance,
                value=float(value.status),
                threshold=None,
                detail=value.statusline,
                subject=SUBJECT_PAGE,
            )
            return [beam.pvalue.TaggedOutput(REJECTED, row)]
        counters.inc("images")
        return [beam.pvalue.TaggedOutput(IMAGES, value)]


def _path(metadata) -> str:
    return metadata.path


class ReadFilesInOrderFn(ReadWarcFileFn):
    """Reads a list of files one after the other, in path order, until
    ``read.limit`` pages have been read: the first N pages of the input."""

    def process(self, paths: list[str]) -> Iterator:
        self._remaining = self._config.limit
        for path in sorted(set(paths)):
            if self._exhausted():
                return
            yield from self._read_in_turn(path)

    def _read_in_turn(self, path: str) -> Iterator:
        """One file, in its turn (a staged reader skips those an earlier run finished)."""
        return ReadWarcFileFn.process(self, path)


# Compressed bytes per chunk of records spread over workers (ours: enough pages per
# chunk to amortise opening the file, small enough to spread one WARC over many cores).
CHUNK_BYTES = 8 * 1024 * 1024
# A file under RANGES_PER_FILE * CHUNK_BYTES (a 512 MB WARC) is cut into about
# RANGES_PER_FILE ranges instead, none under MIN_CHUNK_BYTES (ours): with 8 MB
# ranges a 2 MB file was one range, read by one worker while the others waited, and
# smaller ranges spread one file more evenly over the workers.
# A range costs one open and seek and its staging files (a few small Parquet files and a read record); and MIN_CHUNK_BYTES stays
# well over pipeline.progress.SKIPPED_GAP, so that two ranges one process read apart
# are never counted as one.
RANGES_PER_FILE = 64
MIN_CHUNK_BYTES = 128 * 1024


def chunk_bytes(size: Optional[int]) -> int:
    """The range size for a file of ``size`` bytes (None: unknown, ``CHUNK_BYTES``)."""
    if size is None:
        return CHUNK_BYTES
    return min(CHUNK_BYTES, max(MIN_CHUNK_BYTES, size // RANGES_PER_FILE))


def file_size(path: str) -> Optional[int]:
    """The size of ``path`` on its Beam filesystem, or None if it cannot be listed."""
    try:
        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    except Exception:  # the reader of the file meets the same problem and reports it
        return None


def file_ranges(path: str) -> Iterator[tuple[str, int, int]]:
    """``(path, start, end)`` byte ranges of whole records of one file, about
    ``chunk_bytes(size)`` each (end -1: to the end of the file), in file order.

    Only WARC files are cut, at record boundaries warcio reports; an ARC file, an
    empty or unreadable one, or the rest of a file after a record warcio cannot
    parse is one range, whose reader reports the fault as for a whole file."""
    start = 0
    size = chunk_bytes(file_size(path))
    try:
        with open_archive(path) as raw:
            for cut in chunk_boundaries(raw, size):
                yield path, start, cut
                start = cut
    except Exception:  # the reader of the last range meets it again and reports it
        log.debug("%s: scanning for record boundaries stopped at byte %d", path, start, exc_info=True)
    yield path, start, -1


class FindChunksFn(ReadWarcFileFn):
    """One file -> its ranges (``file_ranges``), so that one WARC is read by many
    workers without its pages crossing a shuffle."""

    def process(self, path: str) -> Iterator[tuple[str, int, int]]:
        self._counters.inc("files")
        yield from file_ranges(path)


class WholeFileFn(ReadWarcFileFn):
    """One file -> the one range ``(path, 0, -1)``: the whole file, for a
    ``chunk_reader`` when files are not cut (``read.reshuffle: false``)."""

    def process(self, path: str) -> Iterator[tuple[str, int, int]]:
        self._counters.inc("files")
        yield path, 0, -1


class ReadChunkFn(ReadWarcFileFn):
    """Reads the records of one ``(path, start, end)`` range (``FindChunksFn``)."""

    def process(self, chunk: tuple[str, int, int]) -> Iterator:
        yield from self._timed(self._read_chunk(*chunk))

    def _read_chunk(self, path: str, start: int, end: int) -> Iterator[list]:
        try:
            raw = open_archive(path)
            window = RangeStream(raw, start, end - start if end >= 0 else -1)
        except Exception as exc:  # missing, unreadable: a fault at the range's start
            yield self._fault(path, start, exc)
            return
        with raw:
            yield from self.read_stream(path, window, base=start)


class ReadWarc(beam.PTransform):
    """Reads WARC/ARC files (paths or globs on any Beam filesystem, plain or gzip)
    from a pipeline root: ``p | ReadWarc(patterns, config)`` -> ``ReadResult``.

    A pattern that matches nothing produces nothing (the CLI checks its inputs
    before the run). A file matched by several patterns is read once.

    With ``read.reshuffle`` (the default) each WARC file is cut into ranges of whole
    records that are spread over workers (a shuffle of ``(path, start, end)``, never
    of pages); without it each file is read by one worker. With ``read.limit`` N,
    only the first N pages are read, files taken in path order. ``chunk_reader``
    replaces ``ReadChunkFn`` as the reader of each range, and reads each file as the
    one range ``(path, 0, -1)`` without ``read.reshuffle``; ``in_order_reader``
    replaces ``ReadFilesInOrderFn`` under ``read.limit`` (the first phase of
    ``mmcurate run`` stages each range as it reads it: ``stages/range_staging.py``).
    """

    def __init__(
        self,
        patterns: Sequence[str],
        config: ReadConfig = ReadConfig(),
        label: Optional[str] = None,
        chunk_reader: Optional[ReadChunkFn] = None,
        in_order_reader: Optional[ReadFilesInOrderFn] = None,
    ):
        super().__init__(label)
        self._chunk_reader = chunk_reader
        self._in_order_reader = in_order_reader
        if isinstance(patterns, str):
            patterns = [patterns]
        self._patterns = [str(p) for p in patterns]
        if not self._patterns:
            raise ValueError("ReadWarc needs at least one path or glob")
        self._config = config

    def expand(self, pbegin) -> ReadResult:
        config = self._config
        tags = (IMAGES, REJECTED, ERRORS)
        paths = (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "MatchFiles" >> fileio.MatchAll(fileio.EmptyMatchTreatment.ALLOW)
            | "Paths" >> beam.Map(_path)
        )
        if config.limit:
            outputs = (
                paths
                | "AllPaths" >> beam.combiners.ToList()
                | "ReadInOrder" >> beam.ParDo(self._in_order_reader or ReadFilesInOrderFn(config)).with_outputs(*tags, main=PAGES)
            )
            return _result(outputs)
        # Also spreads the files over workers: it is a shuffle.
        files = paths | "DistinctPaths" >> beam.Distinct()
        if config.reshuffle:
            chunks = (
                files
                | "FindChunks" >> beam.ParDo(FindChunksFn(config))
                | "SpreadChunks" >> beam.Reshuffle()
            )
            reader = self._chunk_reader or ReadChunkFn(config)
            outputs = chunks | "ReadChunks" >> beam.ParDo(reader).with_outputs(*tags, main=PAGES)
        elif self._chunk_reader is not None:
            chunks = files | "WholeFiles" >> beam.ParDo(WholeFileFn(config))
            outputs = chunks | "ReadChunks" >> beam.ParDo(self._chunk_reader).with_outputs(*tags, main=PAGES)
        else:
            outputs = files | "ReadRecords" >> beam.ParDo(ReadWarcFileFn(config)).with_outputs(*tags, main=PAGES)
        return _result(outputs)


def _result(outputs) -> ReadResult:
    return ReadResult(outputs[PAGES], outputs[IMAGES], outputs[REJECTED], outputs[ERRORS])
