"""Stage `read` from CC-index pointers: only the records a table points at.

The Common Crawl columnar index (and the CDX index) gives, for every capture, the
WARC file and the byte range of its record: ``warc_filename``,
``warc_record_offset``, ``warc_record_length`` (the same column names as the
columnar index, https://commoncrawl.org/columnar-index). ``ReadWarcIndex`` takes
Parquet or CSV files with these columns and reads exactly those byte ranges
(``FileSystems.open`` + ``seek``: on s3:// and gs:// a ranged GET), so a selected
subset of a crawl is curated without reading whole WARC files. Each range holds one
gzip member (one record); it goes through the same record code as ``ReadWarc``
(``ReadWarcFileFn.read_stream``), so pages, rejections and error rows are the same
as when the whole file is read.

A pointer that cannot be read ends as one error row (counted as one page):
``InvalidPointer`` (a missing filename, a negative offset, a length that is not
positive), ``ShortRange`` (the file ends inside the range), the filesystem's error,
or the record-level faults of ``stages.read``. The pointers themselves (columns,
paths, range reads) are the Beam-free ``engines/warc/index_pointers.py``. Pointers listed twice are read once.

Counters (namespace ``read``), beside those of ``ReadWarc``: ``ranges``,
``index_files``.
"""

from __future__ import annotations

import io
from typing import Iterator, Optional, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from mmcurate.stages.config import ReadConfig
from mmcurate.stages.engines.index_files import header_columns, is_csv, parquet_columns
from mmcurate.stages.engines.warc.index_pointers import (
    BadIndex,
    PointerBatch,
    RecordPointer,
    batch_pointers,
    check_columns,
    csv_pointer_batches,
    parquet_pointer_batches,
    pointer_from_key,
    pointer_key,
    pointers,
    read_range,
)
from mmcurate.stages.read import CHUNK_BYTES, IMAGES, PAGES, STAGE, ReadResult, ReadWarcFileFn, open_archive
from mmcurate.stages.results import ERRORS, REJECTED


def index_batches(path: str) -> Iterator[pa.RecordBatch]:
    """The index file's rows (any Beam filesystem), in record batches with the
    three pointer columns."""
    if is_csv(path):
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as fh:
            yield from csv_pointer_batches(fh, path)
        return
    with open_archive(path) as fh:
        yield from parquet_pointer_batches(fh, path)


def check_index(path: str) -> None:
    """Fails (BadIndex) unless ``path`` is a readable Parquet/CSV index with the
    pointer columns. Reads the schema (Parquet) or the header (CSV) only."""
    try:
        if is_csv(path):
            with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as fh:
                names = header_columns(fh.readline(), path)
        else:
            with open_archive(path) as fh:
                names = parquet_columns(fh)
    except Exception as exc:
        raise BadIndex(f"index {path}: not a readable Parquet or CSV file: {exc}") from exc
    check_columns(path, names)


class ReadIndexFn(beam.DoFn):
    """One index file -> the string keys of its pointers (prefix applied)."""

    def __init__(self, warc_prefix: str):
        self._prefix = warc_prefix

    def process(self, path: str) -> Iterator[str]:
        beam.metrics.Metrics.counter(STAGE, "index_files").inc()
        for batch in index_batches(path):
            for pointer in pointers(batch, self._prefix):
                yield pointer_key(pointer)


class ReadRangeFn(ReadWarcFileFn):
    """Reads the one record a pointer names, by a range read, with ``ReadWarc``'s
    record code: outputs and counters are those of ``ReadWarcFileFn``."""

    def process(self, key: str) -> Iterator:
        self._counters.inc("ranges")
        yield from self._timed(self._read_range(pointer_from_key(key)))

    def _read_range(self, pointer: RecordPointer) -> Iterator[list]:
        try:
            blob = read_range(pointer, open_archive)
        except Exception as exc:  # InvalidPointer, ShortRange, the filesystem's error
            yield self._fault(pointer.path, max(pointer.offset, 0), exc)
            return
        yield from self.read_stream(pointer.path, io.BytesIO(blob), base=pointer.offset)


class ReadBatchFn(ReadRangeFn):
    """Reads the pointers of one ``PointerBatch``, one after the other."""

    def process(self, batch: PointerBatch) -> Iterator:
        for key in batch.keys:
            yield from super().process(key)


def _by_file(key: str) -> tuple[str, str]:
    return pointer_from_key(key).path, key


def _batches(item):  # no type hints: Beam would give the NamedTuple a schema coder
    path, keys = item
    return batch_pointers(path, keys, CHUNK_BYTES)


class ReadWarcIndex(beam.PTransform):
    """Reads the WARC records that CC-index style pointer files name:
    ``p | ReadWarcIndex(["pointers.parquet"], "s3://commoncrawl/", config)`` ->
    ``ReadResult`` (the same four outputs as ``ReadWarc``).

    The pointers into each WARC file are sorted and read in batches of consecutive
    pointers naming about ``stages.read.CHUNK_BYTES`` (``batch_pointers``): the same
    batches on every run, which the first phase of ``mmcurate run`` stages as input
    ranges (``batch_reader``: ``stages/range_staging.py``). Only pointer keys cross
    the shuffles that make them, never page HTML."""

    def __init__(
        self,
        index_patterns: Sequence[str],
        warc_prefix: str = "",
        config: ReadConfig = ReadConfig(),
        label: Optional[str] = None,
        batch_reader: Optional[ReadBatchFn] = None,
    ):
        super().__init__(label)
        self.batch_reader = batch_reader
        if isinstance(index_patterns, str):
            index_patterns = [index_patterns]
        self._patterns = [str(p) for p in index_patterns]
        if not self._patterns:
            raise ValueError("ReadWarcIndex needs at least one index file")
        self._prefix = warc_prefix
        self._config = config

    def expand(self, pbegin) -> ReadResult:
        pointers = (
            pbegin
            | "IndexPatterns" >> beam.Create(self._patterns)
            | "MatchIndex" >> fileio.MatchAll(fileio.EmptyMatchTreatment.ALLOW)
            | "IndexPaths" >> beam.Map(lambda metadata: metadata.path)
            | "ReadIndex" >> beam.ParDo(ReadIndexFn(self._prefix))
            # Each file's pointers meet here; batch_pointers reads a repeated one once.
            | "ByFile" >> beam.Map(_by_file)
            | "PointersOfFile" >> beam.GroupByKey()
            | "Batches" >> beam.FlatMap(_batches)
            # Spreads the batches over workers (a shuffle of pointer keys).
            | "SpreadBatches" >> beam.Reshuffle()
        )
        reader = self.batch_reader or ReadBatchFn(self._config)
        outputs = pointers | "ReadRanges" >> beam.ParDo(reader).with_outputs(IMAGES, REJECTED, ERRORS, main=PAGES)
        # No reshuffle of pages: page HTML never crosses a shuffle (runners hold
        # shuffled data in memory).
        return ReadResult(outputs[PAGES], outputs[IMAGES], outputs[REJECTED], outputs[ERRORS])
