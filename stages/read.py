"""Stage `read`: WARC (and ARC) files in, decoded HTML pages and captured images out.

``ReadWarc`` matches file patterns on any Beam filesystem, streams each file's
records with warcio (one file per DoFn call, never the whole file in memory) and
sorts them:

- ``response``/``resource`` records whose payload is HTML are *pages*. Each page
  ends as exactly one of: a ``Page`` (2xx), a ``rejected`` row (other HTTP status)
  or an ``error`` row (e.g. ``PayloadTooLarge``).
- ``image/*`` payloads become ``CapturedImage`` for later image retrieval; one over
  ``read.max_image_bytes`` becomes a ``CapturedImage`` without bytes that records
  its size (``oversize``), so the images stage reports ``image.capture_too_large``.
- ``revisit``, ``request``, ``metadata``, ``warcinfo``, ``conversion`` records and
  other payloads are only counted (``records.<type>``, ``mime.<mime>``).
- A corrupt or truncated file keeps every record read before the fault and adds
  one error row for each damaged region, counted as one page so that
  ``pages == kept + rejected + errors`` holds. After a fault in a WARC file the
  reader resynchronises, as web-archive tools do, on the next record start: the
  next gzip member that decompresses to ``WARC/x.y`` in a ``.warc.gz``, the next
  line ``WARC/x.y`` in a plain ``.warc``; the records after the damage are read as
  usual. A record whose ``Content-Length`` does not end where the record does
  (declared too long or too short: the bytes after its block are not the blank
  lines that end a record) is a damaged region too: its row names its URL.

Error reasons are exception type names: per record ``PayloadTooLarge``,
``InvalidHttpStatus`` (or any unexpected exception while reading that record);
per fault in a file ``NotAnArchive``, ``MalformedRecord``, ``TruncatedRecord``,
``RecordLengthMismatch``, ``TruncatedFile``, warcio's ``ArchiveLoadFailed``, or the
filesystem's error. An exception warcio raises from inside its own header parsing
(e.g. ``AttributeError`` on a gzip member cut inside the record headers) is named
``TruncatedRecord`` when the data ends inside that record, else ``MalformedRecord``,
with warcio's message in the detail.

Counters (namespace ``read``): ``files``, ``files.empty``, ``records.<warc_type>``,
``mime.<mime>``, ``images``, ``images.too_large``, ``images.status_not_ok``,
``pages``, ``kept``, ``rejected.<reason>``, ``errors.<ExceptionType>``, ``micros``.
"""

from __future__ import annotations

import codecs
import dataclasses
import io
import logging
import re
import time
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator, NamedTuple, Optional, Sequence

import apache_beam as beam
import charset_normalizer
import webencodings
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from warcio.archiveiterator import ArchiveIterator, ARCIterator, WARCIterator
from warcio.exceptions import ArchiveLoadFailed

from mmcurate.filters import reasons
from mmcurate.stages.config import ReadConfig
from mmcurate.runners import progress
from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, SUBJECT_PAGE, CapturedImage, Decision, Page, Provenance, make_doc_id
from mmcurate.stages.results import ERRORS, REJECTED, StageCounters, error_detail

log = logging.getLogger(__name__)

STAGE = "read"

# Output tags of the reading ParDo (rejected and errors come from stages.results).
PAGES = "pages"
IMAGES = "images"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Declared types that say nothing about the payload: sniff it for HTML.
GENERIC_TYPES = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "unknown/unknown", "application/unknown", "*/*"}
)
PAGE_RECORD_TYPES = frozenset({"response", "resource"})

_SNIFF_BYTES = 1024  # payload bytes looked at when the declared type is generic
_META_SCAN_BYTES = 4096  # where a <meta charset> must appear to count
_DETECT_BYTES = 64 * 1024  # payload bytes handed to charset detection
_BLOCK = 64 * 1024


class PayloadTooLarge(Exception):
    """A page's payload exceeds ``read.max_payload_bytes``."""


class InvalidHttpStatus(Exception):
    """A page's HTTP status line has no numeric status code."""


class NotAnArchive(Exception):
    """A file that starts like neither a WARC nor an ARC file (nor a gzip of one)."""


class TruncatedRecord(Exception):
    """A record whose block ends before its Content-Length: the file was cut."""


class MalformedRecord(Exception):
    """Record headers without a WARC-Type or Content-Length: cut or corrupt."""


class TruncatedFile(Exception):
    """Bytes after the last complete record that do not form a record."""


class RecordLengthMismatch(Exception):
    """A record whose Content-Length does not end where the record does: the bytes
    after its block are not the blank lines that end a WARC record."""


class ReadResult(NamedTuple):
    """What ``ReadWarc`` returns: four PCollections."""

    pages: beam.PCollection  # Page
    images: beam.PCollection  # CapturedImage
    rejected: beam.PCollection  # Decision, kind "rejected"
    errors: beam.PCollection  # Decision, kind "error"


# ---------------------------------------------------------------------------------
# Charset detection, after the WHATWG encoding sniffing algorithm: BOM, then the
# HTTP charset, then a <meta> prescan, then statistical detection, then UTF-8.
# ---------------------------------------------------------------------------------

# Legacy labels decode with the web superset browsers use for them.
_SUPERSETS = {
    "shift_jis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "euc_kr": "cp949",
    "cseuckr": "cp949",
    "big5": "big5hkscs",
    "iso8859-9": "cp1254",
    "tis-620": "cp874",
    "iso8859-11": "cp874",
    "windows-874": "cp874",
    "x-euc-jp": "euc_jp",
    "unicode-1-1-utf-8": "utf-8",
    "x-mac-roman": "mac-roman",
}
# Single-byte codecs decode almost any bytes: a page labelled with one that is valid
# UTF-8 with non-ASCII text is UTF-8 mislabelled (the most common lie on the web).
_SINGLE_BYTE = frozenset({"cp1252", "cp1250", "cp1251", "cp1254", "cp874", "mac-roman", "iso8859-15", "iso8859-2"})
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
_HTML_START = (b"<!doctype html", b"<html")


@dataclass(frozen=True)
class DecodedHtml:
    text: str
    charset: str  # the Python codec used
    source: str  # "bom", "http", "meta", "detected" or "fallback"


# WHATWG Encoding Standard: these labels name the "replacement" encoding (a decoder
# that yields one U+FFFD), kept out of the web because they hide markup; treated
# like an unknown label. webencodings 0.5.1 predates that part of the standard.
_REPLACEMENT = frozenset({"hz-gb-2312", "iso-2022-kr", "iso-2022-cn", "iso-2022-cn-ext"})


def codec_for_label(label: str) -> Optional[str]:
    """The Python text codec for a charset label, or None for a label the web does
    not know. Labels are resolved with the WHATWG Encoding Standard's table
    (``webencodings``), as browsers do, so Python-only codecs (``undefined``,
    ``punycode``, ``idna``, ``unicode_escape``, ``utf-7``, ``rot13``...), labels with
    a NUL and unknown labels all fall back alike; legacy encodings are then mapped
    to the web superset browsers decode them with (shift_jis -> cp932, gbk ->
    gb18030, windows-1252 for iso-8859-1 and us-ascii, ...)."""
    key = label.strip().strip("\"'")
    try:
        encoding = webencodings.lookup(key)
    except Exception:  # a label no table could hold
        return None
    if encoding is None or encoding.name in _REPLACEMENT or encoding.name == "x-user-defined":
        return None
    name = encoding.codec_info.name
    return _SUPERSETS.get(name, name)


def _detected_codec(name: str) -> Optional[str]:
    """The Python codec for a name charset_normalizer reports (a Python codec name,
    e.g. ``cp932``, ``shift_jis_2004``), legacy encodings mapped to web supersets."""
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True):
        return None
    return _SUPERSETS.get(info.name, info.name)


def charset_from_content_type(content_type: str) -> str:
    match = _CHARSET_PARAM.search(content_type or "")
    return match.group(1) if match else ""


def meta_charset(head: bytes) -> str:
    """The charset a ``<meta charset>`` or http-equiv Content-Type declares in ``head``."""
    match = _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else ""


def _strict(payload: bytes, codec: str) -> Optional[str]:
    try:
        return payload.decode(codec)
    except (UnicodeError, LookupError, ValueError):
        return None


def _plausible(payload: bytes, codec: str) -> bool:
    """False for a single-byte label on a payload that is really UTF-8."""
    if codec not in _SINGLE_BYTE or payload.isascii():
        return True
    return _strict(payload, "utf-8") is None


def _declared(payload: bytes, label: str) -> Optional[tuple[str, str]]:
    codec = codec_for_label(label) if label else None
    if codec is None or not _plausible(payload, codec):
        return None
    text = _strict(payload, codec)
    return None if text is None else (text, codec)


def detect_charset(payload: bytes) -> DecodedHtml:
    """Decode without a usable declaration: UTF-8 if valid, else charset_normalizer,
    else UTF-8 with replacement characters."""
    text = _strict(payload, "utf-8")
    if text is not None:
        return DecodedHtml(text, "utf-8", "detected")
    sample = payload[:_DETECT_BYTES]
    if len(payload) > _DETECT_BYTES:
        # Cut at a line end so that no multi-byte character is split.
        cut = sample.rfind(b"\n")
        sample = sample[: cut + 1] if cut > 0 else sample
    best = charset_normalizer.from_bytes(sample).best()
    codec = _detected_codec(best.encoding) if best is not None else None
    if codec is not None:
        return DecodedHtml(payload.decode(codec, errors="replace"), codec, "detected")
    return DecodedHtml(payload.decode("utf-8", errors="replace"), "utf-8", "fallback")


def decode_html(payload: bytes, content_type: str = "") -> DecodedHtml:
    """Decode an HTML payload: BOM, then the charset of the HTTP ``content_type``,
    then ``<meta charset>`` in the first 4 KB, then detection. A declared charset
    that does not decode strictly is passed over."""
    for bom, codec in _BOMS:
        if payload.startswith(bom):
            return DecodedHtml(payload[len(bom) :].decode(codec, errors="replace"), codec, "bom")
    found = _declared(payload, charset_from_content_type(content_type))
    if found is not None:
        return DecodedHtml(found[0], found[1], "http")
    label = meta_charset(payload[:_META_SCAN_BYTES])
    if label and (codec_for_label(label) or "").startswith("utf-16"):
        label = "utf-8"  # a <meta> in an ASCII-compatible prefix cannot mean UTF-16
    found = _declared(payload, label)
    if found is not None:
        return DecodedHtml(found[0], found[1], "meta")
    return detect_charset(payload)


def looks_like_html(head: bytes) -> bool:
    """Sniff: does the payload start (after whitespace and a BOM) like an HTML document?"""
    head = head[:_SNIFF_BYTES]
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    return head.lstrip().lower().startswith(_HTML_START)


def mime_of(content_type: Optional[str]) -> str:
    """``text/html; charset=x`` -> ``text/html``; missing -> ``""``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


# ---------------------------------------------------------------------------------
# Reading one file
# ---------------------------------------------------------------------------------


class _Rewound:
    """A read-only stream that replays ``head`` (already read to sniff the format)
    before the rest of ``raw``, with ``tell()`` counting from the file's start."""

    def __init__(self, head: bytes, raw: BinaryIO):
        self._head = head
        self._raw = raw
        self._pos = 0

    def read(self, size: int = -1) -> bytes:
        if self._pos < len(self._head):
            take = len(self._head) - self._pos if size is None or size < 0 else min(size, len(self._head) - self._pos)
            data = self._head[self._pos : self._pos + take]
            if size is None or size < 0:
                data += self._raw.read()
        else:
            data = self._raw.read(size)
        self._pos += len(data)
        return data

    def tell(self) -> int:
        return self._pos

    def head_bytes(self) -> bytes:
        return self._head

    def seekable(self) -> bool:
        try:
            return bool(self._raw.seekable())
        except Exception:
            return False

    def seek(self, pos: int) -> None:
        """Absolute positions only; needs a seekable ``raw``."""
        self._raw.seek(max(pos, len(self._head)))
        self._pos = pos


def _read_upto(stream, size: int) -> bytes:
    """Up to ``size`` bytes (fewer only at the end of the stream)."""
    chunks, total = [], 0
    while total < size:
        block = stream.read(size - total)
        if not block:
            break
        chunks.append(block)
        total += len(block)
    return b"".join(chunks)


_GZIP_MAGIC = b"\x1f\x8b\x08"
# WARC/1.0 and 1.1, and the WARC/0.1x of older crawls (ClueWeb09 is WARC/0.18).
_WARC_LINE = re.compile(rb"\nWARC/[01]\.[0-9]{1,2}\r?\n")


def _gzip_record_at(stream, offset: int) -> bool:
    """Does a gzip member that decompresses to a WARC record start at ``offset``?"""
    stream.seek(offset)
    try:
        start = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(_read_upto(stream, 4096), 64)
    except zlib.error:
        return False
    return _WARC_LINE.match(b"\n" + start.lstrip(b"\r\n")) is not None


def next_record_start(stream, after: int, gz: bool) -> Optional[int]:
    """The offset of the first WARC record start after byte ``after`` of a seekable
    ``stream``, or None: in a gzip file the next member that decompresses to
    ``WARC/x.y``; in a plain file the next line ``WARC/1.0``, ``WARC/1.1`` (or ``WARC/0.18``)."""
    pos = after + 1
    while True:
        # One byte of overlap before ``pos``: a plain record start must follow a newline.
        stream.seek(pos - 1)
        block = _read_upto(stream, _BLOCK)
        if len(block) <= 1:
            return None
        if gz:
            found = block.find(_GZIP_MAGIC, 1)
            while found != -1:
                if _gzip_record_at(stream, pos - 1 + found):
                    return pos - 1 + found
                found = block.find(_GZIP_MAGIC, found + 1)
        else:
            match = _WARC_LINE.search(block)
            if match:
                return pos - 1 + match.start() + 1
        if len(block) < _BLOCK:
            return None
        pos += len(block) - 16  # overlap: a start may straddle two blocks


def _data_ends_inside(stream, offset: int, gz: bool) -> bool:
    """Does the data end inside the record (its headers) that starts at ``offset``?"""
    stream.seek(offset)
    if gz:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while not decompressor.eof:
                block = stream.read(_BLOCK)
                if not block:
                    return True  # the member never ends
                decompressor.decompress(block, _BLOCK)
                while decompressor.unconsumed_tail and not decompressor.eof:
                    decompressor.decompress(decompressor.unconsumed_tail, _BLOCK)
        except zlib.error:
            return False
        return False
    head = _read_upto(stream, _BLOCK)
    return b"\r\n\r\n" not in head and b"\n\n" not in head and len(head) < _BLOCK


def _sniff_format(head: bytes) -> Optional[str]:
    """"warc" | "arc" for a file that starts with ``head``, None for an empty file;
    NotAnArchive for anything else."""
    if not head:
        return None
    start = head
    if head[:2] == b"\x1f\x8b":
        try:
            start = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error as exc:
            raise NotAnArchive(f"gzip header but no valid deflate data: {exc}") from None
    start = start.lstrip(b"\r\n")
    if start.startswith(b"WARC/"):
        return "warc"
    if start.startswith(b"filedesc://"):
        return "arc"
    raise NotAnArchive(f"starts with {start[:40]!r}, not a WARC or ARC record")


@dataclass
class _Scan:
    """One file being read: its stream, where it starts in ``path``, its format, and
    whether reading can resume after a fault (a seekable WARC)."""

    stream: "_Rewound"
    base: int
    fmt: str
    gz: bool
    resync: bool


def _start_again(stream: Optional[_Rewound], base: int) -> Optional[_Scan]:
    """After a file that does not start like an archive: a WARC reading that resumes
    at its first record (gzip members first, then plain lines), or None."""
    if stream is None or not stream.seekable():
        return None
    gz_first = b"\x1f\x8b" in stream.head_bytes()[:4]
    for gz in (gz_first, not gz_first):
        try:
            found = next_record_start(stream, 0, gz)
        except Exception:
            return None
        if found is not None:
            return _Scan(stream, base, "warc", gz, True)
    return None


@dataclass(frozen=True)
class _Outcome:
    """What one record gives before its offset and length are known."""

    tag: Optional[str]  # PAGES, IMAGES, REJECTED, or None (counted only)
    value: object = None
    counter: str = ""  # mime.<type> for payloads that are not pages


def _payload(stream, cap: int, head: bytes = b"") -> Optional[bytes]:
    """The rest of ``stream`` after ``head``; None as soon as it exceeds ``cap``."""
    chunks = [head]
    total = len(head)
    if total > cap:
        return None
    while True:
        block = stream.read(_BLOCK)
        if not block:
            return b"".join(chunks)
        total += len(block)
        if total > cap:
            return None
        chunks.append(block)


def _size_of_rest(stream, seen: int) -> int:
    """Reads (and drops) the rest of ``stream``: ``seen`` plus the bytes left."""
    while True:
        block = stream.read(_BLOCK)
        if not block:
            return seen
        seen += len(block)


def captured_payload(image: CapturedImage, max_bytes: int = 1 << 62) -> bytes:
    """The bytes of a captured image: its payload when it carries one, else read
    again from its record (``provenance``: file, offset, length) by a range read.
    Raises ``PayloadTooLarge`` over ``max_bytes``."""
    prov = image.provenance
    if image.payload or prov.offset < 0 or prov.length <= 0:
        return image.payload
    with FileSystems.open(prov.warc_file, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
        raw.seek(prov.offset)
        blob = raw.read(prov.length)
    for record in ArchiveIterator(io.BytesIO(blob), arc2warc=True):
        payload = _payload(record.content_stream(), max_bytes)
        if payload is None:
            raise PayloadTooLarge(f"captured image over {max_bytes} bytes")
        return payload
    raise MalformedRecord(f"no record at byte {prov.offset} of {prov.warc_file}")


class ReadWarcFileFn(beam.DoFn):
    """Reads one WARC/ARC file (a path on any Beam filesystem): pages on the main
    output, ``CapturedImage`` on ``images``, decision rows on ``rejected``/``errors``."""

    def __init__(self, config: ReadConfig):
        self._config = config
        self._counters: Optional[StageCounters] = None
        # Pages still to read under read.limit (None: no limit).
        self._remaining: Optional[int] = None

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, path: str) -> Iterator:
        self._counters.inc("files")
        yield from self._timed(self._read_file(path))

    def _timed(self, batches: Iterator[list]) -> Iterator:
        counters = self._counters
        while True:  # time our own work per record, not what runs downstream of a yield
            started = time.perf_counter()
            batch = next(batches, None)
            counters.micros(started)
            if batch is None:
                return
            yield from batch

    def _count_page(self) -> None:
        self._counters.inc("pages")
        if self._remaining is not None:
            self._remaining -= 1

    def _exhausted(self) -> bool:
        return self._remaining is not None and self._remaining <= 0

    # -- file level ------------------------------------------------------------------

    def _read_file(self, path: str) -> Iterator[list]:
        try:
            raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        except Exception as exc:  # missing, unreadable: a fault at byte 0
            yield self._fault(path, 0, exc)
            return
        with raw:
            yield from self.read_stream(path, raw)

    def read_stream(self, path: str, raw: BinaryIO, base: int = 0) -> Iterator[list]:
        """Reads every record of ``raw``, a stream that starts at byte ``base`` of
        ``path`` (a whole file, or one record's byte range): batches of outputs, with
        offsets counted from the start of ``path``. Needs ``setup()`` to have run.

        After a fault in a WARC file on a seekable stream, reading resumes at the
        next record start (``next_record_start``); elsewhere (ARC, unseekable) the
        rest of the file is lost, and the fault row says so."""
        try:
            head = raw.read(_BLOCK)
        except Exception as exc:  # the filesystem's error at the first byte
            yield self._fault(path, base, exc)
            return
        stream = _Rewound(head, raw)
        try:
            fmt = _sniff_format(head)
        except NotAnArchive as exc:
            scan = _start_again(stream, base)
            if scan is None:  # no WARC record anywhere after the start
                note = "; no record after it" if stream.seekable() else "; the rest of the file is not read"
                yield self._fault(path, base, exc, note=note)
                return
            position = yield from self._fault_then_resync(path, scan, 0, exc)
        else:
            if fmt is None:
                self._counters.inc("files.empty")
                return
            scan = _Scan(stream, base, fmt, head[:2] == b"\x1f\x8b", fmt == "warc" and stream.seekable())
            position = 0
        while position is not None:
            position = yield from self._read_from(path, scan, position)

    def _read_from(self, path: str, scan: "_Scan", position: int):
        """Reads records from ``position`` (a record start) to the end of the file or
        the first fault; returns where to resume (None: nowhere)."""
        stream = scan.stream
        if position:
            stream.seek(position)
        # A known format makes warcio strict: garbage raises instead of being
        # taken for records of the other format.
        iterator = (WARCIterator if scan.fmt == "warc" else ARCIterator)(stream, arc2warc=True)
        iterator.INC_RECORD = ""  # warcio prints a length mismatch to stderr; the error row reports it
        records = iter(iterator)
        while True:
            if self._exhausted():
                return  # read.limit reached: the rest is not read, so it is no fault
            start = iterator.offset
            framing_errors = iterator.err_count
            try:
                record = next(records)
            except StopIteration:
                break
            except ArchiveLoadFailed as exc:  # not a record where one should start
                return (yield from self._fault_then_resync(path, scan, start, exc))
            except Exception as exc:  # warcio failing inside its own header parsing
                return (yield from self._fault_then_resync(path, scan, start, self._header_fault(scan, start, exc)))
            start = iterator.offset
            try:
                outcome: _Outcome | Exception = self._read_record(path, record, scan.fmt == "arc")
            except Exception as exc:  # this record only; warcio can go on
                outcome = exc
            try:
                # Consumes the rest of the record, so offset and length are real.
                offset, length = iterator.get_record_offset(), iterator.get_record_length()
            except Exception as exc:
                return (yield from self._fault_then_resync(path, scan, start, exc))
            # A cut or corrupt record is a fault at its offset.
            declared = str(record.rec_headers.get_header("Content-Length") if scan.fmt == "warc" else record.length)
            if record.rec_type is None or record.length is None or not declared.strip().isdigit():
                fault = MalformedRecord(f"record headers without WARC-Type or a numeric Content-Length ({declared[:40]!r})")
                return (yield from self._fault_then_resync(path, scan, offset, fault))
            url = _target_uri(record)
            missing = getattr(record.raw_stream, "limit", 0)
            if missing > 0:
                fault = TruncatedRecord(f"the data ends {missing} bytes before the record does (Content-Length {record.length})")
                return (yield from self._fault_then_resync(path, scan, offset, fault, url))
            if scan.fmt == "warc" and iterator.err_count != framing_errors:
                # warcio found no blank line after the block: the length lies.
                fault = RecordLengthMismatch(f"Content-Length {record.length} does not end where the record does")
                return (yield from self._fault_then_resync(path, scan, offset, fault, url))
            yield self._emit(path, record, scan.fmt == "arc", outcome, scan.base + offset, length)
        end = iterator.offset
        if stream.read(1) or end < stream.tell():
            size = stream.tell()
            fault = TruncatedFile(f"{size - end} bytes after the last complete record are not a record")
            return (yield from self._fault_then_resync(path, scan, end, fault))
        return None

    def _header_fault(self, scan: "_Scan", offset: int, exc: Exception) -> Exception:
        """Names what warcio's own exception (AttributeError, ValueError...) means."""
        cause = f"warcio: {type(exc).__name__}: {exc}"
        try:
            ends_inside = _data_ends_inside(scan.stream, offset, scan.gz) if scan.stream.seekable() else False
        except Exception:
            ends_inside = False
        if ends_inside:
            return TruncatedRecord(f"the data ends inside this record's headers ({cause})")
        return MalformedRecord(f"record headers that cannot be parsed ({cause})")

    def _fault_then_resync(self, path: str, scan: "_Scan", offset: int, exc: Exception, url: str = ""):
        """One error row for the damaged region starting at ``offset``; returns the
        next record start after it (None: the rest of the file is lost)."""
        resume = None
        if not scan.resync and offset == 0:
            # Damaged at its very start (e.g. sniffed as ARC): WARC records may follow.
            again = _start_again(scan.stream, scan.base)
            if again is not None:
                scan.fmt, scan.gz, scan.resync = again.fmt, again.gz, again.resync
        if scan.resync:
            try:
                resume = next_record_start(scan.stream, offset, scan.gz)
            except Exception as search_failed:  # the filesystem gave up: the rest is lost
                log.warning("%s: no resync after byte %d: %s", path, scan.base + offset, search_failed)
        if resume is not None:
            note = f"; reading resumed at the next record, byte {scan.base + resume}"
        else:
            note = "; no record after it" if scan.resync else "; the rest of the file is not read"
        yield self._fault(path, scan.base + offset, exc, url=url, note=note)
        return resume

    def _fault(self, path: str, offset: int, exc: BaseException, url: str = "", note: str = "") -> list:
        """The error row for a fault in the file at ``offset`` (no page to name)."""
        counters = self._counters
        self._count_page()
        counters.error(exc)
        progress.add(pages=1)
        log.warning("%s: fault at byte %d (%s: %s)%s", path, offset, type(exc).__name__, exc, note)
        row = Decision(
            doc_id=make_doc_id(url=path, date=f"fault@{offset}"),
            url=url,
            stage=STAGE,
            kind=KIND_ERROR,
            reason=type(exc).__name__,
            provenance=Provenance(warc_file=path, offset=offset),
            detail=f"{path} at byte {offset}: {error_detail(exc)}{note}",
            subject=SUBJECT_PAGE,
        )
        return [beam.pvalue.TaggedOutput(ERRORS, row)]

    # -- record level ----------------------------------------------------------------

    def _emit(self, path: str, record, arc: bool, outcome, offset: int, length: int) -> list:
        counters = self._counters
        counters.inc(f"records.{record.rec_type}")
        is_page = isinstance(outcome, Exception) or outcome.tag in (PAGES, REJECTED)
        progress.add(pages=int(is_page), bytes=length)
        if isinstance(outcome, Exception):
            self._count_page()
            counters.error(outcome)
            log.debug("%s: record at %d failed", path, offset, exc_info=outcome)
            url, record_id, date = _identity(record, arc)
            row = Decision(
                doc_id=make_doc_id(record_id, url, date),
                url=url,
                stage=STAGE,
                kind=KIND_ERROR,
                reason=type(outcome).__name__,
                provenance=Provenance(path, record_id, date, offset, length),
                detail=error_detail(outcome),
                subject=SUBJECT_PAGE,
            )
            return [beam.pvalue.TaggedOutput(ERRORS, row)]
        if outcome.counter:
            counters.inc(outcome.counter)
        if outcome.tag is None:
            return []
        value = outcome.value
        value = dataclasses.replace(value, provenance=dataclasses.replace(value.provenance, offset=offset, length=length))
        if outcome.tag == PAGES:
            self._count_page()
            counters.kept()
            return [value]
        if outcome.tag == REJECTED:
            self._count_page()
            counters.rejected(value.reason)
            return [beam.pvalue.TaggedOutput(REJECTED, value)]
        counters.inc("images")
        return [beam.pvalue.TaggedOutput(IMAGES, value)]

    def _read_record(self, path: str, record, arc: bool) -> _Outcome:
        """Classify one record and read what it holds (offset and length come later)."""
        if record.rec_type not in PAGE_RECORD_TYPES:
            return _Outcome(None)  # revisit, request, metadata, warcinfo, ...: counted by type
        config = self._config
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
            return self._other_payload(path, record, arc, http, mime, stream, head)

        url, record_id, date = _identity(record, arc)
        doc_id = make_doc_id(record_id, url, date)
        provenance = Provenance(warc_file=path, record_id=record_id, date=date)
        status = _status(http) if http else 0
        if http and not 200 <= status < 300:
            return _Outcome(
                REJECTED,
                Decision(
                    doc_id=doc_id,
                    url=url,
                    stage=STAGE,
                    kind=KIND_REJECTED,
                    reason=reasons.HTTP_STATUS_NOT_OK,
                    provenance=provenance,
                    value=float(status),
                    threshold=None,
                    detail=(http.statusline or "")[:200],
                    subject=SUBJECT_PAGE,
                ),
            )
        payload = _payload(stream, config.max_payload_bytes, head)
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
        return _Outcome(PAGES, page)

    def _other_payload(self, path: str, record, arc: bool, http, mime: str, stream, head: bytes) -> _Outcome:
        counter = f"mime.{mime or 'unknown'}"
        config = self._config
        if not mime.startswith("image/") or not config.keep_images:
            return _Outcome(None, counter=counter)
        if http and not 200 <= _status(http) < 300:
            self._counters.inc("images.status_not_ok")
            return _Outcome(None, counter=counter)
        # Read past, not kept: the images stage reads the bytes again from the record.
        size = _size_of_rest(stream, len(head))
        url, record_id, date = _identity(record, arc)
        provenance = Provenance(warc_file=path, record_id=record_id, date=date)
        if size > config.max_image_bytes:
            # Passed on without its bytes, so the images stage can name why the URL
            # was not retrieved from the WARC (image.capture_too_large).
            self._counters.inc("images.too_large")
            image = CapturedImage(url, mime, b"", provenance, oversize=size, limit=config.max_image_bytes)
            return _Outcome(IMAGES, image, counter=counter)
        # A pointer, not the bytes: the offset and length of the record are filled in
        # by _emit, and captured_payload reads the bytes where they are needed.
        image = CapturedImage(url=url, content_type=mime, payload=b"", provenance=provenance)
        return _Outcome(IMAGES, image, counter=counter)


def _identity(record, arc: bool) -> tuple[str, str, str]:
    """(url, record id, date) of a record. ARC records have no id: warcio invents a
    random one, which would make ids change between runs, so it is dropped."""
    headers = record.rec_headers
    record_id = "" if arc else headers.get_header("WARC-Record-ID") or ""
    return _target_uri(record), record_id, headers.get_header("WARC-Date") or ""


def _target_uri(record) -> str:
    uri = (record.rec_headers.get_header("WARC-Target-URI") or "").strip()
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    return uri


def _status(http) -> int:
    code = http.get_statuscode()
    try:
        return int(code)
    except (TypeError, ValueError):
        raise InvalidHttpStatus(f"no numeric status in {http.statusline!r}") from None


# ---------------------------------------------------------------------------------
# The transform
# ---------------------------------------------------------------------------------


def _path(metadata) -> str:
    return metadata.path


class ReadFilesInOrderFn(ReadWarcFileFn):
    """Reads a list of files one after the other, in path order, until
    ``read.limit`` pages have been read: the first N pages of the input."""

    def process(self, paths: list[str]) -> Iterator:
        self._remaining = self._config.limit
        for path in sorted(set(paths)):
            if self._exhausted():
                return
            yield from super().process(path)


# Compressed bytes per chunk of records spread over workers (ours: enough pages per
# chunk to amortise opening the file, small enough to spread one WARC over many cores).
CHUNK_BYTES = 8 * 1024 * 1024


class FindChunksFn(ReadWarcFileFn):
    """One file -> ``(path, start, end)`` byte ranges of whole records, about
    ``CHUNK_BYTES`` each (end -1: to the end of the file), so that one large WARC is
    read by many workers without its pages crossing a shuffle.

    Only WARC files are cut, at record boundaries warcio reports; an ARC file, an
    empty or unreadable one, or the rest of a file after a record warcio cannot
    parse is one range, whose reader reports the fault as for a whole file."""

    def process(self, path: str) -> Iterator[tuple[str, int, int]]:
        self._counters.inc("files")
        start = 0
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
                head = raw.read(_BLOCK)
                if _sniff_format(head) == "warc":
                    iterator = WARCIterator(_Rewound(head, raw))
                    iterator.INC_RECORD = ""  # a length that lies: the reader's error row reports it
                    for record in iterator:
                        offset = iterator.get_record_offset()
                        iterator.read_to_end()
                        cut = getattr(record.raw_stream, "limit", 0) > 0
                        if iterator.err_count or cut or record.rec_type is None or record.length is None:
                            break  # damage: the rest is one range, read (and resynchronised) as a file
                        if offset - start >= CHUNK_BYTES:
                            yield path, start, offset
                            start = offset
        except Exception:  # the reader of the last range meets it again and reports it
            log.debug("%s: scanning for record boundaries stopped at byte %d", path, start, exc_info=True)
        yield path, start, -1


class _Window:
    """A read-only view of ``raw`` from byte ``start`` for ``size`` bytes (``size`` < 0:
    to the end), positions counted from ``start``; seekable when ``raw`` is, so that
    reading resynchronises after a fault inside the range as inside a file."""

    def __init__(self, raw: BinaryIO, start: int, size: int):
        self._raw = raw
        self._start = start
        self._size = size
        self._pos = 0
        if start:
            raw.seek(start)

    def read(self, size: int = -1) -> bytes:
        if self._size >= 0:
            left = max(self._size - self._pos, 0)
            size = left if size is None or size < 0 or size > left else size
        data = self._raw.read(size)
        self._pos += len(data)
        return data

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return bool(self._raw.seekable())

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 1:
            pos += self._pos
        elif whence == 2:
            if self._size < 0:
                self._pos = self._raw.seek(0, 2) - self._start
                return self._pos
            pos += self._size
        self._raw.seek(self._start + pos)
        self._pos = pos
        return pos


class ReadChunkFn(ReadWarcFileFn):
    """Reads the records of one ``(path, start, end)`` range (``FindChunksFn``)."""

    def process(self, chunk: tuple[str, int, int]) -> Iterator:
        yield from self._timed(self._read_chunk(*chunk))

    def _read_chunk(self, path: str, start: int, end: int) -> Iterator[list]:
        try:
            raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
            window = _Window(raw, start, end - start if end >= 0 else -1)
        except Exception as exc:  # missing, unreadable: a fault at the range's start
            yield self._fault(path, start, exc)
            return
        with raw:
            yield from self.read_stream(path, window, base=start)


class ReadWarc(beam.PTransform):
    """Reads WARC/ARC files (paths or globs on any Beam filesystem, plain or gzip)
    from a pipeline root: ``p | ReadWarc(patterns, config)`` -> ``ReadResult``.

    A pattern that matches nothing produces nothing (the CLI checks its inputs
    before the run). A file matched by several patterns is read once.

    With ``read.reshuffle`` (the default) each WARC file is cut into ranges of whole
    records that are spread over workers (a shuffle of ``(path, start, end)``, never
    of pages); without it each file is read by one worker. With ``read.limit`` N,
    only the first N pages are read, files taken in path order.
    """

    def __init__(self, patterns: Sequence[str], config: ReadConfig = ReadConfig(), label: Optional[str] = None):
        super().__init__(label)
        if isinstance(patterns, str):
            patterns = [patterns]
        self._patterns = [str(p) for p in patterns]
        if not self._patterns:
            raise ValueError("ReadWarc needs at least one path or glob")
        self._config = config

    def expand(self, pbegin) -> ReadResult:
        config = self._config
        paths = (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "MatchFiles" >> fileio.MatchAll(fileio.EmptyMatchTreatment.ALLOW)
            | "Paths" >> beam.Map(_path)
        )
        tags = (IMAGES, REJECTED, ERRORS)
        if config.limit:
            outputs = (
                paths
                | "AllPaths" >> beam.combiners.ToList()
                | "ReadInOrder" >> beam.ParDo(ReadFilesInOrderFn(config)).with_outputs(*tags, main=PAGES)
            )
            return ReadResult(outputs[PAGES], outputs[IMAGES], outputs[REJECTED], outputs[ERRORS])
        # Also spreads the files over workers: it is a shuffle.
        files = paths | "DistinctPaths" >> beam.Distinct()
        if config.reshuffle:
            chunks = (
                files
                | "FindChunks" >> beam.ParDo(FindChunksFn(config))
                | "SpreadChunks" >> beam.Reshuffle()
            )
            outputs = chunks | "ReadChunks" >> beam.ParDo(ReadChunkFn(config)).with_outputs(*tags, main=PAGES)
        else:
            outputs = files | "ReadRecords" >> beam.ParDo(ReadWarcFileFn(config)).with_outputs(*tags, main=PAGES)
        return ReadResult(outputs[PAGES], outputs[IMAGES], outputs[REJECTED], outputs[ERRORS])
