"""What can go wrong in a WARC file or one of its records: the exception types whose
names are the ``reason`` of the read stage's error rows."""

from __future__ import annotations


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
