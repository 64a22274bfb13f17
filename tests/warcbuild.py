"""Write small WARC files for tests and fixtures, with warcio.

Use it as a library::

    from warcbuild import WarcBuilder, truncate_record

    with WarcBuilder.open(tmp_path / "t.warc.gz") as warc:
        warc.warcinfo({"software": "tests"})
        warc.html("http://example.com/", "<html><p>こんにちは</p></html>", charset="shift_jis")
        warc.image("http://example.com/a.jpg", jpeg_bytes)
        warc.revisit("http://example.com/", refers_to_date="2024-05-01T12:00:00Z")
    truncate_record(tmp_path / "t.warc.gz", tmp_path / "cut.warc.gz", index=2)

or from the command line (``python tests/warcbuild.py --help``) to write a WARC of
HTML pages from files, to cut a ``.warc.gz`` in the middle of one record, or to list
a file's records. ``write_arc`` writes ARC files (warcio only writes WARC).

Output is deterministic: record ids derive from the record's position, type and URL,
and dates count up from a fixed start, so rebuilding a fixture gives the same bytes.
Gzip output is one gzip member per record, as the WARC standard recommends.
"""

from __future__ import annotations

import argparse
import hashlib
import uuid
import zlib
from base64 import b32encode
from datetime import datetime, timedelta, timezone
from io import BytesIO
from pathlib import Path
from typing import BinaryIO, Iterable, Mapping, Optional, Sequence

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# Namespace of the deterministic record ids (uuid5).
_ID_NAMESPACE = uuid.UUID("6f1c3f2e-5a8b-4d0e-9c47-2b9e8d1a7c30")
DEFAULT_START = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)

_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 304: "Not Modified", 403: "Forbidden",
            404: "Not Found", 410: "Gone", 500: "Internal Server Error", 503: "Service Unavailable"}


def payload_digest(payload: bytes) -> str:
    """The ``sha1:BASE32`` digest WARC writers put in ``WARC-Payload-Digest``."""
    return "sha1:" + b32encode(hashlib.sha1(payload).digest()).decode("ascii")


class WarcBuilder:
    """Appends records to one WARC stream (plain, or one gzip member per record).

    Every ``add``-style method returns the record's ``WARC-Record-ID`` (with ``<>``).
    """

    def __init__(self, out: BinaryIO, gzip: bool = True, start: datetime = DEFAULT_START):
        self._out = out
        self._writer = WARCWriter(out, gzip=gzip, warc_version="1.0")
        self._start = start
        self._count = 0
        self._closer: Optional[BinaryIO] = None

    @classmethod
    def open(cls, path: str | Path, gzip: Optional[bool] = None, start: datetime = DEFAULT_START) -> "WarcBuilder":
        """A builder writing to ``path``; gzip defaults to the ``.gz`` suffix."""
        path = Path(path)
        if gzip is None:
            gzip = path.suffix == ".gz"
        fh = open(path, "wb")
        builder = cls(fh, gzip=gzip, start=start)
        builder._closer = fh
        return builder

    def close(self) -> None:
        if self._closer is not None:
            self._closer.close()
            self._closer = None

    def __enter__(self) -> "WarcBuilder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- record ids and dates -------------------------------------------------------

    def _next_headers(self, record_type: str, url: str, date: Optional[str], extra: Mapping[str, str]) -> dict:
        self._count += 1
        record_id = uuid.uuid5(_ID_NAMESPACE, f"{self._count}\x00{record_type}\x00{url}")
        if date is None:
            date = (self._start + timedelta(seconds=self._count)).strftime("%Y-%m-%dT%H:%M:%SZ")
        headers = {"WARC-Record-ID": f"<urn:uuid:{record_id}>", "WARC-Date": date}
        headers.update(extra)
        return headers

    def _write(self, record) -> str:
        self._writer.write_record(record)
        return record.rec_headers.get_header("WARC-Record-ID")

    # -- records -------------------------------------------------------------------

    def response(
        self,
        url: str,
        payload: bytes,
        content_type: Optional[str],
        status: int = 200,
        headers: Sequence[tuple[str, str]] = (),
        record_type: str = "response",
        date: Optional[str] = None,
        warc_headers: Optional[Mapping[str, str]] = None,
    ) -> str:
        """Any HTTP response record; ``content_type=None`` omits the header."""
        http = [("Content-Type", content_type)] if content_type is not None else []
        http += list(headers)
        if not any(k.lower() == "content-length" for k, _ in http):
            http.append(("Content-Length", str(len(payload))))
        status_line = f"{status} {_REASONS.get(status, 'Status')}"
        record = self._writer.create_warc_record(
            url,
            record_type,
            payload=BytesIO(payload),
            length=len(payload),
            http_headers=StatusAndHeaders(status_line, http, protocol="HTTP/1.1"),
            warc_headers_dict=self._next_headers(record_type, url, date, warc_headers or {}),
        )
        return self._write(record)

    def html(
        self,
        url: str,
        html: str | bytes,
        charset: Optional[str] = "utf-8",
        http_charset: Optional[str | bool] = True,
        status: int = 200,
        content_type: str = "text/html",
        headers: Sequence[tuple[str, str]] = (),
        date: Optional[str] = None,
    ) -> str:
        """An HTML response. ``html`` as text is encoded with ``charset``.

        ``http_charset``: True declares ``charset`` in the HTTP Content-Type, a string
        declares that label instead (it may lie), False/None declares none.
        """
        payload = html if isinstance(html, bytes) else html.encode(charset or "utf-8")
        if http_charset is True:
            http_charset = charset
        declared = f"{content_type}; charset={http_charset}" if http_charset else content_type
        return self.response(url, payload, declared, status=status, headers=headers, date=date)

    def image(self, url: str, payload: bytes, content_type: str = "image/jpeg", status: int = 200) -> str:
        """An image response (``image/jpeg``, ``image/png``, ...)."""
        return self.response(url, payload, content_type, status=status)

    def resource(self, url: str, payload: bytes, content_type: str, date: Optional[str] = None) -> str:
        """A ``resource`` record: the payload without HTTP headers."""
        record = self._writer.create_warc_record(
            url,
            "resource",
            payload=BytesIO(payload),
            length=len(payload),
            warc_content_type=content_type,
            warc_headers_dict=self._next_headers("resource", url, date, {}),
        )
        return self._write(record)

    def request(self, url: str, method: str = "GET") -> str:
        """An HTTP request record for ``url``."""
        host = url.split("/")[2] if "://" in url else ""
        path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
        http = StatusAndHeaders(f"{method} {path} HTTP/1.1", [("Host", host), ("User-Agent", "warcbuild")],
                                is_http_request=True)
        record = self._writer.create_warc_record(
            url, "request", http_headers=http, warc_headers_dict=self._next_headers("request", url, None, {})
        )
        return self._write(record)

    def revisit(self, url: str, refers_to_date: str, payload: bytes = b"", status: int = 200,
                content_type: str = "text/html") -> str:
        """An identical-payload-digest revisit of ``url`` (headers only, no payload)."""
        http = StatusAndHeaders(f"{status} {_REASONS.get(status, 'Status')}", [("Content-Type", content_type)],
                                protocol="HTTP/1.1")
        record = self._writer.create_revisit_record(
            url,
            digest=payload_digest(payload),
            refers_to_uri=url,
            refers_to_date=refers_to_date,
            http_headers=http,
            warc_headers_dict=self._next_headers("revisit", url, None, {}),
        )
        return self._write(record)

    def metadata(self, url: str, fields: Mapping[str, str]) -> str:
        """A ``metadata`` record of ``application/warc-fields`` about ``url``."""
        body = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")
        record = self._writer.create_warc_record(
            url,
            "metadata",
            payload=BytesIO(body),
            length=len(body),
            warc_content_type="application/warc-fields",
            warc_headers_dict=self._next_headers("metadata", url, None, {}),
        )
        return self._write(record)

    def warcinfo(self, fields: Mapping[str, str], filename: str = "") -> str:
        """A ``warcinfo`` record (usually the first in a file)."""
        body = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")
        extra = {"WARC-Filename": filename} if filename else {}
        record = self._writer.create_warc_record(
            "",
            "warcinfo",
            payload=BytesIO(body),
            length=len(body),
            warc_content_type="application/warc-fields",
            warc_headers_dict=self._next_headers("warcinfo", "", None, extra),
        )
        return self._write(record)

    def raw(self, data: bytes) -> None:
        """Bytes written as they are: for hand-made faults between records."""
        self._out.write(data)


def html_responses(path: str | Path) -> list[tuple[str, bytes, str, int]]:
    """(url, payload, content type, status) of every HTML response in a WARC file, in order."""
    pages = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type != "response" or not record.http_headers:
                continue
            content_type = record.http_headers.get_header("Content-Type") or ""
            if "html" in content_type:
                url = record.rec_headers.get_header("WARC-Target-URI")
                status = int(record.http_headers.get_statuscode())
                pages.append((url, record.content_stream().read(), content_type, status))
    return pages


def repeat_pages(src: str | Path, dst: str | Path, times: int) -> int:
    """Writes every HTML response of ``src`` ``times`` times (new URLs and record
    ids) to ``dst``; returns the number of pages written."""
    pages = html_responses(src)
    with WarcBuilder.open(dst) as warc:
        for copy in range(times):
            for url, payload, content_type, status in pages:
                warc.response(f"{url}#copy{copy}", payload, content_type, status=status)
    return len(pages) * times


def record_spans(path: str | Path) -> list[tuple[str, int, int]]:
    """(WARC-Type, offset, length) of every record in a WARC file, in order."""
    spans = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for record in it:
            rec_type = record.rec_type
            spans.append((rec_type, it.get_record_offset(), it.get_record_length()))
    return spans


def truncate_record(src: str | Path, dst: str | Path, index: int, keep: float = 0.5) -> int:
    """Copy ``src`` to ``dst`` cut inside record ``index`` (0-based), keeping the
    fraction ``keep`` of that record's bytes; returns the cut offset.

    On a ``.warc.gz`` this cuts a gzip member in the middle: every record before
    ``index`` stays whole and readable.
    """
    spans = record_spans(src)
    _, offset, length = spans[index]
    cut = offset + max(1, min(length - 1, int(length * keep)))
    data = Path(src).read_bytes()[:cut]
    Path(dst).write_bytes(data)
    return cut


def write_arc(path: str | Path, responses: Sequence[tuple[str, bytes]], gzip: Optional[bool] = None,
              date: str = "20240501120000") -> None:
    """Write an ARC (v1) file: a ``filedesc://`` header, then one record per
    (url, full HTTP response bytes). ``.gz`` paths get one gzip member per record."""
    path = Path(path)
    if gzip is None:
        gzip = path.suffix == ".gz"
    header_body = b"1 0 warcbuild\nURL IP-address Archive-date Content-type Archive-length\n"
    records = [f"filedesc://{path.name} 0.0.0.0 {date} text/plain {len(header_body)}\n".encode() + header_body]
    for url, http in responses:
        records.append(f"{url} 192.0.2.1 {date} text/html {len(http)}\n".encode() + http)
    with open(path, "wb") as fh:
        for record in records:
            data = record + b"\n"
            if gzip:
                compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
                data = compressor.compress(data) + compressor.flush()
            fh.write(data)


def _build_from_files(out: Path, urls_and_files: Iterable[tuple[str, Path]], charset: str, gzip: Optional[bool]) -> None:
    with WarcBuilder.open(out, gzip=gzip) as warc:
        warc.warcinfo({"software": "mmcurate tests/warcbuild.py", "format": "WARC File Format 1.0"})
        for url, path in urls_and_files:
            warc.request(url)
            warc.html(url, path.read_bytes(), charset=charset)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="warcbuild",
        description="Write fixture WARCs for mmcurate tests.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    pages = sub.add_parser("pages", help="write a WARC of HTML responses (one request + response per page)")
    pages.add_argument("output", type=Path, help="output file; .gz means gzip, one member per record")
    pages.add_argument("pages", nargs="+", metavar="URL=FILE", help="page URL and the HTML file to store for it")
    pages.add_argument("--charset", default="utf-8", help="charset declared in the HTTP Content-Type (default utf-8)")
    pages.add_argument("--plain", action="store_true", help="write uncompressed even if OUTPUT ends in .gz")

    cut = sub.add_parser("truncate", help="copy a WARC cut in the middle of one record")
    cut.add_argument("source", type=Path)
    cut.add_argument("output", type=Path)
    cut.add_argument("--record", type=int, default=-1, help="0-based index of the record to cut (default: last)")
    cut.add_argument("--keep", type=float, default=0.5, help="fraction of that record's bytes to keep (default 0.5)")

    spans = sub.add_parser("list", help="print type, offset and length of each record")
    spans.add_argument("source", type=Path)

    args = parser.parse_args(argv)
    if args.command == "pages":
        items = []
        for item in args.pages:
            url, sep, file = item.partition("=")
            if not sep:
                parser.error(f"expected URL=FILE, got {item!r}")
            items.append((url, Path(file)))
        _build_from_files(args.output, items, args.charset, False if args.plain else None)
    elif args.command == "truncate":
        index = args.record if args.record >= 0 else len(record_spans(args.source)) + args.record
        offset = truncate_record(args.source, args.output, index, args.keep)
        print(f"{args.output}: cut at byte {offset} inside record {index}")
    else:
        for rec_type, offset, length in record_spans(args.source):
            print(f"{offset}\t{length}\t{rec_type}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def _members(data: bytes, spans: Sequence[tuple[str, int, int]]) -> list[bytes]:
    return [data[offset : offset + length] for _, offset, length in spans]


def lie_about_length(src: str | Path, dst: str | Path, index: int, delta: int) -> int:
    """Copy ``src`` to ``dst`` with record ``index``'s WARC ``Content-Length`` off by
    ``delta`` (the block itself unchanged); returns the lying value. Works on plain
    WARC files and on ``.warc.gz`` (the member is recompressed)."""
    import re

    data = Path(src).read_bytes()
    spans = record_spans(src)
    _, offset, length = spans[index]
    gz = data[:2] == b"\x1f\x8b"
    record = zlib.decompress(data[offset : offset + length], 16 + zlib.MAX_WBITS) if gz else data[offset : offset + length]
    header_end = record.index(b"\r\n\r\n")
    match = re.compile(rb"\r\nContent-Length: *(\d+)", re.IGNORECASE).search(record, 0, header_end)
    lie = int(match.group(1)) + delta
    record = record[: match.start(1)] + str(lie).encode() + record[match.end(1) :]
    if gz:
        compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        record = compressor.compress(record) + compressor.flush()
    Path(dst).write_bytes(data[:offset] + record + data[offset + length :])
    return lie
