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
or the record-level faults of ``stages.read``. Pointers listed twice are read once.

Counters (namespace ``read``), beside those of ``ReadWarc``: ``ranges``,
``index_files``.
"""

from __future__ import annotations

import io
import posixpath
import time
from typing import Iterator, NamedTuple, Optional, Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from mmcurate.stages.config import ReadConfig
from mmcurate.stages.results import ERRORS, REJECTED
from mmcurate.stages.read import IMAGES, PAGES, STAGE, ReadResult, ReadWarcFileFn, open_archive

INDEX_COLUMNS = ("warc_filename", "warc_record_offset", "warc_record_length")
_BATCH_ROWS = 10_000


class InvalidPointer(Exception):
    """An index row that does not name a readable byte range."""


class ShortRange(Exception):
    """The WARC file ends before the pointed-at range does."""


class BadIndex(ValueError):
    """An index file that is not Parquet/CSV or lacks a required column."""


class RecordPointer(NamedTuple):
    path: str
    offset: int
    length: int


def warc_path(filename: str, prefix: str) -> str:
    """The full path of an index's ``warc_filename``: a path with a scheme or an
    absolute local path is kept, anything else goes after ``prefix``."""
    if "://" in filename or filename.startswith("/") or not prefix:
        return filename
    if "://" in prefix:
        return prefix.rstrip("/") + "/" + filename.lstrip("/")
    return posixpath.join(prefix, filename)


def _is_csv(path: str) -> bool:
    return path.lower().endswith((".csv", ".csv.gz", ".tsv"))


def index_batches(path: str) -> Iterator[pa.RecordBatch]:
    """The index file's rows, in record batches with the three pointer columns."""
    if _is_csv(path):
        compression = CompressionTypes.AUTO
        options = pacsv.ParseOptions(delimiter="\t" if path.lower().endswith(".tsv") else ",")
        with FileSystems.open(path, compression_type=compression) as fh:
            reader = pacsv.open_csv(
                fh,
                parse_options=options,
                convert_options=pacsv.ConvertOptions(
                    include_columns=list(INDEX_COLUMNS),
                    column_types={"warc_record_offset": pa.int64(), "warc_record_length": pa.int64()},
                ),
            )
            for batch in reader:
                yield batch
        return
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        parquet = pq.ParquetFile(fh)
        missing = [c for c in INDEX_COLUMNS if c not in parquet.schema_arrow.names]
        if missing:
            raise BadIndex(f"index {path}: no column {', '.join(missing)} (needs {', '.join(INDEX_COLUMNS)})")
        yield from parquet.iter_batches(batch_size=_BATCH_ROWS, columns=list(INDEX_COLUMNS))


def check_index(path: str) -> None:
    """Fails (BadIndex) unless ``path`` is a readable Parquet/CSV index with the
    pointer columns. Reads the schema (Parquet) or the header (CSV) only."""
    try:
        if _is_csv(path):
            with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as fh:
                header = fh.readline().decode("utf-8", errors="replace")
            delimiter = "\t" if path.lower().endswith(".tsv") else ","
            names = [n.strip().strip('"') for n in header.rstrip("\r\n").split(delimiter)]
        else:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                names = pq.ParquetFile(fh).schema_arrow.names
    except BadIndex:
        raise
    except Exception as exc:
        raise BadIndex(f"index {path}: not a readable Parquet or CSV file: {exc}") from exc
    missing = [c for c in INDEX_COLUMNS if c not in names]
    if missing:
        raise BadIndex(f"index {path}: no column {', '.join(missing)} (needs {', '.join(INDEX_COLUMNS)})")


def _key(pointer: RecordPointer) -> str:
    # The path goes last: it may hold ':' itself.
    return f"{pointer.offset}:{pointer.length}:{pointer.path}"


def _from_key(key: str) -> RecordPointer:
    offset, length, path = key.split(":", 2)
    return RecordPointer(path, int(offset), int(length))


class ReadIndexFn(beam.DoFn):
    """One index file -> the string keys of its pointers (prefix applied)."""

    def __init__(self, warc_prefix: str):
        self._prefix = warc_prefix

    def process(self, path: str) -> Iterator[str]:
        beam.metrics.Metrics.counter(STAGE, "index_files").inc()
        for batch in index_batches(path):
            columns = batch.to_pydict()
            for name, offset, length in zip(*(columns[c] for c in INDEX_COLUMNS)):
                full = warc_path(name, self._prefix) if name else ""
                offset = -1 if offset is None else int(offset)
                length = 0 if length is None else int(length)
                yield _key(RecordPointer(full, offset, length))


class ReadRangeFn(ReadWarcFileFn):
    """Reads the one record a pointer names, by a range read, with ``ReadWarc``'s
    record code: outputs and counters are those of ``ReadWarcFileFn``."""

    def process(self, key: str) -> Iterator:
        counters = self._counters
        counters.inc("ranges")
        batches = self._read_range(_from_key(key))
        while True:  # time our own work, not what runs downstream of a yield
            started = time.perf_counter()
            batch = next(batches, None)
            counters.micros(started)
            if batch is None:
                return
            yield from batch

    def _read_range(self, pointer: RecordPointer) -> Iterator[list]:
        path, offset, length = pointer
        if not path or offset < 0 or length <= 0:
            yield self._fault(path, max(offset, 0), InvalidPointer(f"pointer ({path!r}, {offset}, {length})"))
            return
        try:
            with open_archive(path) as raw:
                raw.seek(offset)
                blob = raw.read(length)
        except Exception as exc:
            yield self._fault(path, offset, exc)
            return
        if len(blob) < length:
            yield self._fault(path, offset, ShortRange(f"{len(blob)} of {length} bytes at {offset}: the file ends"))
            return
        yield from self.read_stream(path, io.BytesIO(blob), base=offset)


class ReadWarcIndex(beam.PTransform):
    """Reads the WARC records that CC-index style pointer files name:
    ``p | ReadWarcIndex(["pointers.parquet"], "s3://commoncrawl/", config)`` ->
    ``ReadResult`` (the same four outputs as ``ReadWarc``)."""

    def __init__(
        self,
        index_patterns: Sequence[str],
        warc_prefix: str = "",
        config: ReadConfig = ReadConfig(),
        label: Optional[str] = None,
    ):
        super().__init__(label)
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
            # Reads each pointer once, and spreads the ranges over workers (a shuffle).
            | "DistinctPointers" >> beam.Distinct()
        )
        outputs = pointers | "ReadRanges" >> beam.ParDo(ReadRangeFn(self._config)).with_outputs(
            IMAGES, REJECTED, ERRORS, main=PAGES
        )
        # No reshuffle of pages: the pointers were spread by DistinctPointers, and
        # page HTML never crosses a shuffle (runners hold shuffled data in memory).
        return ReadResult(outputs[PAGES], outputs[IMAGES], outputs[REJECTED], outputs[ERRORS])
