"""Stage extract: page facts and signals on the document, canonical image URLs for
every extractor, the size and time guards, error rows, and the stage on Beam."""

import time
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import ImageNode, Page
from mmcurate.stages.engines.extraction.page_documents import SIGNAL_HTML_BYTES, SIGNAL_SECONDS
from mmcurate.stages.extract import ExtractDocuments, ExtractDocumentsFn
from mmcurate.stages.engines.extraction.result import Extraction
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura
from pagebuild import article_page, html_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HTML_FIXTURES = FIXTURES / "html"
BOOKS_WARC = FIXTURES / "warc" / "books.toscrape.warc"
SLEEP_MARKER = "<!-- extract-test: sleep -->"
RAISE_MARKER = "<!-- extract-test: raise -->"

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


def raw_url_extractor(html: str, url: str, config: ExtractConfig) -> Extraction:
    """Returns image URLs spelled as pages spell them: host case, default port,
    escapes of unreserved characters, a space, a fragment, a duplicate candidate."""
    image = ImageNode(
        src="HTTP://Images.Example.ORG:80/a%7e/b c.jpg#top",
        candidates=("http://images.example.org/a~/b%20c.jpg", "https://images.example.org:443/x.jpg", "https://IMAGES.example.org/x.jpg"),
    )
    return Extraction(nodes=(image,))


def _dotted(fn) -> str:
    return f"{fn.__module__}:{fn.__qualname__}"


def _page(doc_id: str, html: str, url: str = "https://example.org/a/page.html") -> Page:
    return html_page(doc_id, html, url)


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
# The stage's guards


def test_document_carries_page_facts_and_signals():
    (doc,) = _run_fn(ExtractConfig(timeout_seconds=0), [_page("d1", article_page('<img src="p.jpg" alt="x">'))])
    assert doc.doc_id == "d1" and doc.provenance.record_id == "<urn:uuid:d1>"
    assert doc.metadata["charset"] == "utf-8" and doc.metadata["charset_source"] == "http"
    assert doc.metadata["content_type"] == "text/html" and doc.metadata["http_status"] == "200"
    assert doc.metadata["extractor"] == "trafilatura"
    assert doc.signals[SIGNAL_HTML_BYTES] > 0 and 0 < doc.signals[SIGNAL_SECONDS] < 10
    assert [type(n).__name__ for n in doc.nodes] == ["TextNode", "ImageNode", "TextNode"]


def test_image_urls_take_their_canonical_form_once_at_extraction_for_any_extractor():
    config = ExtractConfig(extractor=_dotted(raw_url_extractor), timeout_seconds=0)
    (doc,) = _run_fn(config, [_page("c", "<p>x</p>")])
    (image,) = doc.nodes
    assert image.src == "http://images.example.org/a~/b%20c.jpg"
    assert image.candidates == ("https://images.example.org/x.jpg",)  # the src and a repeat dropped
    # The trafilatura adapter's nodes too.
    page = _page("t", article_page('<img src="HTTP://Example.ORG:80/photos/%7Ebird.jpg#x" alt="x">'))
    (doc,) = _run_fn(ExtractConfig(timeout_seconds=0), [page])
    assert [n.src for n in doc.nodes if isinstance(n, ImageNode)] == ["http://example.org/photos/~bird.jpg"]


def test_page_without_content_is_still_a_document():
    (doc,) = _run_fn(ExtractConfig(timeout_seconds=0), [_page("bare", "<html><body><p>Hi.</p></body></html>")])
    assert doc.doc_id == "bare"


def test_html_too_large_is_an_error_row_without_parsing():
    big = article_page("") + "<!--" + "x" * 5000 + "-->"
    (out,) = _run_fn(ExtractConfig(timeout_seconds=0, max_html_bytes=4096), [_page("big", big)])
    assert _is_error(out)
    row = out.value
    assert (row.stage, row.kind, row.reason) == ("extract", "error", "HtmlTooLarge")
    assert row.value == len(big.encode()) and row.threshold == 4096


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_timeout_stops_the_extractor_and_the_next_page_still_extracts(isolation):
    config = ExtractConfig(extractor=_dotted(sleepy_extractor), timeout_seconds=1, isolation=isolation)
    pages = [_page("slow", article_page("") + SLEEP_MARKER), _page("next", article_page('<img src="p.jpg" alt="x">'))]
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
        pages = [_page(f"p{i}", article_page("")) for i in range(3)]
        pages.insert(1, _page("busy", article_page("") + SLEEP_MARKER))
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
        outs = [out for page in (_page("slow", article_page("") + SLEEP_MARKER), _page("next", article_page(""))) for out in fn.process(page)]
        assert (fn._process.abandoned, fn._process.in_fallback) == (1, True)
    finally:
        fn.teardown()
    assert _is_error(outs[0]) and outs[0].value.reason == "ExtractionTimeout"
    assert not _is_error(outs[1]) and outs[1].doc_id == "next"


@pytest.mark.parametrize("timeout, isolation", [(0, "thread"), (5, "thread"), (5, "process")])
def test_extractor_exception_is_an_error_row(timeout, isolation):
    config = ExtractConfig(extractor=_dotted(raising_extractor), timeout_seconds=timeout, isolation=isolation)
    pages = [_page("boom", article_page("") + RAISE_MARKER), _page("fine", article_page(""))]
    outs = _run_fn(config, pages)
    assert _is_error(outs[0])
    row = outs[0].value
    assert (row.doc_id, row.reason) == ("boom", "ValueError")
    assert "this page breaks the extractor" in row.detail
    assert not _is_error(outs[1]) and outs[1].doc_id == "fine"


def test_extract_documents_on_beam():
    config = ExtractConfig(extractor=_dotted(raising_extractor), max_html_bytes=64 * 1024)
    pages = [
        _page("article", article_page('<img src="p.jpg" alt="x">')),
        _page("empty", ""),
        _page("boom", article_page("") + RAISE_MARKER),
        _page("huge", article_page("") + "<!--" + "x" * 70_000 + "-->"),
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
