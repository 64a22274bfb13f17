"""The shard formats of ``mmcurate export`` and the stats JSON written beside each
shard: how a shard's rows, with their image bytes joined in, become a file.

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
import tarfile
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from mmcurate.schemas.tables import DOCUMENTS, DOCUMENTS_SCHEMA, PAIRS_SCHEMA

WEBDATASET = "webdataset"
JSONL = "jsonl"
PARQUET_EMBEDDED = "parquet-embedded"
FORMATS = (WEBDATASET, JSONL, PARQUET_EMBEDDED)
EXTENSIONS = {WEBDATASET: "tar", JSONL: "jsonl", PARQUET_EMBEDDED: "parquet"}
STATS_SUFFIX = "_stats.json"
# In-shard indices, zero-padded as img2dataset pads them.
INDEX_DIGITS = 4

# Images formats as the images table names them (Pillow's) -> file extensions.
_EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif", "BMP": "bmp", "TIFF": "tif", "SVG": "svg"}


def image_extension(fmt: Optional[str]) -> str:
    return _EXTENSIONS.get((fmt or "").upper(), (fmt or "").lower() or "bin")


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


def document_samples(rows: list[dict], images: dict[str, tuple[str, bytes]], stats: ShardStats):
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


def pair_samples(rows: list[dict], images: dict[str, tuple[str, bytes]], stats: ShardStats):
    for row in rows:
        found = (row.get("format"), row["bytes"]) if row.get("bytes") is not None else images.get(row.get("image_id") or "")
        stats.count_image(found)
        stats.rows += 1
        stats.text_chars += len(row.get("caption") or "")
        yield row, found


class CountingSink(io.RawIOBase):
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
