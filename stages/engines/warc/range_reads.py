"""One record read back from its byte range (offset and length in the file), as a
CC-index pointer or a ``CapturedImage``'s provenance names it: a seek and one read
(on s3:// and gs://, a ranged GET)."""

from __future__ import annotations

import io
from typing import BinaryIO, Callable, Optional

from warcio.archiveiterator import ArchiveIterator

from mmcurate.schemas import CapturedImage
from mmcurate.stages.engines.warc.faults import MalformedRecord, PayloadTooLarge
from mmcurate.stages.engines.warc.records import read_payload

_NO_LIMIT = 1 << 62


def record_payload_at(
    raw: BinaryIO, offset: int, length: int = -1, max_bytes: int = _NO_LIMIT, cut: bool = False
) -> Optional[bytes]:
    """The payload (HTTP body, or a resource's block) of the record that starts at
    byte ``offset`` of the open file ``raw``: ``length`` bytes are read when known,
    else the record is read from the stream. None when no record starts there.
    Over ``max_bytes``: its first ``max_bytes`` bytes with ``cut``, else
    ``PayloadTooLarge``."""
    raw.seek(offset)
    stream = io.BytesIO(raw.read(length)) if length > 0 else raw
    for record in ArchiveIterator(stream, arc2warc=True):
        content = record.content_stream()
        if cut:
            return content.read(max_bytes)
        payload = read_payload(content, max_bytes)
        if payload is None:
            raise PayloadTooLarge(f"record payload over {max_bytes} bytes")
        return payload
    return None


def captured_payload(image: CapturedImage, open_file: Callable[[str], BinaryIO], max_bytes: int = _NO_LIMIT) -> bytes:
    """The bytes of a captured image: its payload when it carries one, else read
    again from its record (``provenance``: file, offset, length) by a range read of
    the file ``open_file(path)`` opens. Raises ``PayloadTooLarge`` over ``max_bytes``."""
    prov = image.provenance
    if image.payload or prov.offset < 0 or prov.length <= 0:
        return image.payload
    with open_file(prov.warc_file) as raw:
        try:
            payload = record_payload_at(raw, prov.offset, prov.length, max_bytes)
        except PayloadTooLarge:
            raise PayloadTooLarge(f"captured image over {max_bytes} bytes") from None
    if payload is None:
        raise MalformedRecord(f"no record at byte {prov.offset} of {prov.warc_file}")
    return payload
