"""CC-index pointers: the WARC file and byte range of one record, as the Common
Crawl columnar index (and the CDX index) gives them for every capture:
``warc_filename``, ``warc_record_offset``, ``warc_record_length`` (the columnar
index's column names, https://commoncrawl.org/columnar-index). Pointer files are
Parquet or CSV/TSV with these columns (``engines/index_files.py`` reads them); each range holds one gzip member (one
record), read with a seek and one read (on s3:// and gs://, a ranged GET)."""

from __future__ import annotations

import posixpath
from typing import BinaryIO, Callable, Iterable, Iterator, NamedTuple, Sequence

import pyarrow as pa

from mmcurate.stages.engines.index_files import csv_batches, parquet_batches, parquet_columns

INDEX_COLUMNS = ("warc_filename", "warc_record_offset", "warc_record_length")
_TYPES = {"warc_record_offset": pa.int64(), "warc_record_length": pa.int64()}


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


def check_columns(path: str, names: Sequence[str]) -> None:
    """Fails (BadIndex) unless ``names`` (an index file's columns) has the pointer columns."""
    missing = [c for c in INDEX_COLUMNS if c not in names]
    if missing:
        raise BadIndex(f"index {path}: no column {', '.join(missing)} (needs {', '.join(INDEX_COLUMNS)})")


def csv_pointer_batches(fh: BinaryIO, path: str) -> Iterator[pa.RecordBatch]:
    """The pointer columns of the CSV/TSV index ``path``, open (decompressed) as ``fh``."""
    return csv_batches(fh, path, INDEX_COLUMNS, _TYPES)


def parquet_pointer_batches(fh: BinaryIO, path: str) -> Iterator[pa.RecordBatch]:
    """The pointer columns of the Parquet index ``path``, open as ``fh``."""
    check_columns(path, parquet_columns(fh))
    return parquet_batches(fh, INDEX_COLUMNS)


def pointers(batch: pa.RecordBatch, prefix: str) -> Iterator[RecordPointer]:
    """The pointers of one batch of index rows, ``prefix`` applied; a missing value
    gives a pointer that ``read_range`` refuses."""
    columns = batch.to_pydict()
    for name, offset, length in zip(*(columns[c] for c in INDEX_COLUMNS)):
        full = warc_path(name, prefix) if name else ""
        offset = -1 if offset is None else int(offset)
        length = 0 if length is None else int(length)
        yield RecordPointer(full, offset, length)


def pointer_key(pointer: RecordPointer) -> str:
    """A pointer as one string (to deduplicate and spread pointers)."""
    # The path goes last: it may hold ':' itself.
    return f"{pointer.offset}:{pointer.length}:{pointer.path}"


def pointer_from_key(key: str) -> RecordPointer:
    offset, length, path = key.split(":", 2)
    return RecordPointer(path, int(offset), int(length))


def read_range(pointer: RecordPointer, open_file: Callable[[str], BinaryIO]) -> bytes:
    """The bytes the pointer names, from the file ``open_file(path)`` opens. Raises
    ``InvalidPointer``, ``ShortRange`` or the filesystem's error."""
    path, offset, length = pointer
    if not path or offset < 0 or length <= 0:
        raise InvalidPointer(f"pointer ({path!r}, {offset}, {length})")
    with open_file(path) as raw:
        raw.seek(offset)
        blob = raw.read(length)
    if len(blob) < length:
        raise ShortRange(f"{len(blob)} of {length} bytes at {offset}: the file ends")
    return blob


class PointerBatch(NamedTuple):
    """Pointers into one file read together: the byte span they cover, ``[start,
    end)`` (what a staged range is named and owns by), their keys in file order and
    the bytes they name."""

    path: str
    start: int
    end: int
    keys: tuple[str, ...]
    bytes: int


def batch_pointers(path: str, keys: Iterable[str], max_bytes: int) -> Iterator[PointerBatch]:
    """The pointers into ``path`` (their keys), sorted by offset and cut into batches
    of consecutive pointers naming about ``max_bytes`` each: the same batches for the
    same pointers, however they arrive. A pointer that cannot be read (a negative
    offset, a length that is not positive) counts from byte 0 and as one byte, the
    span its error row lies in."""
    ordered = sorted((pointer_from_key(k) for k in set(keys)), key=lambda p: (p.offset, p.length))
    batch: list[RecordPointer] = []
    size = 0
    for pointer in ordered:
        batch.append(pointer)
        size += max(pointer.length, 0)
        if size >= max_bytes:
            yield _batch(path, batch, size)
            batch, size = [], 0
    if batch:
        yield _batch(path, batch, size)


def _batch(path: str, pointers: list[RecordPointer], size: int) -> PointerBatch:
    start = min(max(p.offset, 0) for p in pointers)
    end = max(max(p.offset, 0) + max(p.length, 1) for p in pointers)
    return PointerBatch(path, start, end, tuple(pointer_key(p) for p in pointers), size)
