"""Every record of a WARC/ARC file, streamed with warcio, never the whole file in
memory; faults reported where they are, and reading resumed after them.

``read_archive`` yields one event per record (``RecordRead``) and one per damaged
region (``Fault``). A corrupt or truncated file keeps every record read before the
fault. After a fault in a WARC file on a seekable stream the reader resynchronises
on the next record start (``boundaries.next_record_start``) and reads on; in an ARC
file or an unseekable stream the rest of the file is lost, and the fault says so.
A record whose ``Content-Length`` does not end where the record does (declared too
long or too short: the bytes after its block are not the blank lines that end a
record) is a damaged region too. An exception warcio raises from inside its own
header parsing (e.g. ``AttributeError`` on a gzip member cut inside the record
headers) is named ``TruncatedRecord`` when the data ends inside that record, else
``MalformedRecord``, with warcio's message in the detail.

The consumer decides when to stop (``read.limit``): the generator reads a record
only when asked for the next event.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, Optional, Union

from warcio.archiveiterator import ARCIterator, WARCIterator
from warcio.exceptions import ArchiveLoadFailed

from mmcurate.schemas import CapturedImage, Page
from mmcurate.stages.config import ReadConfig
from mmcurate.stages.engines.warc.boundaries import data_ends_inside, next_record_start, sniff_format
from mmcurate.stages.engines.warc.faults import (
    MalformedRecord,
    NotAnArchive,
    RecordLengthMismatch,
    TruncatedFile,
    TruncatedRecord,
)
from mmcurate.stages.engines.warc.records import HttpNotOk, Sorted, identity, sort_record, target_uri
from mmcurate.stages.engines.warc.streams import BLOCK, ReplayStream

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordRead:
    """One whole record: what it held (``value``: a ``Page``, ``HttpNotOk`` or
    ``CapturedImage`` with its offset and length in the file; None for a record
    only counted; the exception that reading this record alone raised), where it
    is, and its identity for an error row."""

    rec_type: str
    value: Union[Page, HttpNotOk, CapturedImage, Exception, None]
    offset: int  # from the start of the file
    length: int
    counter: str = ""  # mime.<type> for payloads that are not pages
    url: str = ""  # (url, record id, date): set when ``value`` is an exception
    record_id: str = ""
    date: str = ""


@dataclass(frozen=True)
class Fault:
    """A damaged region of the file from byte ``offset``: no record to name (``url``
    when the damaged record has one); ``note`` says where reading went on."""

    offset: int
    error: BaseException
    url: str = ""
    note: str = ""


Event = Union[RecordRead, Fault]


@dataclass
class _Scan:
    """One file being read: its stream, where it starts in the file, its format,
    and whether reading can resume after a fault (a seekable WARC)."""

    stream: ReplayStream
    base: int
    fmt: str
    gz: bool
    resync: bool


def _start_again(stream: Optional[ReplayStream], base: int) -> Optional[_Scan]:
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


def read_archive(
    path: str, raw: BinaryIO, config: ReadConfig, count: Callable[[str], None], base: int = 0
) -> Iterator[Event]:
    """The events of ``raw``, a stream that starts at byte ``base`` of ``path`` (a
    whole file, or a byte range of whole records), offsets counted from the start
    of ``path``. ``count`` counts ``files.empty`` and the images passed over."""
    try:
        head = raw.read(BLOCK)
    except Exception as exc:  # the filesystem's error at the first byte
        yield Fault(base, exc)
        return
    stream = ReplayStream(head, raw)
    try:
        fmt = sniff_format(head)
    except NotAnArchive as exc:
        scan = _start_again(stream, base)
        if scan is None:  # no WARC record anywhere after the start
            note = "; no record after it" if stream.seekable() else "; the rest of the file is not read"
            yield Fault(base, exc, note=note)
            return
        position = yield from _fault_then_resync(path, scan, 0, exc)
    else:
        if fmt is None:
            count("files.empty")
            return
        scan = _Scan(stream, base, fmt, head[:2] == b"\x1f\x8b", fmt == "warc" and stream.seekable())
        position = 0
    while position is not None:
        position = yield from _read_from(path, scan, position, config, count)


def _read_from(path: str, scan: _Scan, position: int, config: ReadConfig, count: Callable[[str], None]):
    """Reads records from ``position`` (a record start) to the end of the file or
    the first fault; returns where to resume (None: nowhere)."""
    stream = scan.stream
    arc = scan.fmt == "arc"
    if position:
        stream.seek(position)
    # A known format makes warcio strict: garbage raises instead of being
    # taken for records of the other format.
    iterator = (WARCIterator if scan.fmt == "warc" else ARCIterator)(stream, arc2warc=True)
    iterator.INC_RECORD = ""  # warcio prints a length mismatch to stderr; the fault reports it
    records = iter(iterator)
    while True:
        start = iterator.offset
        framing_errors = iterator.err_count
        try:
            record = next(records)
        except StopIteration:
            break
        except ArchiveLoadFailed as exc:  # not a record where one should start
            return (yield from _fault_then_resync(path, scan, start, exc))
        except Exception as exc:  # warcio failing inside its own header parsing
            return (yield from _fault_then_resync(path, scan, start, _header_fault(scan, start, exc)))
        start = iterator.offset
        try:
            outcome: Sorted | Exception = sort_record(path, record, arc, config, count)
        except Exception as exc:  # this record only; warcio can go on
            outcome = exc
        try:
            # Consumes the rest of the record, so offset and length are real.
            offset, length = iterator.get_record_offset(), iterator.get_record_length()
        except Exception as exc:
            return (yield from _fault_then_resync(path, scan, start, exc))
        # A cut or corrupt record is a fault at its offset.
        declared = str(record.rec_headers.get_header("Content-Length") if scan.fmt == "warc" else record.length)
        if record.rec_type is None or record.length is None or not declared.strip().isdigit():
            fault = MalformedRecord(f"record headers without WARC-Type or a numeric Content-Length ({declared[:40]!r})")
            return (yield from _fault_then_resync(path, scan, offset, fault))
        url = target_uri(record)
        missing = getattr(record.raw_stream, "limit", 0)
        if missing > 0:
            fault = TruncatedRecord(f"the data ends {missing} bytes before the record does (Content-Length {record.length})")
            return (yield from _fault_then_resync(path, scan, offset, fault, url))
        if scan.fmt == "warc" and iterator.err_count != framing_errors:
            # warcio found no blank line after the block: the length lies.
            fault = RecordLengthMismatch(f"Content-Length {record.length} does not end where the record does")
            return (yield from _fault_then_resync(path, scan, offset, fault, url))
        yield _record_read(record, arc, outcome, scan.base + offset, length)
    end = iterator.offset
    if stream.read(1) or end < stream.tell():
        size = stream.tell()
        fault = TruncatedFile(f"{size - end} bytes after the last complete record are not a record")
        return (yield from _fault_then_resync(path, scan, end, fault))
    return None


def _record_read(record, arc: bool, outcome: Sorted | Exception, offset: int, length: int) -> RecordRead:
    if isinstance(outcome, Exception):
        url, record_id, date = identity(record, arc)
        return RecordRead(record.rec_type, outcome, offset, length, url=url, record_id=record_id, date=date)
    value = outcome.value
    if value is not None:
        value = dataclasses.replace(value, provenance=dataclasses.replace(value.provenance, offset=offset, length=length))
    return RecordRead(record.rec_type, value, offset, length, outcome.counter)


def _header_fault(scan: _Scan, offset: int, exc: Exception) -> Exception:
    """Names what warcio's own exception (AttributeError, ValueError...) means."""
    cause = f"warcio: {type(exc).__name__}: {exc}"
    try:
        ends_inside = data_ends_inside(scan.stream, offset, scan.gz) if scan.stream.seekable() else False
    except Exception:
        ends_inside = False
    if ends_inside:
        return TruncatedRecord(f"the data ends inside this record's headers ({cause})")
    return MalformedRecord(f"record headers that cannot be parsed ({cause})")


def _fault_then_resync(path: str, scan: _Scan, offset: int, exc: Exception, url: str = ""):
    """One ``Fault`` for the damaged region starting at ``offset``; returns the next
    record start after it (None: the rest of the file is lost)."""
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
    yield Fault(scan.base + offset, exc, url=url, note=note)
    return resume
