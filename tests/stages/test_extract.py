"""Extraction: node order against golden sequences, image URL and metadata details,
the size and time guards, error rows, and the stage on Beam."""

import json
import re
import time
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from warcio.archiveiterator import ArchiveIterator

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import ImageNode, Page, Provenance, TextNode
from mmcurate.stages.extract import (
    SIGNAL_HTML_BYTES,
    SIGNAL_SECONDS,
    ExtractDocuments,
    ExtractDocumentsFn,
)
from mmcurate.stages.extractors import Extraction, extract_trafilatura, load_extractor, parse_srcset

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HTML_FIXTURES = FIXTURES / "html"
BOOKS_WARC = FIXTURES / "warc" / "books.toscrape.warc"
SLEEP_MARKER = "<!-- extract-test: sleep -->"
RAISE_MARKER = "<!-- extract-test: raise -->"

OPENING = (
    "The survey team walked the length of the sea wall at every spring tide for three years, "
    "recording each bird within fifty metres of the line and the state of the creeks beside it."
)
CLOSING = (
    "Counts were steady from one season to the next, although the samphire spread into two new "
    "creeks on the eastern side of the marsh, where the mud is building up behind the bank."
)


# Test extractors, loaded by dotted path (in the child process too).
def sleepy_extractor(html: str, url: str, config: ExtractConfig) -> Extraction:
    """Sleeps far past any test time limit on a marked page; extracts the others."""
    if SLEEP_MARKER in html:
        time.sleep(60)
    return extract_trafilatura(html, url, config)


def busy_extractor(html: str, url: str, config: ExtractConfig) -> Extraction:
    """Computes in Python far past any test time limit on a marked page (as a
    pathological page keeps trafilatura's loops busy); extracts the others."""
    if SLEEP_MARKER in html:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                sum(range(1000))
            except Exception:  # the extractor's own broad handlers must not swallow the stop
                pass
    return extract_trafilatura(html, url, config)


def raising_extractor(html: str, url: str, config: ExtractConfig) -> Extraction:
    """Raises on a marked page; extracts the others."""
    if RAISE_MARKER in html:
        raise ValueError("this page breaks the extractor")
    return extract_trafilatura(html, url, config)


def _dotted(fn) -> str:
    return f"{fn.__module__}:{fn.__qualname__}"


def _page(doc_id: str, html: str, url: str = "https://example.org/a/page.html") -> Page:
    return Page(
        doc_id=doc_id,
        url=url,
        html=html,
        provenance=Provenance(warc_file="test.warc.gz", record_id=f"<urn:uuid:{doc_id}>", offset=0),
        http_status=200,
        content_type="text/html",
        charset="utf-8",
        charset_source="http",
        payload_bytes=len(html.encode()),
    )


def _article(body: str, head: str = "") -> str:
    return f"<html><head>{head}</head><body><article><p>{OPENING}</p>{body}<p>{CLOSING}</p></article></body></html>"


def _images(extraction: Extraction) -> list[ImageNode]:
    return [n for n in extraction.nodes if isinstance(n, ImageNode)]


def _run_fn(config: ExtractConfig, pages: list[Page]) -> list:
    fn = ExtractDocumentsFn(config)
    fn.setup()
    try:
        return [out for page in pages for out in fn.process(page)]
    finally:
        fn.teardown()


def _is_error(out) -> bool:
    return isinstance(out, beam.pvalue.TaggedOutput)


# ---------------------------------------------------------------------------
# Golden node sequences


@pytest.mark.parametrize("name", sorted(p.stem for p in HTML_FIXTURES.glob("*.html")))
def test_node_order_matches_golden(name):
    golden = json.loads((HTML_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    html = (HTML_FIXTURES / f"{name}.html").read_text(encoding="utf-8")
    extraction = extract_trafilatura(html, golden["url"], ExtractConfig())
    got = []
    for node in extraction.nodes:
        if isinstance(node, TextNode):
            got.append(["text", node.tag, " ".join(node.text.split())])
        else:
            got.append(["image", node.src, node.alt, node.caption])
    assert len(got) == len(golden["nodes"]), got
    for position, (actual, expected) in enumerate(zip(got, golden["nodes"])):
        if expected[0] == "text":
            assert actual[:2] == expected[:2], (position, actual)
            assert actual[2].startswith(expected[2]), (position, actual)
        else:
            assert actual == expected, (position, actual)
    assert extraction.title == golden["title"]


def test_boilerplate_images_are_left_out():
    html = (HTML_FIXTURES / "boilerplate.html").read_text(encoding="utf-8")
    extraction = extract_trafilatura(html, "https://pottingshed.example.com/guides/repair-terracotta/", ExtractConfig())
    assert [i.alt for i in _images(extraction)] == ["A terracotta pot with a glued crack held by tape"]


def test_recovery_can_be_turned_off():
    # A picture just above the first paragraph: placed only with recover_images.
    html = _article("").replace("<article>", '<article><img src="above.jpg" alt="x" width="800" height="600">')
    url = "https://example.org/a/page.html"
    on = {i.src for i in _images(extract_trafilatura(html, url, ExtractConfig()))}
    off = {i.src for i in _images(extract_trafilatura(html, url, ExtractConfig(recover_images=False)))}
    assert on == {"https://example.org/a/above.jpg"} and off == set()


# ---------------------------------------------------------------------------
# Image URLs, lazy loading, captions, declared sizes


@pytest.mark.parametrize(
    "img, expected",
    [
        ('<img src="photo.jpg" alt="x">', "https://example.org/a/photo.jpg"),
        ('<img src="/img/photo.jpg" alt="x">', "https://example.org/img/photo.jpg"),
        ('<img src="//cdn.example.net/photo.jpg" alt="x">', "https://cdn.example.net/photo.jpg"),
        ('<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="lazy.jpg" alt="x">', "https://example.org/a/lazy.jpg"),
        ('<img src="/static/blank.gif" data-original="orig.jpg" alt="x">', "https://example.org/a/orig.jpg"),
        ('<img src="spacer.gif" data-lazy-src="/l/real.png" alt="x">', "https://example.org/l/real.png"),
        ('<img data-url="https://img.example.com/u.webp" alt="x">', "https://img.example.com/u.webp"),
        ('<img src="placeholder.png" data-srcset="s.jpg 300w, l.jpg 1200w, m.jpg 800w" alt="x">', "https://example.org/a/l.jpg"),
        ('<img srcset="a.jpg 1x, b.jpg 2x" alt="x">', "https://example.org/a/b.jpg"),
        (
            '<picture><source srcset="p.avif 640w, p-big.avif 1280w" type="image/avif">'
            '<img src="/lazy-load.gif" alt="x"></picture>',
            "https://example.org/a/p-big.avif",
        ),
        ('<img src="real.jpg" data-src="other.jpg" alt="x">', "https://example.org/a/real.jpg"),
        # A name that only looks like a placeholder, with nothing better beside it.
        ('<img src="lazy-river.jpg" alt="x">', "https://example.org/a/lazy-river.jpg"),
    ],
)
def test_image_url_resolution(img, expected):
    extraction = extract_trafilatura(_article(img), "https://example.org/a/page.html", ExtractConfig())
    assert [i.src for i in _images(extraction)] == [expected]


def test_base_href_resolves_relative_urls():
    html = _article('<img src="../pics/one.jpg" alt="x">', head='<base href="https://static.example.net/site/en/">')
    extraction = extract_trafilatura(html, "https://example.org/a/page.html", ExtractConfig())
    assert [i.src for i in _images(extraction)] == ["https://static.example.net/site/pics/one.jpg"]


def test_unusable_images_are_dropped():
    body = (
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="inline">'
        '<img src="javascript:void(0)" alt="script">'
        '<img src="https://tracker.example.com/t.jpg" width="1" height="1" alt="pixel">'
    )
    extraction = extract_trafilatura(_article(body), "https://example.org/a/page.html", ExtractConfig())
    assert _images(extraction) == []


@pytest.mark.parametrize(
    "attrs, size",
    [
        ('width="640" height="480"', (640, 480)),
        ('width="640px" height=" 480 "', (640, 480)),
        ('style="width: 320px; height:200px"', (320, 200)),
        ('style="max-width: 900px; width:300px"', (300, None)),
        ('width="100%" height="auto"', (None, None)),
        ("", (None, None)),
    ],
)
def test_declared_size(attrs, size):
    extraction = extract_trafilatura(_article(f'<img src="p.jpg" alt="x" {attrs}>'), "https://example.org/", ExtractConfig())
    (image,) = _images(extraction)
    assert (image.declared_width, image.declared_height) == size


def test_caption_title_and_declared_size_from_the_dom():
    html = (HTML_FIXTURES / "interleaved.html").read_text(encoding="utf-8")
    extraction = extract_trafilatura(html, "https://www.example.org/journal/2024/marshes.html", ExtractConfig())
    by_alt = {i.alt: i for i in _images(extraction)}
    curlew = by_alt["A curlew probing the mud"]
    assert (curlew.caption, curlew.title) == ("A curlew feeding at low tide in October.", "Curlew")
    assert (curlew.declared_width, curlew.declared_height) == (640, 427)
    transects = by_alt["Map of the survey transects"]
    assert (transects.declared_width, transects.declared_height) == (900, 600)
    # srcset="...480w, ...1080w, ...800w", width="100%": the 1080w candidate, 1080 px wide.
    heron = by_alt["A grey heron standing in the shallows"]
    assert (heron.declared_width, heron.declared_height) == (1080, None)


def test_parse_srcset():
    assert parse_srcset("a.jpg 480w, b.jpg 1080w") == [("a.jpg", "w", 480.0), ("b.jpg", "w", 1080.0)]
    assert parse_srcset("https://cdn.example.com/x.jpg,w_300 300w") == [("https://cdn.example.com/x.jpg,w_300", "w", 300.0)]
    assert parse_srcset("one.jpg, two.jpg 2x, three.jpg 1.5x") == [("one.jpg", "x", 1.0), ("two.jpg", "x", 2.0), ("three.jpg", "x", 1.5)]
    assert parse_srcset("bad.jpg 2q, z.jpg 0x, ok.jpg 3x") == [("bad.jpg", "x", 1.0), ("ok.jpg", "x", 3.0)]


# ---------------------------------------------------------------------------
# Page metadata


def test_hreflang_title_and_html_lang():
    html = (HTML_FIXTURES / "hreflang.html").read_text(encoding="utf-8")
    extraction = extract_trafilatura(html, "https://museum.example.org/en/visit", ExtractConfig())
    assert extraction.title == "Opening hours and visitor information - City Museum"
    assert extraction.hreflang == (
        ("de", "https://museum.example.org/de/besuch"),
        ("fr", "https://museum.example.org/fr/visite"),
        ("x-default", "https://museum.example.org/visit"),
    )
    assert extraction.metadata["html_lang"] == "en-GB"
    assert "sitename" not in extraction.metadata
    with_metadata = extract_trafilatura(html, "https://museum.example.org/en/visit", ExtractConfig(with_metadata=True))
    assert with_metadata.metadata["sitename"] == "museum.example.org"


def test_empty_and_contentless_pages_give_empty_extractions():
    assert extract_trafilatura("", "https://example.org/", ExtractConfig()).nodes == ()
    assert extract_trafilatura("<html><body></body></html>", "https://example.org/", ExtractConfig()).nodes == ()


@pytest.mark.parametrize(
    "body",
    [
        '<p>Back soon.</p><img src="/a.jpg" alt="shop front">',
        '<img src="/a.jpg" alt="shop front"><p>Back soon.</p>',
        '<div><img src="/a.jpg" alt="shop front"></div>',
    ],
)
def test_little_text_keeps_its_images(body):
    html = f"<html><body><nav><img src='/logo.png' alt='logo'></nav>{body}</body></html>"
    extraction = extract_trafilatura(html, "https://example.org/shop", ExtractConfig())
    assert [(i.src, i.alt) for i in _images(extraction)] == [("https://example.org/a.jpg", "shop front")]


def test_load_extractor():
    assert load_extractor("trafilatura") is extract_trafilatura
    assert load_extractor(_dotted(sleepy_extractor)) is sleepy_extractor
    with pytest.raises(ValueError, match="dotted path"):
        load_extractor("not-an-extractor")
    with pytest.raises(ModuleNotFoundError):
        load_extractor("no_such_module_anywhere:extract")


# ---------------------------------------------------------------------------
# The real page: a product grid whose covers trafilatura drops


def _books_page() -> tuple[str, str]:
    with open(BOOKS_WARC, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type == "response" and record.rec_headers.get_header("WARC-Target-URI") == "http://books.toscrape.com/":
                return record.content_stream().read().decode("utf-8"), "http://books.toscrape.com/"
    raise AssertionError("no books.toscrape.com page in the fixture WARC")


def test_books_toscrape_covers_are_all_recovered():
    html, url = _books_page()
    covers = re.findall(r'<img src="(media/cache/[^"]+)" alt="([^"]*)"', html)
    assert len(covers) == 20
    extraction = extract_trafilatura(html, url, ExtractConfig())
    images = _images(extraction)
    expected = [(f"http://books.toscrape.com/{src}", alt.replace("&#39;", "'").replace("&amp;", "&")) for src, alt in covers]
    assert [(i.src, i.alt) for i in images] == expected
    # Each cover comes before its price: the grid's reading order.
    first_text = next(i for i, n in enumerate(extraction.nodes) if isinstance(n, TextNode))
    assert isinstance(extraction.nodes[0], ImageNode) and first_text == 1


# ---------------------------------------------------------------------------
# The stage's guards


def test_document_carries_page_facts_and_signals():
    (doc,) = _run_fn(ExtractConfig(timeout_seconds=0), [_page("d1", _article('<img src="p.jpg" alt="x">'))])
    assert doc.doc_id == "d1" and doc.provenance.record_id == "<urn:uuid:d1>"
    assert doc.metadata["charset"] == "utf-8" and doc.metadata["charset_source"] == "http"
    assert doc.metadata["content_type"] == "text/html" and doc.metadata["http_status"] == "200"
    assert doc.metadata["extractor"] == "trafilatura"
    assert doc.signals[SIGNAL_HTML_BYTES] > 0 and 0 < doc.signals[SIGNAL_SECONDS] < 10
    assert [type(n).__name__ for n in doc.nodes] == ["TextNode", "ImageNode", "TextNode"]


def test_page_without_content_is_still_a_document():
    (doc,) = _run_fn(ExtractConfig(timeout_seconds=0), [_page("bare", "<html><body><p>Hi.</p></body></html>")])
    assert doc.doc_id == "bare"


def test_html_too_large_is_an_error_row_without_parsing():
    big = _article("") + "<!--" + "x" * 5000 + "-->"
    (out,) = _run_fn(ExtractConfig(timeout_seconds=0, max_html_bytes=4096), [_page("big", big)])
    assert _is_error(out)
    row = out.value
    assert (row.stage, row.kind, row.reason) == ("extract", "error", "HtmlTooLarge")
    assert row.value == len(big.encode()) and row.threshold == 4096


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_timeout_stops_the_extractor_and_the_next_page_still_extracts(isolation):
    config = ExtractConfig(extractor=_dotted(sleepy_extractor), timeout_seconds=1, isolation=isolation)
    pages = [_page("slow", _article("") + SLEEP_MARKER), _page("next", _article('<img src="p.jpg" alt="x">'))]
    started = time.perf_counter()
    outs = _run_fn(config, pages)
    # Well under the page's 60 s sleep (a child's start-up takes seconds on a busy machine).
    assert time.perf_counter() - started < 50
    assert _is_error(outs[0])
    row = outs[0].value
    assert (row.doc_id, row.reason, row.threshold) == ("slow", "ExtractionTimeout", 1.0)
    assert row.value >= 1.0
    assert not _is_error(outs[1])
    assert outs[1].doc_id == "next" and len(outs[1].image_nodes) == 1


def test_a_busy_page_is_stopped_in_its_thread_without_a_child_process():
    config = ExtractConfig(extractor=_dotted(busy_extractor), timeout_seconds=1)
    fn = ExtractDocumentsFn(config)
    fn.setup()
    try:
        pages = [_page(f"p{i}", _article("")) for i in range(3)]
        pages.insert(1, _page("busy", _article("") + SLEEP_MARKER))
        started = time.perf_counter()
        outs = [out for page in pages for out in fn.process(page)]
        assert time.perf_counter() - started < 20
        guard = fn._process
        assert (guard.timeouts, guard.abandoned, guard.in_fallback) == (1, 0, False)
    finally:
        fn.teardown()
    assert [(o.value.doc_id, o.value.reason) if _is_error(o) else o.doc_id for o in outs] == [
        "p0",
        ("busy", "ExtractionTimeout"),
        "p1",
        "p2",
    ]


def test_a_page_stuck_in_a_c_call_sends_the_rest_to_a_child_process():
    # time.sleep is one C call: the thread cannot be stopped in it.
    config = ExtractConfig(extractor=_dotted(sleepy_extractor), timeout_seconds=1)
    fn = ExtractDocumentsFn(config)
    fn.setup()
    try:
        outs = [out for page in (_page("slow", _article("") + SLEEP_MARKER), _page("next", _article(""))) for out in fn.process(page)]
        assert (fn._process.abandoned, fn._process.in_fallback) == (1, True)
    finally:
        fn.teardown()
    assert _is_error(outs[0]) and outs[0].value.reason == "ExtractionTimeout"
    assert not _is_error(outs[1]) and outs[1].doc_id == "next"


@pytest.mark.parametrize("timeout, isolation", [(0, "thread"), (5, "thread"), (5, "process")])
def test_extractor_exception_is_an_error_row(timeout, isolation):
    config = ExtractConfig(extractor=_dotted(raising_extractor), timeout_seconds=timeout, isolation=isolation)
    pages = [_page("boom", _article("") + RAISE_MARKER), _page("fine", _article(""))]
    outs = _run_fn(config, pages)
    assert _is_error(outs[0])
    row = outs[0].value
    assert (row.doc_id, row.reason) == ("boom", "ValueError")
    assert "this page breaks the extractor" in row.detail
    assert not _is_error(outs[1]) and outs[1].doc_id == "fine"


def test_extract_documents_on_beam():
    config = ExtractConfig(extractor=_dotted(raising_extractor), max_html_bytes=64 * 1024)
    pages = [
        _page("article", _article('<img src="p.jpg" alt="x">')),
        _page("empty", ""),
        _page("boom", _article("") + RAISE_MARKER),
        _page("huge", _article("") + "<!--" + "x" * 70_000 + "-->"),
    ]
    pipeline = TestPipeline()
    result = pipeline | beam.Create(pages) | ExtractDocuments(config)
    assert_that(result.kept | "KeptIds" >> beam.Map(lambda d: d.doc_id), equal_to(["article", "empty"]), label="Kept")
    assert_that(result.rejected, equal_to([]), label="Rejected")
    assert_that(
        result.errors | "ErrorIds" >> beam.Map(lambda e: (e.doc_id, e.reason)),
        equal_to([("boom", "ValueError"), ("huge", "HtmlTooLarge")]),
        label="Errors",
    )
    run = pipeline.run()
    run.wait_until_finish()
    counters = {
        c.key.metric.name: c.committed for c in run.metrics().query(MetricsFilter().with_namespace("extract"))["counters"]
    }
    assert counters["kept"] == 2
    assert counters["errors.ValueError"] == 1 and counters["errors.HtmlTooLarge"] == 1
    assert counters["micros"] > 0
