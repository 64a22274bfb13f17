"""The Beam transforms of ``mmcurate export``: a run's documents (or
pairs) with their image bytes joined in, as shards a trainer reads directly.

Sharding. A shard is a run of consecutive row groups of one ``documents`` (or
``pairs``) Parquet file, up to ``shard_size`` rows, numbered in file and row order:
shard ``k`` holds rows in the order the run wrote them, and each document's
``texts``/``images`` lists keep their interleaved order. The plan is made from the
files' footers before the pipeline starts, so rows are never shuffled: each shard
is read from its own row groups by the DoFn that writes it.

The join. Image bytes live once per image in the ``images`` table, keyed by
``image_id`` (sha256). Only compact keys cross the first shuffle: (image_id,
shard) references from the rows, and (image_id, images file, row group, row)
locations from the images table. The second step reads each images row group once
and sends the bytes of the images a shard uses to that shard (once per shard,
however many of its rows use the image); the last shuffle groups them by shard, and
the shard's writer reads its rows and writes the file. A worker holds one shard's
images at a time.

The shard formats and their stats are in ``pipeline/shard_formats.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from mmcurate.pipeline.beam_files import join, open_read, read_bytes, write_json
from mmcurate.pipeline.shard_formats import (
    EXTENSIONS,
    FORMATS,
    STATS_SUFFIX,
    WRITERS,
    CountingSink,
    ShardStats,
    document_samples,
    pair_samples,
)
from mmcurate.schemas.rows import STATUS_OK
from mmcurate.schemas.tables import DOCUMENTS, PAIRS

EXPORT_TABLES = (DOCUMENTS, PAIRS)
# Shard numbers, zero-padded as img2dataset pads them.
SHARD_DIGITS = 5
NAMESPACE = "export"


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``shard`` holds row groups ``row_groups`` of ``path``."""

    shard: int
    path: str
    row_groups: tuple[int, ...]
    rows: int

    @property
    def name(self) -> str:
        return str(self.shard).zfill(SHARD_DIGITS)


def plan_shards(files: Sequence[str], shard_size: int) -> list[ShardSpec]:
    """Consecutive row groups of each file, up to ``shard_size`` rows a shard (a
    larger row group is a shard of its own), numbered in file and row order."""
    specs: list[ShardSpec] = []
    for path in files:
        with open_read(path) as fh:
            meta = pq.ParquetFile(fh).metadata
        groups: list[int] = []
        rows = 0
        for i in range(meta.num_row_groups):
            n = meta.row_group(i).num_rows
            if groups and rows + n > shard_size:
                specs.append(ShardSpec(len(specs), path, tuple(groups), rows))
                groups, rows = [], 0
            groups.append(i)
            rows += n
        if groups:
            specs.append(ShardSpec(len(specs), path, tuple(groups), rows))
    return specs


def _read_groups(path: str, row_groups: Sequence[int], columns: Optional[list[str]] = None) -> pa.Table:
    with open_read(path) as fh:
        return pq.ParquetFile(fh).read_row_groups(list(row_groups), columns=columns)


# -- the join: compact keys first ------------------------------------------------


def image_refs(spec: ShardSpec, table: str) -> Iterable[tuple[str, int]]:
    """(image_id, shard) once per image the shard's rows use and lack the bytes of."""
    if table == DOCUMENTS:
        metas = _read_groups(spec.path, spec.row_groups, ["image_meta"]).column("image_meta").to_pylist()
        ids = {m["image_id"] for row in metas for m in row or () if m and m.get("image_id")}
    else:
        cols = _read_groups(spec.path, spec.row_groups, ["image_id", "bytes"])
        ids = {i for i, has in zip(cols.column("image_id").to_pylist(), cols.column("bytes").is_valid().to_pylist())
               if i and not has}
    for image_id in sorted(ids):
        yield image_id, spec.shard


def image_groups(files: Sequence[str]) -> list[tuple[str, int]]:
    """(images file, row group) for every row group of the images table."""
    groups = []
    for path in files:
        with open_read(path) as fh:
            groups += [(path, i) for i in range(pq.ParquetFile(fh).metadata.num_row_groups)]
    return groups


def image_locations(group: tuple[str, int]) -> Iterable[tuple[str, tuple[str, int, int]]]:
    """(image_id, (file, row group, row)) for each retrieved image of a row group."""
    path, rg = group
    cols = _read_groups(path, [rg], ["image_id", "status"]).to_pydict()
    for row, (image_id, status) in enumerate(zip(cols["image_id"], cols["status"])):
        if image_id and status == STATUS_OK:
            yield image_id, (path, rg, row)


def wanted_rows(element: tuple[str, dict]) -> Iterable[tuple[tuple[str, int], tuple[int, str, tuple[int, ...]]]]:
    """Joined (image_id: shards, locations) -> ((file, row group), (row, image_id, shards))."""
    image_id, joined = element
    shards = tuple(sorted(set(joined["refs"])))
    locations = sorted(joined["locations"])
    if shards and locations:
        path, rg, row = locations[0]
        yield (path, rg), (row, image_id, shards)


class ReadImageBytesFn(beam.DoFn):
    """Reads one images row group once and sends each wanted image's bytes to every
    shard that uses it: (shard, (image_id, format, bytes))."""

    def process(self, element: tuple[tuple[str, int], Iterable[tuple[int, str, tuple[int, ...]]]]):
        (path, rg), wanted = element
        cols = _read_groups(path, [rg], ["image_id", "format", "bytes", "path"])
        formats, paths = cols.column("format").to_pylist(), cols.column("path").to_pylist()
        data_column = cols.column("bytes")
        for row, image_id, shards in wanted:
            data = data_column[row].as_py()
            if data is None and paths[row]:  # images.store=path
                data = read_bytes(paths[row])
            if data is None:
                continue
            for shard in shards:
                yield shard, (image_id, formats[row], data)


# -- writing the shards ----------------------------------------------------------


class WriteShardFn(beam.DoFn):
    """Reads one shard's rows from their row groups, joins the images it was sent,
    writes the shard file and its stats JSON; yields the stats."""

    def __init__(self, output: str, fmt: str, table: str):
        self._output, self._format, self._table = output, fmt, table

    def setup(self) -> None:
        self._rows = beam.metrics.Metrics.counter(NAMESPACE, "rows")
        self._images = beam.metrics.Metrics.counter(NAMESPACE, "images")
        self._missing = beam.metrics.Metrics.counter(NAMESPACE, "images_missing")

    def process(self, element: tuple[int, dict]) -> Iterable[dict[str, Any]]:
        _, joined = element
        spec: ShardSpec = list(joined["spec"])[0]
        images = {image_id: (fmt, data) for image_id, fmt, data in joined["images"]}
        rows = _read_groups(spec.path, spec.row_groups).to_pylist()
        name = f"{spec.name}.{EXTENSIONS[self._format]}"
        stats = ShardStats(spec.name, name, self._format, self._table, spec.path)
        make = document_samples if self._table == DOCUMENTS else pair_samples
        with FileSystems.create(join(self._output, name)) as fh:
            sink = CountingSink(fh)
            WRITERS[self._format](sink, self._table, make(rows, images, stats), spec.name)
        stats.bytes = sink.written
        data = stats.as_dict()
        write_json(join(self._output, spec.name + STATS_SUFFIX), data)
        self._rows.inc(stats.rows)
        self._images.inc(stats.images)
        self._missing.inc(stats.images_missing)
        yield data


class ExportShards(beam.PTransform):
    """Shards of ``table`` rows with their image bytes joined in, written under
    ``output`` in ``fmt``; returns the PCollection of per-shard stats."""

    def __init__(self, specs: Sequence[ShardSpec], image_files: Sequence[str], output: str, fmt: str, table: str):
        super().__init__()
        if fmt not in FORMATS:
            raise ValueError(f"export format {fmt!r}: one of {', '.join(FORMATS)}")
        if table not in EXPORT_TABLES:
            raise ValueError(f"export table {table!r}: one of {', '.join(EXPORT_TABLES)}")
        self._specs, self._image_files = list(specs), list(image_files)
        self._output, self._format, self._table = output, fmt, table

    def expand(self, pbegin):
        table = self._table
        specs = pbegin | "Shards" >> beam.Create(self._specs)
        refs = specs | "ImageRefs" >> beam.FlatMap(image_refs, table)
        groups = pbegin | "ImageGroups" >> beam.Create(image_groups(self._image_files))
        locations = groups | "ImageLocations" >> beam.FlatMap(image_locations)
        wanted = (
            {"refs": refs, "locations": locations}
            | "JoinImageIds" >> beam.CoGroupByKey()
            | "WantedRows" >> beam.FlatMap(wanted_rows)
            | "ByImageRowGroup" >> beam.GroupByKey()
        )
        shard_images = wanted | "ReadImageBytes" >> beam.ParDo(ReadImageBytesFn())
        keyed = specs | "ByShard" >> beam.Map(lambda s: (s.shard, s))
        return (
            {"spec": keyed, "images": shard_images}
            | "JoinShards" >> beam.CoGroupByKey()
            | "WriteShards" >> beam.ParDo(WriteShardFn(self._output, self._format, self._table))
        )
