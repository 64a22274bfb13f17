"""One WARC/ARC record read and sorted: an HTML page (``Page``), a page whose HTTP
status is not 2xx (``HttpNotOk``), a captured image (``CapturedImage``, a pointer to
its record, or a size only when it is over ``read.max_image_bytes``), or something
only counted (``revisit``, ``request``, ``metadata``, other payloads)."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Callable, Optional, Union

from mmcurate.schemas import CapturedImage, Page, Provenance, make_doc_id
from mmcurate.stages.config import ReadConfig
from mmcurate.stages.engines.charset_decoding import decode_html
from mmcurate.stages.engines.warc.faults import InvalidHttpStatus, PayloadTooLarge
from mmcurate.stages.engines.warc.streams import BLOCK

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Declared types that say nothing about the payload: sniff it for HTML.
GENERIC_TYPES = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "unknown/unknown", "application/unknown", "*/*"}
)
PAGE_RECORD_TYPES = frozenset({"response", "resource"})

_SNIFF_BYTES = 1024  # payload bytes looked at when the declared type is generic
_HTML_START = (b"<!doctype html", b"<html")


@dataclass(frozen=True)
class HttpNotOk:
    """An HTML page whose HTTP status is not 2xx: rejected, not read."""

    doc_id: str
    url: str
    provenance: Provenance
    status: int
    statusline: str


@dataclass(frozen=True)
class Sorted:
    """What one record gives before its offset and length are known: a ``Page``, an
    ``HttpNotOk``, a ``CapturedImage``, or None (counted only: ``counter``)."""

    value: Union[Page, HttpNotOk, CapturedImage, None] = None
    counter: str = ""  # mime.<type> for payloads that are not pages


def looks_like_html(head: bytes) -> bool:
    """Sniff: does the payload start (after whitespace and a BOM) like an HTML document?"""
    head = head[:_SNIFF_BYTES]
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    return head.lstrip().lower().startswith(_HTML_START)


def mime_of(content_type: Optional[str]) -> str:
    """``text/html; charset=x`` -> ``text/html``; missing -> ``""``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def read_payload(stream, cap: int, head: bytes = b"") -> Optional[bytes]:
    """The rest of ``stream`` after ``head``; None as soon as it exceeds ``cap``."""
    chunks = [head]
    total = len(head)
    if total > cap:
        return None
    while True:
        block = stream.read(BLOCK)
        if not block:
            return b"".join(chunks)
        total += len(block)
        if total > cap:
            return None
        chunks.append(block)


def _size_of_rest(stream, seen: int) -> int:
    """Reads (and drops) the rest of ``stream``: ``seen`` plus the bytes left."""
    while True:
        block = stream.read(BLOCK)
        if not block:
            return seen
        seen += len(block)


def identity(record, arc: bool) -> tuple[str, str, str]:
    """(url, record id, date) of a record. ARC records have no id: warcio invents a
    random one, which would make ids change between runs, so it is dropped."""
    headers = record.rec_headers
    record_id = "" if arc else headers.get_header("WARC-Record-ID") or ""
    return target_uri(record), record_id, headers.get_header("WARC-Date") or ""


def target_uri(record) -> str:
    uri = (record.rec_headers.get_header("WARC-Target-URI") or "").strip()
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    return uri


def http_status(http) -> int:
    code = http.get_statuscode()
    try:
        return int(code)
    except (TypeError, ValueError):
        raise InvalidHttpStatus(f"no numeric status in {http.statusline!r}") from None


def sort_record(path: str, record, arc: bool, config: ReadConfig, count: Callable[[str], None]) -> Sorted:
    """Classify one record of file ``path`` and read what it holds (offset and length
    come later). ``count`` counts the images passed over (``images.status_not_ok``,
    ``images.too_large``). Raises for a page that cannot be read
    (``PayloadTooLarge``, ``InvalidHttpStatus``)."""
    if record.rec_type not in PAGE_RECORD_TYPES:
        return Sorted()  # revisit, request, metadata, warcinfo, ...: counted by type
    http = record.http_headers if record.rec_type == "response" else None
    content_type = (http.get_header("Content-Type") if http else record.content_type) or ""
    mime = mime_of(content_type)
    stream = record.content_stream()
    head = b""
    if mime in GENERIC_TYPES:
        head = stream.read(_SNIFF_BYTES)
        is_html = looks_like_html(head)
    else:
        is_html = mime in HTML_TYPES
    if not is_html:
        return _other_payload(path, record, arc, http, mime, stream, head, config, count)

    url, record_id, date = identity(record, arc)
    doc_id = make_doc_id(record_id, url, date)
    provenance = Provenance(warc_file=path, record_id=record_id, date=date)
    status = http_status(http) if http else 0
    if http and not 200 <= status < 300:
        return Sorted(HttpNotOk(doc_id, url, provenance, status, (http.statusline or "")[:200]))
    payload = read_payload(stream, config.max_payload_bytes, head)
    if payload is None:
        raise PayloadTooLarge(f"payload over read.max_payload_bytes={config.max_payload_bytes}")
    decoded = decode_html(payload, content_type)
    page = Page(
        doc_id=doc_id,
        url=url,
        html=decoded.text,
        provenance=provenance,
        http_status=status,
        content_type=mime,
        charset=decoded.charset,
        charset_source=decoded.source,
        payload_bytes=len(payload),
    )
    return Sorted(page)


def _other_payload(
    path: str, record, arc: bool, http, mime: str, stream, head: bytes, config: ReadConfig, count: Callable[[str], None]
) -> Sorted:
    counter = f"mime.{mime or 'unknown'}"
    if not mime.startswith("image/") or not config.keep_images:
        return Sorted(counter=counter)
    if http and not 200 <= http_status(http) < 300:
        count("images.status_not_ok")
        return Sorted(counter=counter)
    # Read past, not kept: the images stage reads the bytes again from the record.
    size = _size_of_rest(stream, len(head))
    url, record_id, date = identity(record, arc)
    provenance = Provenance(warc_file=path, record_id=record_id, date=date)
    if size > config.max_image_bytes:
        # Passed on without its bytes, so the images stage can name why the URL
        # was not retrieved from the WARC (image.capture_too_large).
        count("images.too_large")
        image = CapturedImage(url, mime, b"", provenance, oversize=size, limit=config.max_image_bytes)
        return Sorted(image, counter=counter)
    # A pointer, not the bytes: the offset and length of the record are filled in
    # by the reader, and range_reads.captured_payload reads the bytes where they
    # are needed.
    image = CapturedImage(url=url, content_type=mime, payload=b"", provenance=provenance)
    return Sorted(image, counter=counter)
