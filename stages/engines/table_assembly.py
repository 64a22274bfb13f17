"""Output tables assembled from Parquet parts: a few files per table, not one per part.

A run whose only phase writes the output tables stages them per input range, so
that a killed run resumes from the ranges it finished (``stages/range_staging.py``):
each range leaves a small file per table. ``assemble_table`` joins such parts, in
the order given, into ``<table>/part-SSSSS-of-NNNNN.parquet`` (Beam's shard names):
row groups of ``rows_per_group`` rows, the rows split evenly over the files, as
many files as ``num_shards`` says or, with 0, one per ``TARGET_FILE_BYTES`` of
parts (at least one, so a table with no rows is one file with its schema). It is a
streaming pass: one row group in memory at a time, the rows copied as Arrow
columns (no record is decoded into Python objects).

Plain pyarrow; paths go through a filesystem the caller hands in (Beam's
``FileSystems``), so any filesystem Beam knows works and this module needs no Beam.
"""

from __future__ import annotations

import math
from typing import Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

# Compressed bytes of parts per output file when the number of shards is left open
# (write.num_shards 0). Ours: a small run stays one file per table, as Beam's sink
# wrote it on one machine; a crawl's output is files of ~128 MB that DuckDB reads in
# parallel and pandas can open one at a time.
TARGET_FILE_BYTES = 128 * 1024 * 1024


def shard_name(index: int, count: int) -> str:
    return f"part-{index:05d}-of-{count:05d}.parquet"


def shard_count(part_bytes: int, num_shards: int, target: int = TARGET_FILE_BYTES) -> int:
    """How many files a table of ``part_bytes`` becomes."""
    if num_shards > 0:
        return num_shards
    return max(1, math.ceil(part_bytes / target))


def _row_groups(fs, parts: Sequence[str], schema: pa.Schema) -> Iterator[pa.Table]:
    for path in parts:
        with fs.open(path, compression_type="uncompressed") as fh:
            parquet = pq.ParquetFile(fh)
            for group in range(parquet.metadata.num_row_groups):
                table = parquet.read_row_group(group)
                yield table if table.schema.equals(schema) else table.cast(schema)


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

    def close(self) -> None:
        if self._held:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=self._rows_per_group)
        self._writer.close()
        self._fh.close()


def assemble_table(
    fs,
    parts: Sequence[str],
    directory: str,
    schema: pa.Schema,
    compression: str,
    rows_per_group: int,
    num_shards: int = 0,
    target: int = TARGET_FILE_BYTES,
    part_bytes: Optional[int] = None,
) -> list[str]:
    """Writes the rows of ``parts`` (Parquet files of ``schema``), in order, to
    ``directory/part-SSSSS-of-NNNNN.parquet``; returns the paths written.
    ``part_bytes``: the parts' total size, when the caller has listed it."""
    if part_bytes is None:
        part_bytes = sum(m.size_in_bytes for found in fs.match(list(parts)) for m in found.metadata_list) if parts else 0
    count = shard_count(part_bytes, num_shards, target)
    total = sum(_rows(fs, p) for p in parts)
    # File k holds rows [cuts[k], cuts[k + 1]): the rows split evenly, in order.
    cuts = [total * k // count for k in range(count + 1)]
    paths = [fs.join(directory, shard_name(k, count)) for k in range(count)]
    k, row = 0, 0
    current = _File(fs, paths[0], schema, compression, rows_per_group)
    for table in _row_groups(fs, parts, schema):
        while table.num_rows:
            while k + 1 < count and row >= cuts[k + 1]:
                current.close()
                k += 1
                current = _File(fs, paths[k], schema, compression, rows_per_group)
            take = min(table.num_rows, cuts[k + 1] - row) if k + 1 < count else table.num_rows
            current.add(table.slice(0, take))
            table, row = table.slice(take), row + take
    current.close()
    for k in range(k + 1, count):  # files left without rows (more shards than rows)
        _File(fs, paths[k], schema, compression, rows_per_group).close()
    return paths
