"""Beam transforms and shard formats of ``mmcurate export``: a run's documents (or
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

Formats (``FORMATS``):

* ``webdataset``: ``NNNNN.tar`` in the WebDataset convention (files that share a key
  up to the first dot make one sample). A document is ``KEY.json`` (the row, with
  ``texts``/``images`` interleaved as in the Parquet) and ``KEY.I.EXT`` for the image
  at position ``I`` of the lists; a pair is ``KEY.EXT``, ``KEY.txt`` (the caption)
  and ``KEY.json``, as img2dataset writes them. Keys are ``NNNNNIIII`` (shard and
  index, zero-padded, as img2dataset numbers samples).
* ``jsonl``: ``NNNNN.jsonl``, one row a line; documents gain ``image_bytes`` (base64
  per position, null at text positions and for images without bytes), pairs get
  their ``bytes`` as base64.
* ``parquet-embedded``: ``NNNNN.parquet`` with the table's own schema; documents gain
  ``image_bytes`` (``list<binary>``, aligned with ``images``), pairs have ``bytes``
  filled in.

Each shard also gets ``NNNNN_stats.json`` (rows, images embedded and missing, bytes,
languages), as img2dataset writes ``*_stats.json`` beside its shards.
"""

from __future__ import annotations

import base64
import io
import json
import posixpath
import tarfile
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas.tables import DOCUMENTS, DOCUMENTS_SCHEMA, PAIRS, PAIRS_SCHEMA

WEBDATASET = "webdataset"
JSONL = "jsonl"
PARQUET_EMBEDDED = "parquet-embedded"
FORMATS = (WEBDATASET, JSONL, PARQUET_EMBEDDED)
EXTENSIONS = {WEBDATASET: "tar", JSONL: "jsonl", PARQUET_EMBEDDED: "parquet"}
EXPORT_TABLES = (DOCUMENTS, PAIRS)
STATS_SUFFIX = "_stats.json"
# Shard numbers and in-shard indices, zero-padded as img2dataset pads them.
SHARD_DIGITS = 5
INDEX_DIGITS = 4
NAMESPACE = "export"
STATUS_OK = "ok"

# Images formats as the images table names them (Pillow's) -> file extensions.
_EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif", "BMP": "bmp", "TIFF": "tif", "SVG": "svg"}


def image_extension(fmt: Optional[str]) -> str:
    return _EXTENSIONS.get((fmt or "").upper(), (fmt or "").lower() or "bin")


def _join(directory: str, name: str) -> str:
    return FileSystems.join(directory, name) if "://" in directory else posixpath.join(directory, name)


def _open(path: str):
    return open(path, "rb") if "://" not in path else FileSystems.open(path)


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
        with _open(path) as fh:
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
    with _open(path) as fh:
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
        with _open(path) as fh:
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
                with FileSystems.open(paths[row]) as fh:
                    data = fh.read()
            if data is None:
                continue
            for shard in shards:
                yield shard, (image_id, formats[row], data)


# -- shard formats ---------------------------------------------------------------


def _entries_to_dict(entries: Optional[list[dict]]) -> dict[str, Any]:
    return {e["key"]: e["value"] for e in entries or ()}


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON: signals/metadata lists of key-value entries become objects,
    binary columns are left out (the images travel as files or base64 beside)."""
    out = {}
    for key, value in row.items():
        if key in ("signals", "metadata"):
            value = _entries_to_dict(value)
        elif isinstance(value, (bytes, bytearray)):
            continue
        out[key] = value
    return out


@dataclass
class ShardStats:
    """What one shard holds; written as NNNNN_stats.json."""

    shard: str
    file: str
    format: str
    table: str
    source: str
    rows: int = 0
    images: int = 0
    images_missing: int = 0
    image_bytes: int = 0
    text_chars: int = 0
    bytes: int = 0

    def __post_init__(self) -> None:
        self.languages: Counter[str] = Counter()
        self.image_formats: Counter[str] = Counter()

    def count_image(self, found: Optional[tuple[str, bytes]]) -> None:
        """An image position: embedded (format, bytes), or missing (None)."""
        if found is None:
            self.images_missing += 1
            return
        self.images += 1
        self.image_bytes += len(found[1])
        self.image_formats[image_extension(found[0])] += 1

    def as_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["languages"] = dict(sorted(self.languages.items(), key=lambda kv: (-kv[1], kv[0])))
        data["image_formats"] = dict(sorted(self.image_formats.items()))
        return data


def _document_samples(rows: list[dict], images: dict[str, tuple[str, bytes]], stats: ShardStats):
    """Each document row with the bytes of its images by position (None where a
    position is text, or an image without bytes)."""
    for row in rows:
        per_position: list[Optional[tuple[str, bytes]]] = []
        for src, meta in zip(row["images"] or (), row["image_meta"] or ()):
            if src is None:
                per_position.append(None)
                continue
            found = images.get((meta or {}).get("image_id") or "")
            stats.count_image(found)
            per_position.append(found)
        stats.rows += 1
        stats.languages[row.get("language") or ""] += 1
        stats.text_chars += sum(len(t) for t in row["texts"] or () if t)
        yield row, per_position


def _pair_samples(rows: list[dict], images: dict[str, tuple[str, bytes]], stats: ShardStats):
    for row in rows:
        found = (row.get("format"), row["bytes"]) if row.get("bytes") is not None else images.get(row.get("image_id") or "")
        stats.count_image(found)
        stats.rows += 1
        stats.text_chars += len(row.get("caption") or "")
        yield row, found


class _CountingSink(io.RawIOBase):
    """Counts what goes through it to the file underneath (object-store handles
    have no tell())."""

    def __init__(self, fh) -> None:
        self._fh = fh
        self.written = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._fh.write(data)
        self.written += len(data)
        return len(data)


def _tar_add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=False).encode("utf-8")


def write_webdataset(sink, table: str, samples, shard: str) -> None:
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for index, (row, images) in enumerate(samples):
            key = shard + str(index).zfill(INDEX_DIGITS)
            if table == DOCUMENTS:
                record = _jsonable(row)
                record["key"] = key
                record["image_files"] = [
                    f"{key}.{i}.{image_extension(found[0])}" if found else None for i, found in enumerate(images)
                ]
                _tar_add(tar, f"{key}.json", _json_bytes(record))
                for i, found in enumerate(images):
                    if found:
                        _tar_add(tar, f"{key}.{i}.{image_extension(found[0])}", found[1])
            else:
                record = _jsonable(row)
                record["key"] = key
                if images:
                    _tar_add(tar, f"{key}.{image_extension(images[0])}", images[1])
                _tar_add(tar, f"{key}.txt", (row.get("caption") or "").encode("utf-8"))
                _tar_add(tar, f"{key}.json", _json_bytes(record))


def write_jsonl(sink, table: str, samples, shard: str) -> None:
    for row, images in samples:
        record = _jsonable(row)
        if table == DOCUMENTS:
            record["image_bytes"] = [base64.b64encode(f[1]).decode("ascii") if f else None for f in images]
        else:
            record["bytes"] = base64.b64encode(images[1]).decode("ascii") if images else None
            if images and not record.get("format"):
                record["format"] = images[0]
        sink.write(_json_bytes(record) + b"\n")


EMBEDDED_DOCUMENTS_SCHEMA = DOCUMENTS_SCHEMA.append(pa.field("image_bytes", pa.list_(pa.binary())))


def write_parquet(sink, table: str, samples, shard: str) -> None:
    rows = []
    for row, images in samples:
        row = dict(row)
        if table == DOCUMENTS:
            row["image_bytes"] = [f[1] if f else None for f in images]
        else:
            if images:
                row["bytes"] = images[1]
                row["format"] = row.get("format") or images[0]
        rows.append(row)
    schema = EMBEDDED_DOCUMENTS_SCHEMA if table == DOCUMENTS else PAIRS_SCHEMA
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink, compression="zstd")


WRITERS = {WEBDATASET: write_webdataset, JSONL: write_jsonl, PARQUET_EMBEDDED: write_parquet}


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
        make = _document_samples if self._table == DOCUMENTS else _pair_samples
        with FileSystems.create(_join(self._output, name)) as fh:
            sink = _CountingSink(fh)
            WRITERS[self._format](sink, self._table, make(rows, images, stats), spec.name)
        stats.bytes = sink.written
        data = stats.as_dict()
        with FileSystems.create(_join(self._output, spec.name + STATS_SUFFIX), mime_type="application/json") as fh:
            fh.write((json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
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
