"""ReadWarc on real and generated WARCs: what becomes a page, an image, a rejection or
an error, and that the `read` counters add up (pages == kept + rejected + errors)."""

from __future__ import annotations

import os
import random
import zlib
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from mmcurate.filters import reasons
from mmcurate.pipeline.config import ReadConfig
from mmcurate.schemas import make_doc_id
from mmcurate.stages.read import ReadWarc, ReadWarcFileFn
from beam_checks import assert_outputs
from warcbuild import WarcBuilder, lie_about_length, record_spans, truncate_record, write_arc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "warc"

JAPANESE = (
    "京都の古い町並みを歩くと、間口が狭く奥に長い木造の家が続いているのに気づきます。これが町家です。"
    "江戸時代、家の間口の広さで税が決められていたため、このような細長い形になったと言われています。"
)
CHINESE = (
    "每年清明前后，杭州西湖周围的茶山上就热闹起来。采茶人天不亮就上山，只摘最嫩的一芽一叶。"
    "这时的龙井茶被称为明前茶，产量少，香气也最清新。"
)


def html(text: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"


def counters_of(result) -> dict[str, int]:
    found: dict[str, int] = {}
    for counter in result.metrics().query(MetricsFilter().with_namespace("read"))["counters"]:
        found[counter.key.metric.name] = found.get(counter.key.metric.name, 0) + counter.committed
    return found


def run_read(patterns, config: ReadConfig | None = None, pages=(), images=(), rejected=(), errors=(), keys=None):
    """Runs ReadWarc and asserts each output, keyed (by default) as: pages and images
    by URL, rejected by (url, reason, value), errors by reason. Returns the counters."""
    keyers = {
        "pages": lambda page: page.url,
        "images": lambda image: image.url,
        "rejected": lambda row: (row.url, row.reason, row.value),
        "errors": lambda row: row.reason,
    }
    keyers.update(keys or {})
    expected = {"pages": pages, "images": images, "rejected": rejected, "errors": errors}
    p = TestPipeline()
    result = p | ReadWarc([str(x) for x in patterns], config or ReadConfig())
    assert_outputs({name: (getattr(result, name) | f"Key{name}" >> beam.Map(keyers[name]), want) for name, want in expected.items()})
    run = p.run()
    run.wait_until_finish()
    counters = counters_of(run)
    # Counters equal rows, and every page ends in exactly one place.
    assert counters.get("kept", 0) == len(pages)
    assert counters.get("images", 0) == len(images)
    assert sum(v for k, v in counters.items() if k.startswith("rejected.")) == len(rejected)
    assert sum(v for k, v in counters.items() if k.startswith("errors.")) == len(errors)
    assert counters.get("pages", 0) == len(pages) + len(rejected) + len(errors)
    return counters


# -- real fixtures ----------------------------------------------------------------------------


def test_books_toscrape_one_page_and_twenty_covers():
    covers = [line for line in _urls(FIXTURES / "books.toscrape.warc", "image/jpeg")]
    assert len(covers) == 20
    counters = run_read([FIXTURES / "books.toscrape.warc"], pages=["http://books.toscrape.com/"], images=covers)
    assert counters["records.request"] == 30
    assert counters["records.response"] == 30
    assert counters["mime.image/jpeg"] == 20
    assert counters["mime.text/css"] == 3


def test_parseme_one_page_three_redirects_three_images():
    counters = run_read(
        [FIXTURES / "parseMe.warc"],
        pages=["http://stringjs.com/"],
        images=_urls(FIXTURES / "parseMe.warc", "image/"),
        rejected=[
            ("http://documentup.com/stylesheets/screen.css", reasons.HTTP_STATUS_NOT_OK, 301.0),
            ("https://secure.travis-ci.org/jprichardson/string.js.png", reasons.HTTP_STATUS_NOT_OK, 301.0),
            ("https://travis-ci.org/jprichardson/string.js.png", reasons.HTTP_STATUS_NOT_OK, 301.0),
        ],
    )
    assert counters["mime.image/png"] == 2 and counters["mime.image/gif"] == 1
    assert counters["records.warcinfo"] == 1 and counters["records.metadata"] == 1


def test_whirlwind_common_crawl_record_set():
    counters = run_read(
        [FIXTURES / "whirlwind.warc.gz"],
        pages=[("https://an.wikipedia.org/wiki/Escopete", "utf-8", "http", 200, 1023, 17351)],
        keys={"pages": lambda p: (p.url, p.charset, p.charset_source, p.http_status, p.provenance.offset, p.provenance.length)},
    )
    assert {k: v for k, v in counters.items() if k.startswith("records.")} == {
        "records.warcinfo": 1,
        "records.request": 1,
        "records.response": 1,
        "records.metadata": 1,
    }


def test_clueweb_japanese_pages_decode_and_survive_invalid_warc_date():
    # The pages are EUC-JP (declared in HTTP and <meta>), gzip content-encoded.
    first = "http://www.uraharajuku.st/shopdetail/001005000005/019/000/order/"
    urls = _urls(FIXTURES / "clueweb-quirk.warc.gz", "text/html")
    assert len(urls) == 29

    def key(page):
        title = page.html.split("<title>", 1)[1].split("</title>", 1)[0] if page.url == first else ""
        return page.url, page.charset, page.charset_source, page.provenance.date, title.strip("\u3000 ")

    expected = [(u, "euc_jp", "http", "2008-10-294T05:21:46-0700", "") for u in urls]
    expected[urls.index(first)] = (
        first, "euc_jp", "http", "2008-10-294T05:21:46-0700", "ブラウニー ブリーフケース【ヘッドポーター HEADPORTER 吉田かばん】"
    )
    counters = run_read([FIXTURES / "clueweb-quirk.warc.gz"], pages=expected, keys={"pages": key})
    assert counters["records.warcinfo"] == 1


# -- charsets ---------------------------------------------------------------------------------


def test_shift_jis_and_gbk_pages_decode_exactly(tmp_path):
    path = tmp_path / "cjk.warc.gz"
    pages = {
        "http://ja.example/http": (html(JAPANESE), "shift_jis", "Shift_JIS", "cp932", "http"),
        "http://ja.example/meta": (html(JAPANESE, '<meta charset="sjis">'), "shift_jis", False, "cp932", "meta"),
        "http://ja.example/none": (html(JAPANESE), "shift_jis", False, "cp932", "detected"),
        "http://zh.example/http": (html(CHINESE), "gbk", "GB2312", "gb18030", "http"),
        "http://zh.example/meta": (
            html(CHINESE, '<meta http-equiv="Content-Type" content="text/html; charset=GBK">'), "gbk", False, "gb18030", "meta"),
        # The HTTP header lies (utf-8); the strict decode fails, detection finds GBK.
        "http://zh.example/lie": (html(CHINESE), "gbk", "utf-8", "gb18030", "detected"),
    }
    with WarcBuilder.open(path) as warc:
        for url, (text, encoding, declared, _, _) in pages.items():
            warc.html(url, text, charset=encoding, http_charset=declared)
    expected = [(url, codec, source, True) for url, (_, _, _, codec, source) in pages.items()]
    originals = {url: text for url, (text, *_rest) in pages.items()}
    run_read(
        [path],
        pages=expected,
        keys={"pages": lambda p: (p.url, p.charset, p.charset_source, p.html == originals[p.url])},
    )


# -- record types, statuses, limits ---------------------------------------------------------


def test_record_types_statuses_sniffing_and_limits(tmp_path):
    path = tmp_path / "mixed.warc"
    big = html("A long paragraph. " * 400)
    with WarcBuilder.open(path) as warc:
        warc.warcinfo({"software": "tests"})
        warc.request("http://site.example/")
        page_id = warc.html("http://site.example/", html("Hello."))
        warc.metadata("http://site.example/", {"fetchTimeMs": "12"})
        warc.revisit("http://site.example/", refers_to_date="2024-05-01T12:00:01Z", payload=b"x")
        missing_id = warc.html("http://site.example/missing", html("Not here."), status=404)
        warc.html("http://site.example/big", big)  # over max_payload_bytes below
        warc.response("http://site.example/sniffed", html("No type.").encode(), content_type=None)
        warc.response("http://site.example/octet", html("Generic type.").encode(), "application/octet-stream")
        warc.response("http://site.example/notes.txt", b"<html> as plain text", "text/plain")
        warc.resource("http://site.example/resource.html", html("A resource.").encode(), "text/html")
        warc.image("http://site.example/a.jpg", b"\xff\xd8jpeg" * 10)
        warc.image("http://site.example/huge.png", b"\x89PNG" * 1000, content_type="image/png")
        warc.image("http://site.example/gone.jpg", b"\xff\xd8", status=404)
        warc.html("http://site.example/after", html("Still read after the error."))
    config = ReadConfig(max_payload_bytes=2000, max_image_bytes=1000)
    counters = run_read(
        [path],
        config,
        pages=[
            "http://site.example/", "http://site.example/sniffed", "http://site.example/octet",
            "http://site.example/resource.html", "http://site.example/after",
        ],
        # huge.png is passed on without its bytes (image.capture_too_large downstream).
        images=["http://site.example/a.jpg", "http://site.example/huge.png"],
        rejected=[("http://site.example/missing", reasons.HTTP_STATUS_NOT_OK, 404.0)],
        errors=["PayloadTooLarge"],
    )
    assert counters["records.revisit"] == 1
    assert counters["records.request"] == 1
    assert counters["records.metadata"] == 1
    assert counters["records.warcinfo"] == 1
    assert counters["records.resource"] == 1
    assert counters["mime.text/plain"] == 1
    assert counters["images.too_large"] == 1
    assert counters["images.status_not_ok"] == 1
    assert counters["errors.PayloadTooLarge"] == 1

    # Ids, provenance and the rejection row in full.
    spans = {offset: length for _, offset, length in record_spans(path)}
    p = TestPipeline()
    result = p | ReadWarc([str(path)], config)
    assert_that(
        result.rejected | beam.Map(lambda r: (r.doc_id, r.stage, r.kind, r.reason, r.value, r.threshold, r.subject)),
        equal_to([(make_doc_id(missing_id, "", ""), "read", "rejected", reasons.HTTP_STATUS_NOT_OK, 404.0, None, "page")]),
        label="Rejected",
    )
    assert_that(
        result.pages
        | beam.Filter(lambda page: page.url == "http://site.example/")
        | beam.Map(lambda page: (page.doc_id, page.provenance.record_id, spans.get(page.provenance.offset) == page.provenance.length)),
        equal_to([(make_doc_id(page_id), page_id, True)]),
        label="Provenance",
    )
    p.run().wait_until_finish()


def test_keep_images_off(tmp_path):
    path = tmp_path / "img.warc.gz"
    with WarcBuilder.open(path) as warc:
        warc.image("http://site.example/a.jpg", b"\xff\xd8jpeg")
    counters = run_read([path], ReadConfig(keep_images=False))
    assert counters["mime.image/jpeg"] == 1


# -- faults ---------------------------------------------------------------------------------


def _five_pages(path: Path) -> list[str]:
    """Five pages of varied words, so that each gzip member is a few KB."""
    words = "tide marsh heron creek sluice reed mud channel wigeon samphire lapwing avocet wall path".split()
    rng = random.Random(5)
    urls = [f"http://cut.example/{i}" for i in range(5)]
    with WarcBuilder.open(path) as warc:
        for i, url in enumerate(urls):
            warc.html(url, html(f"Page {i}. " + " ".join(rng.choice(words) for _ in range(1500))))
    return urls


@pytest.mark.parametrize(
    "name, keep, reason",
    [
        ("cut.warc.gz", 0.5, "TruncatedRecord"),  # the member's headers survive, its payload does not
        ("cut.warc.gz", 0.05, "MalformedRecord"),  # the record's headers are cut too
        ("cut.warc.gz", 0.01, "TruncatedFile"),  # too little of the member to yield a record
        ("cut.warc", 0.5, "TruncatedRecord"),
    ],
)
def test_truncated_file_keeps_records_before_the_cut_and_adds_one_error(tmp_path, name, keep, reason):
    whole = tmp_path / ("whole" + name[3:])
    urls = _five_pages(whole)
    cut = tmp_path / name
    truncate_record(whole, cut, index=3, keep=keep)
    offset = record_spans(whole)[3][1]
    fault_id = make_doc_id(url=str(cut), date=f"fault@{offset}")
    # A record whose headers survive names its URL on the row.
    url = urls[3] if reason == "TruncatedRecord" else ""
    counters = run_read(
        [cut],
        pages=urls[:3],
        errors=[(reason, fault_id, offset, url)],
        keys={"errors": lambda r: (r.reason, r.doc_id, r.provenance.offset, r.url)},
    )
    assert counters["pages"] == 4


def test_garbage_and_empty_files_never_crash_the_run(tmp_path):
    good = tmp_path / "good.warc.gz"
    with WarcBuilder.open(good) as warc:
        warc.html("http://ok.example/", html("Fine."))
    (tmp_path / "random.warc.gz").write_bytes(os.urandom(4096))
    (tmp_path / "text.warc").write_bytes(b"this is not a warc file at all\n" * 50)
    (tmp_path / "badgzip.warc.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 6 + os.urandom(500))
    (tmp_path / "empty.warc.gz").write_bytes(b"")
    # Valid records, then junk where the next record should start: one error row for
    # the junk, and reading resumes at the next record.
    tail = tmp_path / "tail.warc"
    with WarcBuilder.open(tail) as warc:
        warc.html("http://tail.example/1", html("One."))
        warc.raw(b"GARBAGE GARBAGE GARBAGE\r\n\r\n")
        warc.html("http://tail.example/2", html("Two, found again behind the garbage."))
    counters = run_read(
        [tmp_path / "*.warc*"],
        pages=["http://ok.example/", "http://tail.example/1", "http://tail.example/2"],
        errors=[("NotAnArchive", "random.warc.gz"), ("NotAnArchive", "text.warc"), ("NotAnArchive", "badgzip.warc.gz"),
                ("ArchiveLoadFailed", "tail.warc")],
        keys={"errors": lambda r: (r.reason, Path(r.provenance.warc_file).name)},
    )
    assert counters["files"] == 6
    assert counters["files.empty"] == 1


def test_arc_files_are_read(tmp_path):
    http = b"HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html("Une page en ARC, café.").encode()
    write_arc(tmp_path / "a.arc", [("http://arc.example/1", http), ("http://arc.example/2", http)])
    write_arc(tmp_path / "b.arc.gz", [("http://arc.example/3", http)])
    # ARC records have no id: doc ids come from URL and date, stable across runs.
    run_read(
        [tmp_path / "a.arc", tmp_path / "b.arc.gz"],
        pages=[(f"http://arc.example/{i}", make_doc_id(url=f"http://arc.example/{i}", date="2024-05-01T12:00:00Z"), True)
               for i in (1, 2, 3)],
        keys={"pages": lambda p: (p.url, p.doc_id, "café" in p.html)},
    )


def test_patterns_matching_nothing_or_the_same_file_twice(tmp_path):
    path = tmp_path / "one.warc.gz"
    with WarcBuilder.open(path) as warc:
        warc.html("http://once.example/", html("Read once."))
    run_read([tmp_path / "nothing-*.warc.gz", path, tmp_path / "*.warc.gz"], pages=["http://once.example/"])


def _urls(path: Path, mime_prefix: str) -> list[str]:
    """Target URIs of the 2xx responses in ``path`` whose Content-Type starts with ``mime_prefix``."""
    from warcio.archiveiterator import ArchiveIterator

    urls = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            http = record.http_headers
            if record.rec_type != "response" or http is None:
                continue
            if (http.get_header("Content-Type") or "").startswith(mime_prefix) and http.get_statuscode().startswith("2"):
                urls.append(record.rec_headers.get_header("WARC-Target-URI"))
    return urls


# -- hostile input: lying lengths, cut headers, exotic charsets ------------------------------


def _three_pages(path: Path) -> list[str]:
    urls = [f"http://lie.example/{i}" for i in range(3)]
    with WarcBuilder.open(path) as warc:
        for i, url in enumerate(urls):
            warc.html(url, html(f"Page {i}: " + "a long tidal walk along the sea wall " * 30))
    return urls


@pytest.mark.parametrize("name", ["three.warc", "three.warc.gz"])
@pytest.mark.parametrize("delta", [500, -100, -1, 40])
def test_a_lying_content_length_is_an_error_row_and_the_next_record_is_read(tmp_path, name, delta):
    whole = tmp_path / name
    urls = _three_pages(whole)
    lying = tmp_path / ("lying-" + name)
    lie_about_length(whole, lying, index=1, delta=delta)
    offset = record_spans(whole)[1][1]
    # Declared longer than the member holds: warcio reports the missing bytes.
    reason = "TruncatedRecord" if name.endswith(".gz") and delta > 0 else "RecordLengthMismatch"
    counters = run_read(
        [lying],
        pages=[urls[0], urls[2]],
        errors=[(reason, urls[1], offset)],
        keys={"errors": lambda r: (r.reason, r.url, r.provenance.offset)},
    )
    assert counters["pages"] == 3


def test_the_lying_length_row_says_where_reading_resumed(tmp_path):
    whole = tmp_path / "three.warc"
    _three_pages(whole)
    lie_about_length(whole, tmp_path / "lying.warc", index=1, delta=500)
    fn = ReadWarcFileFn(ReadConfig())
    fn.setup()
    rows = [out.value for out in fn.process(str(tmp_path / "lying.warc")) if isinstance(out, beam.pvalue.TaggedOutput)]
    (row,) = rows
    third = record_spans(whole)[2][1]
    assert row.detail.endswith(f"reading resumed at the next record, byte {third}")
    assert "Content-Length" in row.detail


def _cut_inside_warc_headers(path: Path, dst: Path) -> None:
    """The last gzip member cut (no end, no trailer) inside its WARC headers, before
    WARC-Target-URI: warcio itself fails there with an AttributeError."""
    data = path.read_bytes()
    _, offset, length = record_spans(path)[-1]
    record = zlib.decompress(data[offset : offset + length], 16 + zlib.MAX_WBITS)
    cut = record.index(b"WARC-Target-URI")
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
    dst.write_bytes(data[:offset] + compressor.compress(record[:cut]) + compressor.flush(zlib.Z_SYNC_FLUSH))


def test_truncation_inside_gzipped_record_headers_is_named_not_warcios_attribute_error(tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    whole = tmp_path / "three.warc.gz"
    urls = _three_pages(whole)
    cut = tmp_path / "cut.warc.gz"
    _cut_inside_warc_headers(whole, cut)
    with open(cut, "rb") as fh, pytest.raises(AttributeError):  # what warcio alone does
        list(ArchiveIterator(fh))
    offset = record_spans(whole)[2][1]
    run_read(
        [cut],
        pages=urls[:2],
        errors=[("TruncatedRecord", offset, True)],
        keys={"errors": lambda r: (r.reason, r.provenance.offset, "ends inside this record's headers (warcio: AttributeError" in r.detail)},
    )


def test_pages_with_exotic_charset_labels_are_kept_not_error_rows(tmp_path):
    path = tmp_path / "labels.warc.gz"
    labels = ["undefined", "punycode", "idna", "ut\x00f-8", "utf-7"]
    urls = [f"http://labels.example/{i}" for i in range(len(labels))]
    with WarcBuilder.open(path) as warc:
        for url, label in zip(urls, labels):
            warc.html(url, html("Grüße aus Köln, Straße für Straße."), http_charset=label)
    run_read([path], pages=urls)
