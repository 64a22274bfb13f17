"""Where records start in a WARC file: the format a file starts with, the next
record start after damage (as web-archive tools resynchronise: the next gzip
member that decompresses to ``WARC/x.y`` in a ``.warc.gz``, the next line
``WARC/x.y`` in a plain ``.warc``), whether the data ends inside a record, and
the record boundaries that cut a file into ranges of whole records."""

from __future__ import annotations

import re
import zlib
from typing import BinaryIO, Iterator, Optional

from warcio.archiveiterator import WARCIterator

from mmcurate.stages.engines.warc.faults import NotAnArchive
from mmcurate.stages.engines.warc.streams import BLOCK, ReplayStream, read_upto

_GZIP_MAGIC = b"\x1f\x8b\x08"
# WARC/1.0 and 1.1, and the WARC/0.1x of older crawls (ClueWeb09 is WARC/0.18).
_WARC_LINE = re.compile(rb"\nWARC/[01]\.[0-9]{1,2}\r?\n")


def _gzip_record_at(stream, offset: int) -> bool:
    """Does a gzip member that decompresses to a WARC record start at ``offset``?"""
    stream.seek(offset)
    try:
        start = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(read_upto(stream, 4096), 64)
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
        block = read_upto(stream, BLOCK)
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
        if len(block) < BLOCK:
            return None
        pos += len(block) - 16  # overlap: a start may straddle two blocks


def data_ends_inside(stream, offset: int, gz: bool) -> bool:
    """Does the data end inside the record (its headers) that starts at ``offset``?"""
    stream.seek(offset)
    if gz:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while not decompressor.eof:
                block = stream.read(BLOCK)
                if not block:
                    return True  # the member never ends
                decompressor.decompress(block, BLOCK)
                while decompressor.unconsumed_tail and not decompressor.eof:
                    decompressor.decompress(decompressor.unconsumed_tail, BLOCK)
        except zlib.error:
            return False
        return False
    head = read_upto(stream, BLOCK)
    return b"\r\n\r\n" not in head and b"\n\n" not in head and len(head) < BLOCK


def sniff_format(head: bytes) -> Optional[str]:
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


def chunk_boundaries(raw: BinaryIO, chunk_bytes: int) -> Iterator[int]:
    """Record starts that cut the WARC file ``raw`` into ranges of whole records of
    about ``chunk_bytes`` each, at the boundaries warcio reports (0 and the end are
    not yielded). Only WARC files are cut: an ARC file or an empty one gives none;
    a damaged record ends the scan, so the rest of the file is one range, read (and
    resynchronised) as a file. Raises what reading the file raises."""
    start = 0
    head = raw.read(BLOCK)
    if sniff_format(head) != "warc":
        return
    iterator = WARCIterator(ReplayStream(head, raw))
    iterator.INC_RECORD = ""  # a length that lies: the reader's error row reports it
    for record in iterator:
        offset = iterator.get_record_offset()
        iterator.read_to_end()
        cut = getattr(record.raw_stream, "limit", 0) > 0
        if iterator.err_count or cut or record.rec_type is None or record.length is None:
            return  # damage: the rest is one range
        if offset - start >= chunk_bytes:
            yield offset
            start = offset
