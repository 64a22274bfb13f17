"""Stage `write`: the output tables as Parquet shards.

Shards are written by Beam's Parquet sink, which writes temporary files and
renames them at finalisation, so no half-written shard ever carries a final name.
The last phase of a run writes into its staging directory; ``publish`` then makes
them the output's current version in one atomic switch (see ``pipeline.publication``).
"""

from __future__ import annotations

import posixpath

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas.arrow_rows import table_row
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, IMAGES, PAIRS, SCHEMAS
from mmcurate.stages.config import WriteConfig

STAGE = "write"


def table_prefix(directory: str, table: str, name: str = "part") -> str:
    return FileSystems.join(directory, table, name) if "://" in directory else posixpath.join(directory, table, name)


class WriteTable(beam.PTransform):
    """Rows (dicts) of one table to ``DIR/<table>/part-SSSSS-of-NNNNN.parquet``
    (``name`` replaces ``part``)."""

    def __init__(self, directory: str, table: str, config: WriteConfig, label: str | None = None, name: str = "part"):
        super().__init__(label)
        self._directory = directory
        self._table = table
        self._config = config
        self._name = name

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        return rows | "WriteParquet" >> beam.io.WriteToParquet(
            table_prefix(self._directory, self._table, self._name),
            schema=SCHEMAS[self._table],
            codec=self._config.compression,
            record_batch_size=self._config.row_group_size,
            # Each batch of row_group_size rows is written as its own row group. Beam's
            # default (64 MB) collects batches up to 64 MB per table before writing
            # them, which on a large run keeps most of a table's rows in memory.
            row_group_buffer_size=1,
            use_compliant_nested_type=True,
            file_name_suffix=".parquet",
            num_shards=self._config.num_shards,
        )


class WriteCorpus(beam.PTransform):
    """Kept documents, decisions and (optionally) images-table and pairs-table rows
    (``ImageRow``, ``PairRow``) to their tables under ``directory``:
    ``(documents, decisions[, image_rows[, pair_rows]]) | WriteCorpus(...)``.
    The images and pairs tables are written (possibly empty) either way, unless
    ``given_only``: then only the tables given are written (a caller that makes the
    empty tables itself saves the eight Beam stages of two empty sinks). ``name``
    replaces ``part`` in the files' names."""

    def __init__(self, directory: str, config: WriteConfig, label: str | None = None, given_only: bool = False,
                 name: str = "part"):
        super().__init__(label)
        self._directory = directory
        self._config = config
        self._given_only = given_only
        self._name = name

    def expand(self, pcolls: tuple[beam.PCollection, ...]) -> dict[str, beam.PCollection]:
        documents, decisions, *rest = pcolls
        if not self._given_only:
            if not rest:
                rest.append(documents.pipeline | "NoImageRows" >> beam.Create([]))
            if len(rest) < 2:
                rest.append(documents.pipeline | "NoPairRows" >> beam.Create([]))
        labels = (("Document", DOCUMENTS), ("Decision", DECISIONS), ("Image", IMAGES), ("Pair", PAIRS))
        return {
            table: rows
            | f"{label}Rows" >> beam.Map(table_row, table)
            | f"Write{label}s" >> WriteTable(self._directory, table, self._config, name=self._name)
            for (label, table), rows in zip(labels, (documents, decisions, *rest))
        }
