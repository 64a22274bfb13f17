"""Staging shards in Beam: records written once between the phases of a run, and
read back in row-group units.

A run is cut into phases at its corpus-wide stages (``pipeline.build``): the
documents a phase keeps are written here, and the next phase reads them back,
twice if it must — once to compute compact records (ids, hashes, signatures,
links) for its shuffles, once to apply the verdicts of those shuffles. Full
documents therefore never cross a shuffle, and no runner holds them in memory
(Beam's DirectRunner keeps every shuffled collection in memory).

The files, their layout, units and keys are the Beam-free
``engines/staging_files.py``; this module holds the transforms: Beam's Parquet
sink writes a table (temporary files renamed at finalisation, so a half-written
shard never carries a final name), ``ReadStaged`` spreads a table's units over
workers, and ``VerdictsByUnit`` groups a shuffle's verdicts by unit, so a worker
holds the verdicts of one unit, never of the corpus. The first phase of a run
writes its tables per input range instead (``stages/range_staging.py``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems

from mmcurate.stages.engines import staging_files as files
from mmcurate.stages.engines.staging_files import ROW_GROUP_BYTES, ROWS_PER_UNIT, STAGED_SCHEMA, to_row


def list_units(path: str) -> Iterator[str]:
    return files.list_units(FileSystems, path)


def read_unit(unit: str) -> Iterator[Any]:
    """The records of one unit (``"<row group>:<path>"``), in the order they were written."""
    return files.read_unit(FileSystems, unit)


class WriteStaged(beam.PTransform):
    """Records (any picklable value) to staging shards under ``directory``
    (``<name>-SSSSS-of-NNNNN.parquet``); returns the sink's output (the written file
    names, once finalised)."""

    def __init__(self, directory: str, key: Callable[[Any], str] = lambda r: "", label: str | None = None,
                 name: str = "part"):
        super().__init__(label)
        self._directory = directory
        self._key = key
        self._name = name

    def expand(self, records: beam.PCollection) -> beam.PCollection:
        return (
            records
            | "ToRows" >> beam.Map(to_row, self._key)
            | "WriteShards"
            >> beam.io.WriteToParquet(
                FileSystems.join(self._directory, self._name),
                schema=STAGED_SCHEMA,
                codec="zstd",
                record_batch_size=ROWS_PER_UNIT,
                row_group_buffer_size=ROW_GROUP_BYTES,
                file_name_suffix=".parquet",
            )
        )


class StagedRecords(NamedTuple):
    """Staged records read back: the units, and each record keyed by its unit."""

    units: beam.PCollection  # str
    records: beam.PCollection  # (unit, record)


def _keyed(unit: str) -> Iterator[tuple[str, Any]]:
    for record in read_unit(unit):
        yield unit, record


class ReadStaged(beam.PTransform):
    """Staging tables (their directories) -> ``StagedRecords``. The files are listed
    when the pipeline runs, not when it is built (the first phase writes a file per
    input range: a crawl's worth of names would not fit in a job's graph), and the
    units are spread over workers by a shuffle of their names, never of records."""

    def __init__(self, directories: Sequence[str], label: str | None = None):
        super().__init__(label)
        self._patterns = [files.table_pattern(FileSystems, d) for d in directories]

    def expand(self, pbegin) -> StagedRecords:
        units = (
            pbegin
            | "Tables" >> beam.Create(self._patterns)
            | "MatchFiles" >> fileio.MatchAll(fileio.EmptyMatchTreatment.ALLOW)
            | "Finished" >> beam.FlatMap(_finished)
            | "ListUnits" >> beam.FlatMap(list_units)
            | "SpreadUnits" >> beam.Reshuffle()
        )
        return StagedRecords(units, units | "ReadUnits" >> beam.FlatMap(_keyed))


def _finished(metadata) -> Iterator[str]:
    if files.is_finished(metadata.path):
        yield metadata.path


def read_all(directories: Sequence[str], pbegin, label: str) -> beam.PCollection:
    """The records of staging tables, unkeyed (a streaming read, spread by unit)."""
    staged = pbegin | label >> ReadStaged(directories)
    return staged.records | f"{label}Values" >> beam.Values()


class VerdictsByUnit(beam.PTransform):
    """``(units, verdicts)`` -> ``(unit key, {"unit": [...], "verdicts": [...]})``,
    every unit present (with no verdicts when none names it). A unit's key is
    ``key(unit)``, and ``"unit"`` names the units of that key; with no ``key`` the key
    is the unit itself and ``"unit"`` holds None (the name is not carried twice).
    ``verdicts`` are ``(unit key, (record key, verdict))`` pairs. A short key
    (dedup's ``unit_token``) keeps the shuffle small; units whose keys collide share
    one group, which names them all."""

    def __init__(self, key: Optional[Callable[[str], str]] = None, label: str | None = None):
        super().__init__(label)
        self._key = key

    def expand(self, pcolls) -> beam.PCollection:
        units, verdicts = pcolls
        return {
            "unit": units | "UnitKeys" >> beam.Map(_keyed_unit, self._key),
            "verdicts": verdicts,
        } | "JoinByUnit" >> beam.CoGroupByKey()


def _keyed_unit(unit: str, key: Optional[Callable[[str], str]]) -> tuple[str, Optional[str]]:
    return (unit, None) if key is None else (key(unit), unit)
