"""Output tables assembled from Parquet parts: a few files per table, not one per part.

A run whose only phase writes the output tables stages them per input range, so
that a killed run resumes from the ranges it finished (``stages/range_staging.py``):
each range leaves a small file per table. These parts are joined, in the order
given, into ``<table>/part-SSSSS-of-NNNNN.parquet`` (Beam's shard names):
row groups of ``rows_per_group`` rows, the rows split evenly over the files, as
many files as ``num_shards`` says or, with 0, one per ``TARGET_FILE_BYTES`` of
parts (at least one, so a table with no rows is one file with its schema). It is a
streaming pass: one row group in memory at a time, the rows copied as Arrow
columns (no record is decoded into Python objects).

The work splits by output file: ``plan_files`` reads only the parts' footers and
says which rows of which parts each file holds (``OutputFile``), and
``write_file`` writes one file from its slices, so the files of a table can be
written by different workers (``stages/assemble.py``) and still be the files one
pass would write.

Plain pyarrow; paths go through a filesystem the caller hands in (Beam's
``FileSystems``), so any filesystem Beam knows works and this module needs no Beam.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

# Compressed bytes of parts per output file when the number of shards is left open
# (write.num_shards 0). Ours: a small run stays one file per table, as Beam's sink
# wrote it on one machine; a crawl's output is files of ~128 MB that DuckDB reads in
# parallel and pandas can open one at a time.
TARGET_FILE_BYTES = 128 * 1024 * 1024
# Parts whose footers are read at once when planning (ours: I/O-bound round trips).
FOOTER_READERS = 16


def shard_name(index: int, count: int) -> str:
    return f"part-{index:05d}-of-{count:05d}.parquet"


def shard_count(part_bytes: int, num_shards: int, target: int = TARGET_FILE_BYTES) -> int:
    """How many files a table of ``part_bytes`` becomes."""
    if num_shards > 0:
        return num_shards
    return max(1, math.ceil(part_bytes / target))


@dataclass(frozen=True)
class OutputFile:
    """One output file: its path and, in order, the rows it holds, as slices
    ``(part, first row, end row)`` of the parts."""

    path: str
    slices: tuple[tuple[str, int, int], ...]


def _slice_groups(fs, part: str, first: int, end: int, schema: pa.Schema) -> Iterator[pa.Table]:
    """Rows ``[first, end)`` of the Parquet file ``part``, a row group at a time
    (row groups outside the slice are not read)."""
    with fs.open(part, compression_type="uncompressed") as fh:
        parquet = pq.ParquetFile(fh)
        at = 0
        for group in range(parquet.metadata.num_row_groups):
            rows = parquet.metadata.row_group(group).num_rows
            lo, hi = max(first, at), min(end, at + rows)
            if lo < hi:
                table = parquet.read_row_group(group).slice(lo - at, hi - lo)
                yield table if table.schema.equals(schema) else table.cast(schema)
            at += rows
            if at >= end:
                break


def _size(fs, path: str) -> int:
    return sum(m.size_in_bytes for m in fs.match([path])[0].metadata_list)


def _rows(fs, path: str) -> int:
    with fs.open(path, compression_type="uncompressed") as fh:
        return pq.ParquetFile(fh).metadata.num_rows


class _File:
    """One output file: rows in, written as row groups of ``rows_per_group``."""

    def __init__(self, fs, path: str, schema: pa.Schema, compression: str, rows_per_group: int):
        self._fh = fs.create(path)
        self._writer = pq.ParquetWriter(self._fh, schema, compression=compression, use_compliant_nested_type=True)
        self._rows_per_group = rows_per_group
        self._pending: list[pa.Table] = []
        self._held = 0

    def add(self, table: pa.Table) -> None:
        self._pending.append(table)
        self._held += table.num_rows
        while self._held >= self._rows_per_group:
            joined = pa.concat_tables(self._pending)
            self._writer.write_table(joined.slice(0, self._rows_per_group), row_group_size=self._rows_per_group)
            rest = joined.slice(self._rows_per_group)
            self._pending, self._held = [rest], rest.num_rows

    def abandon(self) -> None:
        """Closes the writer and the file after a failure (a retry writes it anew)."""
        for close in (self._writer.close, self._fh.close):
            try:
                close()
            except Exception:  # the failure being raised is the one that matters
                pass

    def close(self) -> None:
        if self._held:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=self._rows_per_group)
        self._writer.close()
        self._fh.close()


def plan_files(
    fs,
    parts: Sequence[str],
    directory: str,
    num_shards: int = 0,
    target: int = TARGET_FILE_BYTES,
) -> list[OutputFile]:
    """The output files of ``parts`` under ``directory``: the rows split evenly, in
    order, over ``shard_count`` files. Reads the parts' footers (and, with the shard
    count left open, their sizes) only."""
    # A footer read (and a size lookup) is a round trip on a remote filesystem: a
    # crawl's thousands of parts are looked at by a few threads at once.
    with ThreadPoolExecutor(max_workers=FOOTER_READERS) as pool:
        part_bytes = sum(pool.map(lambda path: _size(fs, path), parts)) if num_shards <= 0 else 0
        count = shard_count(part_bytes, num_shards, target)
        sizes = list(pool.map(lambda path: _rows(fs, path), parts))
    total = sum(sizes)
    # File k holds rows [cuts[k], cuts[k + 1]) of the parts taken as one sequence.
    cuts = [total * k // count for k in range(count + 1)]
    files = []
    for k in range(count):
        slices = []
        start = 0
        for part, rows in zip(parts, sizes):
            lo, hi = max(cuts[k], start), min(cuts[k + 1], start + rows)
            if lo < hi:
                slices.append((part, lo - start, hi - start))
            start += rows
        files.append(OutputFile(fs.join(directory, shard_name(k, count)), tuple(slices)))
    return files


def write_file(fs, spec: OutputFile, schema: pa.Schema, compression: str, rows_per_group: int) -> str:
    """Writes the output file ``spec`` (row groups of ``rows_per_group`` rows, a file
    with the schema and no rows when it holds none); returns its path."""
    out = _File(fs, spec.path, schema, compression, rows_per_group)
    try:
        for part, first, end in spec.slices:
            for table in _slice_groups(fs, part, first, end, schema):
                out.add(table)
    except BaseException:
        out.abandon()
        raise
    out.close()
    return spec.path

