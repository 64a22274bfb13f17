"""Hostile input through the whole pipeline (``mmcurate run`` on the DirectRunner):
the run ends with exit 0, and every fault is a row that names it.

Built here: a page whose images are malformed URLs, redirects to malformed URLs and
to an address embedding 169.254.169.254, served by this test's own HTTP server on
127.0.0.1 (every socket connection is checked to go nowhere else); a capture over
``read.max_image_bytes``; pages with exotic charset labels; a plain WARC whose
middle record declares 500 bytes more than it holds; a gzip WARC cut inside the
last record's headers."""

from __future__ import annotations

import json
import zlib
from http.server import BaseHTTPRequestHandler

import pyarrow.parquet as pq
import pytest

from imagegen import jpeg
from localnet import guard_connections, start_server, stop_server
from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main
from warcbuild import WarcBuilder, lie_about_length, record_spans

GOOD = jpeg(21, (400, 300))
TEXT = (
    "The ferry crosses the sound twice a day in winter and every hour in summer, and the crossing takes forty "
    "minutes when the wind is from the west. Islanders carry their shopping home in handcarts from the pier. "
)
REDIRECTS = {
    "/to-unclosed-ipv6.jpg": "http://[::1/x.png",
    "/to-escaped-brackets.jpg": "http://%5B::1%5D:18080/ok.png",
    "/to-6to4-metadata.jpg": "http://[2002:a9fe:a9fe::1]/latest/meta-data/",
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        status, headers, body = 404, {"Content-Type": "text/plain"}, b""
        if self.path == "/ok.jpg":
            status, headers, body = 200, {"Content-Type": "image/jpeg"}, GOOD
        elif self.path in REDIRECTS:
            status, headers = 302, {"Location": REDIRECTS[self.path]}
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    httpd = start_server(Handler, paths=[])
    yield httpd
    stop_server(httpd)


@pytest.fixture
def connections(monkeypatch):
    return guard_connections(monkeypatch)


def page(images: list[str]) -> str:
    figures = "".join(f'<figure><img src="{src}" alt="The ferry" width="400" height="300"></figure>' for src in images)
    return f"<!doctype html><html><head><title>Ferry</title></head><body><article><h1>The ferry</h1><p>{TEXT * 3}</p>{figures}<p>{TEXT}</p></article></body></html>"


def test_hostile_input_ends_with_exit_0_and_a_row_for_every_fault(tmp_path, server, connections):
    base = f"http://127.0.0.1:{server.server_address[1]}"
    big = jpeg(22, (1200, 900))
    images = [
        "http://a..b/x.png",
        "http://127.0.0.1:99999/x.png",
        *(base + path for path in REDIRECTS),
        "https://img.example/big.jpg",  # captured below, over read.max_image_bytes: never fetched
        base + "/ok.jpg",
    ]
    with WarcBuilder.open(tmp_path / "hostile.warc.gz") as warc:
        warc.html("https://ferry.example/timetable", page(images))
        warc.image("https://img.example/big.jpg", big)
        for i, label in enumerate(["undefined", "punycode", "ut\x00f-8"]):
            warc.html(f"https://ferry.example/charset/{i}", page([base + "/ok.jpg"]), http_charset=label)
    lie_urls = [f"https://ferry.example/lie/{i}" for i in range(3)]
    with WarcBuilder.open(tmp_path / "plain.warc") as warc:
        for url in lie_urls:
            warc.html(url, page([base + "/ok.jpg"]))
    lie_about_length(tmp_path / "plain.warc", tmp_path / "lying.warc", index=1, delta=500)
    (tmp_path / "plain.warc").unlink()
    cut_urls = [f"https://ferry.example/cut/{i}" for i in range(2)]
    with WarcBuilder.open(tmp_path / "whole.warc.gz") as warc:
        for url in cut_urls:
            warc.html(url, page([base + "/ok.jpg"]))
    data = (tmp_path / "whole.warc.gz").read_bytes()
    _, offset, length = record_spans(tmp_path / "whole.warc.gz")[-1]
    record = zlib.decompress(data[offset : offset + length], 16 + zlib.MAX_WBITS)
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
    cut = data[:offset] + compressor.compress(record[: record.index(b"WARC-Target-URI")]) + compressor.flush(zlib.Z_SYNC_FLUSH)
    (tmp_path / "cut.warc.gz").write_bytes(cut)
    (tmp_path / "whole.warc.gz").unlink()

    out = tmp_path / "out"
    code = main(
        [
            "run", str(tmp_path / "*.warc*"), "--output", str(out), "--stages", "images", "--quiet",
            "--set", "images.http=true", "--set", "images.allowed_networks=[127.0.0.1/32]",
            "--set", "images.deadline_seconds=5", "--set", f"read.max_image_bytes={len(big) - 1}",
            "--set", "images.dedup_image_sets=false", "--set", "extract.timeout_seconds=0",
            "--runner", "DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory",
        ]
    )
    assert code == 0

    decisions = pq.read_table(out / "decisions").to_pylist()
    read_errors = sorted((r["reason"], r["url"]) for r in decisions if r["stage"] == "read")
    assert read_errors == [("RecordLengthMismatch", lie_urls[1]), ("TruncatedRecord", "")]
    image_rows = {r["url"]: (r["kind"], r["reason"]) for r in decisions if r["subject"] == "image"}
    # Images that cannot be fetched are failures (kind error); a limit is a rejection.
    assert image_rows == {
        "http://a..b/x.png": ("error", reasons.IMAGE_INVALID_URL),
        "http://127.0.0.1:99999/x.png": ("error", reasons.IMAGE_INVALID_URL),
        base + "/to-unclosed-ipv6.jpg": ("error", reasons.IMAGE_INVALID_URL),
        base + "/to-escaped-brackets.jpg": ("error", reasons.IMAGE_INVALID_URL),
        base + "/to-6to4-metadata.jpg": ("error", reasons.IMAGE_REFUSED_ADDRESS),
        "https://img.example/big.jpg": ("rejected", reasons.IMAGE_CAPTURE_TOO_LARGE),
    }
    details = {r["url"]: r["detail"] for r in decisions if r["subject"] == "image"}
    assert "6to4 embeds 169.254.169.254" in details[base + "/to-6to4-metadata.jpg"]
    truncated = next(r for r in decisions if r["reason"] == "TruncatedRecord")
    assert "ends inside this record's headers (warcio: AttributeError" in truncated["detail"]

    kept = {r["url"] for r in pq.read_table(out / "documents", columns=["url"]).to_pylist()}
    assert kept == {
        "https://ferry.example/timetable",
        *(f"https://ferry.example/charset/{i}" for i in range(3)),
        lie_urls[0], lie_urls[2], cut_urls[0],  # cut_urls[1] is the cut record
    }
    manifest = json.loads((out / "manifest.json").read_text())
    totals = manifest["totals"]
    assert (totals["pages"], totals["kept"], totals["rejected"], totals["errors"]) == (9, 7, 0, 2)
    # Nothing connected anywhere but this test's server; the malformed and refused
    # URLs were never requested.
    assert connections and {address[0] for address in connections} == {"127.0.0.1"}
    assert not any(path.startswith("/x.png") or "meta-data" in path for path in server.paths)
