"""Images on the report page: ``data:`` URLs made from the images table's bytes (or
the file a run stored beside it), re-encoded as a small JPEG when large or in a
format a browser may not show, and a placeholder naming the URL otherwise."""

from __future__ import annotations

import base64
import io
import os
from typing import Optional, Sequence

import duckdb

from mmcurate.pipeline.report import queries
from mmcurate.pipeline.report.markup import esc

# Inline images larger than this are re-encoded as a thumbnail to keep the page small.
MAX_INLINE_BYTES = 150_000
THUMBNAIL_SIDE = 320
MIME_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}


def image_data_url(data: Optional[bytes], fmt: Optional[str]) -> Optional[str]:
    """``data`` as a ``data:`` URL; None when there are no bytes or Pillow cannot read them."""
    if not data:
        return None
    mime = MIME_TYPES.get((fmt or "").upper())
    if mime is None or len(data) > MAX_INLINE_BYTES:
        try:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as im:
                im.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
                buf = io.BytesIO()
                im.convert("RGB").save(buf, "JPEG", quality=80)
            data, mime = buf.getvalue(), "image/jpeg"
        except Exception:  # noqa: BLE001 - bytes the browser cannot show either: a placeholder
            return None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_lookup(con: duckdb.DuckDBPyConnection, views: Sequence[str], directory: str, ids: set[str]) -> dict[str, str]:
    """image_id -> data: URL, for the ids the images table holds bytes (or a local path) of."""
    found: dict[str, str] = {}
    for image_id, fmt, data, path in queries.stored_images(con, views, ids):
        if image_id in found:
            continue
        if not data and path:
            local = path if os.path.isabs(path) else os.path.join(directory, path)
            if os.path.isfile(local):
                with open(local, "rb") as fh:
                    data = fh.read()
        url = image_data_url(bytes(data) if data else None, fmt)
        if url:
            found[image_id] = url
    return found


def placeholder(src: Optional[str], alt: Optional[str], why: str) -> str:
    """A box that stands for an image the page cannot show, naming its URL and alt text."""
    return (
        f'<div class="imgph" title="{esc(why)}"><span class="phlabel">image not stored ({esc(why)})</span>'
        f'<code>{esc(src)}</code>{f"<em>alt: {esc(alt)}</em>" if alt else ""}</div>'
    )
