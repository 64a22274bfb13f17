"""Reading the images table's rows (``schemas.rows.ImageRow``), which hold the
bytes of every retrieved image, keyed by image_id (the sha256): the scoring
stage, its judge and the recycle stage join documents' images with them."""

from __future__ import annotations

from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas.rows import ImageRow


def image_payload(row: ImageRow) -> Optional[bytes]:
    """The bytes of an image row: in the row, or at its path (images.store=path)."""
    if row.bytes is not None:
        return row.bytes
    if row.path:
        with FileSystems.open(row.path) as fh:
            return fh.read()
    return None


def _retrieved(row: ImageRow) -> list[tuple[str, ImageRow]]:
    return [(row.image_id, row)] if row.retrieved else []


def retrieved_rows_by_id(rows: beam.PCollection, label: str = "OkRowsById") -> beam.PCollection:
    """(image_id, row) for the rows of retrieved images (``ImageRow.retrieved``)."""
    return rows | label >> beam.FlatMap(_retrieved)
