"""``mmcurate plan``'s inputs, read through Beam's filesystems (local, gs://, s3://).

The runs' ``documents/`` and ``decisions/`` tables become one ``PageRead`` per page
they read (``ReadRunPages``); the index files (``stages/engines/plan_index.py``:
Parquet or CSV with the cc-index-table column names) are matched, spread over
workers (``IndexFiles``) and read in batches of columns (``plan_index_batches``).
``check_plan_index`` tells the CLI, before a pipeline starts, whether an index file
has the columns ``plan`` needs.
"""

from __future__ import annotations

import posixpath
from typing import Iterator, Sequence

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas.document import SUBJECT_PAGE
from mmcurate.stages.engines.index_files import csv_batches, header_columns, is_csv, parquet_batches, parquet_columns
from mmcurate.stages.engines.plan_index import CSV_TYPES, BadPlanIndex, plan_columns
from mmcurate.stages.engines.source_plan import PageRead, image_signals, read_pointer

NAMESPACE = "plan"


# -- the index -------------------------------------------------------------------------


def index_columns(path: str) -> list[str]:
    """The column names of an index file (the Parquet schema, or the CSV header)."""
    try:
        if is_csv(path):
            with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as fh:
                return header_columns(fh.readline(), path)
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            return parquet_columns(fh)
    except Exception as exc:
        raise BadPlanIndex(f"index {path}: not a readable Parquet or CSV file: {exc}") from exc


def check_plan_index(path: str) -> list[str]:
    """The columns ``plan`` will read from ``path``; BadPlanIndex if one it needs is missing."""
    return plan_columns(path, index_columns(path))


def plan_index_batches(path: str) -> Iterator[dict[str, list]]:
    """The index file's rows in batches, as column lists (absent optional columns
    are absent keys)."""
    columns = check_plan_index(path)
    if is_csv(path):
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as fh:
            for batch in csv_batches(fh, path, columns, CSV_TYPES):
                yield batch.to_pydict()
        return
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        for batch in parquet_batches(fh, columns):
            yield batch.to_pydict()


class IndexFiles(beam.PTransform):
    """Index patterns -> matched file paths, spread over workers."""

    def __init__(self, patterns: Sequence[str]):
        super().__init__()
        self._patterns = list(patterns)

    def expand(self, pbegin):
        return (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "Match" >> fileio.MatchAll(fileio.EmptyMatchTreatment.ALLOW)
            | "Paths" >> beam.Map(lambda metadata: metadata.path)
            | "Spread" >> beam.Reshuffle()
        )


# -- runs --------------------------------------------------------------------------------


class ReadRunTableFn(beam.DoFn):
    """A run's table file -> one ``PageRead`` per page (kept documents; decision rows
    about pages: rejected or failed)."""

    def __init__(self, min_images: int):
        self._min_images = min_images

    def process(self, item: tuple[str, str]) -> Iterator[PageRead]:
        table, path = item
        counter = beam.metrics.Metrics.counter(NAMESPACE, "pages_read")
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            first = "num_images" if table == "documents" else "subject"
            columns = [first, "url", "warc_file", "warc_offset", "signals"]
            for batch in parquet_batches(fh, columns):
                data = batch.to_pydict()
                for value, url, warc, offset, signals in zip(*(data[c] for c in columns)):
                    if table == "documents":
                        kept, images = True, int(value or 0)
                    elif value == SUBJECT_PAGE:
                        kept, images = False, 0
                    else:
                        continue  # image and pair rows are not pages
                    counter.inc()
                    pointer = read_pointer(warc, offset)
                    success = kept and images >= self._min_images
                    yield PageRead(pointer, url or "", success, kept, images, *image_signals(signals))


def _table_files(item: tuple[str, str]) -> Iterator[tuple[str, str]]:
    run_dir, table = item
    pattern = posixpath.join(run_dir.rstrip("/"), table, "*.parquet") if "://" in run_dir else f"{run_dir.rstrip('/')}/{table}/*.parquet"
    for metadata in FileSystems.match([pattern])[0].metadata_list:
        yield table, metadata.path


class ReadRunPages(beam.PTransform):
    """Run directories -> ``PageRead`` records, one per page they read."""

    def __init__(self, run_dirs: Sequence[str], min_images: int):
        super().__init__()
        self._runs = list(run_dirs)
        self._min_images = min_images

    def expand(self, pbegin):
        tables = [(run, table) for run in self._runs for table in ("documents", "decisions")]
        return (
            pbegin
            | "Tables" >> beam.Create(tables)
            | "TableFiles" >> beam.FlatMap(_table_files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadTables" >> beam.ParDo(ReadRunTableFn(self._min_images))
        )
