"""Rows of the images table: one per retrieved image_id (exact dedup: all its URLs
in one row, its bytes once), one per URL whose image was not retrieved or refused.

Image bytes never cross a shuffle when a blob directory is given: ``StashBytesFn``
appends them to a file of its bundle and the join carries ``(path, offset,
length)``; ``ImageRowFn`` reads them back for the row (or the file store).
"""

from __future__ import annotations

import dataclasses
import posixpath
import uuid
from typing import Iterable, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import reasons
from mmcurate.stages.config import ImagesConfig
from mmcurate.stages.engines.image_decode import extension
from mmcurate.schemas.rows import NO_PROVENANCE, SOURCE_WARC, STATUS_OK, STATUS_REJECTED, ImageRow
from mmcurate.stages.engines.image_result import ImageResult
from mmcurate.stages.engines.phash_clusters import Cluster, too_frequent

Blob = tuple[str, int, int]  # (path, offset, length) of stashed bytes


def failed_image_row(result: ImageResult) -> ImageRow:
    """The images-table row of a URL whose image was not retrieved or was refused."""
    return ImageRow(
        image_id=result.image_id,
        urls=(result.url,),
        status=result.status,
        reason=result.reason,
        detail=result.detail,
        source=result.source,
        content_type=result.content_type,
        format=result.format,
        width=result.width,
        height=result.height,
        num_bytes=result.num_bytes,
        phash=result.phash,
        provenance=result.provenance or NO_PROVENANCE,
    )


class StashBytesFn(beam.DoFn):
    """Retrieved images -> ``(image_id, (result without bytes, blob))``: the bytes are
    appended to a file of this bundle under ``directory`` and the blob ``(path,
    offset, length)`` points at them, so that image bytes never cross a shuffle."""

    def __init__(self, directory: str):
        self._directory = directory

    def start_bundle(self) -> None:
        self._fh = None
        self._path = ""
        self._offset = 0

    def process(self, result: ImageResult) -> Iterable:
        if self._fh is None:
            join = FileSystems.join if "://" in self._directory else posixpath.join
            self._path = join(self._directory, f"blobs-{uuid.uuid4().hex}.bin")
            self._fh = FileSystems.create(self._path)
            self._offset = 0
        data = result.data or b""
        self._fh.write(data)
        blob = (self._path, self._offset, len(data))
        self._offset += len(data)
        yield result.image_id, (result.summary(), blob)

    def finish_bundle(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_blob(blob: Blob) -> bytes:
    path, offset, length = blob
    with FileSystems.open(path) as fh:
        fh.seek(offset)
        return fh.read(length)


def _with_bytes(result: ImageResult, blob: Optional[Blob]) -> ImageResult:
    return result if blob is None else dataclasses.replace(result, data=read_blob(blob))


class ImageRowFn(beam.DoFn):
    """One images-table row per retrieved image_id, with all its URLs; the bytes go
    in the row or, with ``images.store: path``, to ``image_dir/<id[:2]>/<id>.<ext>``.
    The results come with their bytes, or as ``(result, blob)`` (``StashBytesFn``)."""

    def __init__(self, config: ImagesConfig):
        self._config = config

    def process(self, element: tuple[str, dict]) -> Iterable[ImageRow]:
        image_id, joined = element
        entries = [e if isinstance(e, tuple) else (e, None) for e in joined["image"]]
        entries.sort(key=lambda e: (e[0].source != SOURCE_WARC, e[0].url))
        results = [result for result, _ in entries]
        if not results:
            return
        clusters = list(joined["cluster"])
        cluster = clusters[0] if clusters else Cluster(image_id, 0)
        first = _with_bytes(*entries[0])
        refused = too_frequent(cluster, self._config.max_doc_frequency)
        stored = {}
        if not refused:
            stored = {"bytes": first.data} if self._config.store == "bytes" else {"path": self._store(image_id, first)}
        yield dataclasses.replace(
            failed_image_row(first),
            urls=tuple(sorted({u for r in results for u in (r.url, r.source_url) if u})),
            status=STATUS_REJECTED if refused else STATUS_OK,
            reason=reasons.IMAGE_TOO_FREQUENT if refused else "",
            duplicate_of=cluster.rep if cluster.rep != image_id else None,
            doc_frequency=cluster.doc_frequency,
            **stored,
        )

    def _store(self, image_id: str, result: ImageResult) -> str:
        directory = self._config.image_dir
        join = FileSystems.join if "://" in directory else posixpath.join
        path = join(directory, image_id[:2], f"{image_id}.{extension(result.format)}")
        if not FileSystems.exists(path):
            with FileSystems.create(path) as fh:
                fh.write(result.data)
        return path


def _is_ok(result: ImageResult) -> bool:
    return result.ok


def _not_ok(result: ImageResult) -> bool:
    return not result.ok


def _by_image_id(result: ImageResult) -> tuple[str, ImageResult]:
    return result.image_id, result


class ImageTableRows(beam.PTransform):
    """``(results, summaries, clusters) | ImageTableRows(config, blob_dir)`` ->
    ``schemas.rows.ImageRow`` rows of the images table. ``results`` carry bytes, ``summaries`` are the same
    results without them, ``clusters`` are ``(image_id, Cluster)``."""

    def __init__(self, config: ImagesConfig, blob_dir: Optional[str] = None, label: Optional[str] = None):
        super().__init__(label)
        self._config = config
        self._blob_dir = blob_dir

    def expand(self, pcolls: tuple[beam.PCollection, beam.PCollection, beam.PCollection]) -> beam.PCollection:
        results, summaries, clusters = pcolls
        failed_rows = (
            summaries | "NotRetrieved" >> beam.Filter(_not_ok) | "FailedRows" >> beam.Map(failed_image_row)
        )
        retrieved = results | "RetrievedWithBytes" >> beam.Filter(_is_ok)
        if self._blob_dir:
            by_id = retrieved | "StashBytes" >> beam.ParDo(StashBytesFn(self._blob_dir))
        else:
            by_id = retrieved | "BytesById" >> beam.Map(_by_image_id)
        image_rows = (
            {"image": by_id, "cluster": clusters}
            | "JoinImageRows" >> beam.CoGroupByKey()
            | "ImageRows" >> beam.ParDo(ImageRowFn(self._config))
        )
        return (image_rows, failed_rows) | "AllImageRows" >> beam.Flatten()
