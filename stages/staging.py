"""Staging shards: records written once between the phases of a run, and read back
in row-group units.

A run is cut into phases at its corpus-wide stages (``pipeline.build``): the
documents a phase keeps are written here, and the next phase reads them back,
twice if it must — once to compute compact records (ids, hashes, signatures,
links) for its shuffles, once to apply the verdicts of those shuffles. Full
documents therefore never cross a shuffle, and no runner holds them in memory
(Beam's DirectRunner keeps every shuffled collection in memory).

A staging table is Parquet (Beam's Parquet sink: temporary files renamed at
finalisation, so a half-written shard never carries a final name) with two columns:
``key`` (the record's key, for looking at a shard by hand) and ``record`` (the
pickled record, zstd-compressed in the file). Row groups hold at most
``ROWS_PER_UNIT`` records; a *unit* (``"<row group>:<path>"``) is one row group,
the grain at which staged records are spread over workers and at which verdicts
are joined back: each unit's verdicts are grouped by unit, so a worker holds the
verdicts of one unit, never of the corpus.
"""

from __future__ import annotations

import pickle
import posixpath
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas import Document

STAGED_SCHEMA = pa.schema([("key", pa.string()), ("record", pa.binary())])
ROWS_PER_UNIT = 256
_ROW_GROUP_BYTES = 8 * 1024 * 1024
_KEY_SEP = "\x00"


def record_key(doc: Document) -> str:
    """A key unique to one record of the input: the doc_id with the record's file and
    offset, so the same WARC read under two names gives two keys (and one survivor
    in dedup), never one key shared by two documents."""
    prov = doc.provenance
    return f"{doc.doc_id}|{prov.offset}|{prov.warc_file}"


def unit_key(unit: str, key: str) -> str:
    """The join key of a staged record: its unit, then its own key."""
    return f"{unit}{_KEY_SEP}{key}"


def split_unit_key(joined: str) -> tuple[str, str]:
    unit, key = joined.split(_KEY_SEP, 1)
    return unit, key


def _join(*parts: str) -> str:
    return FileSystems.join(*parts) if "://" in parts[0] else posixpath.join(*parts)


def staged_files(directory: str) -> list[str]:
    """The finished shards of a staging table (sorted)."""
    matched = FileSystems.match([_join(directory, "*.parquet")])[0].metadata_list
    return sorted(m.path for m in matched)


def _to_row(record: Any, key: Callable[[Any], str]) -> dict:
    return {"key": key(record), "record": pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)}


class WriteStaged(beam.PTransform):
    """Records (any picklable value) to staging shards under ``directory``; returns
    the sink's output (the written file names, once finalised)."""

    def __init__(self, directory: str, key: Callable[[Any], str] = lambda r: "", label: str | None = None):
        super().__init__(label)
        self._directory = directory
        self._key = key

    def expand(self, records: beam.PCollection) -> beam.PCollection:
        return (
            records
            | "ToRows" >> beam.Map(_to_row, self._key)
            | "WriteShards"
            >> beam.io.WriteToParquet(
                _join(self._directory, "part"),
                schema=STAGED_SCHEMA,
                codec="zstd",
                record_batch_size=ROWS_PER_UNIT,
                row_group_buffer_size=_ROW_GROUP_BYTES,
                file_name_suffix=".parquet",
            )
        )


def _open(path: str):
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def list_units(path: str) -> Iterator[str]:
    """One unit per row group of a staged shard."""
    with _open(path) as fh:
        groups = pq.ParquetFile(fh).metadata.num_row_groups
    for group in range(groups):
        yield f"{group}:{path}"


def read_unit(unit: str) -> Iterator[Any]:
    """The records of one unit, in the order they were written."""
    group, path = unit.split(":", 1)
    with _open(path) as fh:
        column = pq.ParquetFile(fh).read_row_group(int(group), columns=["record"]).column("record")
    for chunk in column.chunks:
        for i in range(len(chunk)):
            yield pickle.loads(chunk[i].as_buffer())


class StagedRecords(NamedTuple):
    """Staged records read back: the units, and each record keyed by its unit."""

    units: beam.PCollection  # str
    records: beam.PCollection  # (unit, record)


def _keyed(unit: str) -> Iterator[tuple[str, Any]]:
    for record in read_unit(unit):
        yield unit, record


class ReadStaged(beam.PTransform):
    """Staged shards (paths known when the pipeline is built) -> ``StagedRecords``.
    The units are spread over workers by a shuffle of their names, never of records."""

    def __init__(self, paths: Sequence[str], label: str | None = None):
        super().__init__(label)
        self._paths = list(paths)

    def expand(self, pbegin) -> StagedRecords:
        units = (
            pbegin
            | "Shards" >> beam.Create(self._paths)
            | "ListUnits" >> beam.FlatMap(list_units)
            | "SpreadUnits" >> beam.Reshuffle()
        )
        return StagedRecords(units, units | "ReadUnits" >> beam.FlatMap(_keyed))


def read_all(paths: Sequence[str], pbegin, label: str) -> beam.PCollection:
    """The records of staged shards, unkeyed (a streaming read, spread by unit)."""
    staged = pbegin | label >> ReadStaged(paths)
    return staged.records | f"{label}Values" >> beam.Values()


class VerdictsByUnit(beam.PTransform):
    """``(unit, (key, verdict))`` pairs and the units -> ``(unit, {"unit": ..., "verdicts": [...]})``
    per unit, every unit present (with no verdicts when none names it)."""

    def expand(self, pcolls) -> beam.PCollection:
        units, verdicts = pcolls
        return {
            "unit": units | "UnitKeys" >> beam.Map(lambda u: (u, None)),
            "verdicts": verdicts,
        } | "JoinByUnit" >> beam.CoGroupByKey()


def by_key(verdicts: Iterable[tuple[str, Any]]) -> dict[str, list]:
    grouped: dict[str, list] = {}
    for key, verdict in verdicts:
        grouped.setdefault(key, []).append(verdict)
    return grouped
