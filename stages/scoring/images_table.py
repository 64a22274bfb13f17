"""Reading the images table's rows, which hold the bytes of every retrieved image
(keyed by image_id, the sha256): the scoring stage, its judge and the recycle
stage join documents' images with them."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems


def image_payload(row: Mapping[str, Any]) -> Optional[bytes]:
    """The bytes of an images-table row: in the row, or at its path (images.store=path)."""
    if row.get("bytes") is not None:
        return row["bytes"]
    if row.get("path"):
        with FileSystems.open(row["path"]) as fh:
            return fh.read()
    return None


def ok_rows_by_id(rows: beam.PCollection, label: str = "OkRowsById") -> beam.PCollection:
    """(image_id, row) for images-table rows of retrieved images."""
    return rows | label >> beam.FlatMap(
        lambda r: [(r["image_id"], r)] if r.get("image_id") and r.get("status") == "ok" else []
    )
