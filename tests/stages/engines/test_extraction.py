"""Extraction without Beam: node order against golden sequences, image URLs
(srcset, <picture>, lazy loading, <base>), captions and declared sizes, image
recovery and the lead image, page metadata, and the extractor registry."""

import json
import re
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import ImageNode, TextNode
from mmcurate.stages.engines.extraction.image_sources import parse_srcset
from mmcurate.stages.engines.extraction.registry import load_extractor
from mmcurate.stages.engines.extraction.result import Extraction
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura
from pagebuild import article_page

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HTML_FIXTURES = FIXTURES / "html"
BOOKS_WARC = FIXTURES / "warc" / "books.toscrape.warc"


def _images(extraction: Extraction) -> list[ImageNode]:
    return [n for n in extraction.nodes if isinstance(n, ImageNode)]


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
    html = article_page("").replace("<article>", '<article><img src="above.jpg" alt="x" width="800" height="600">')
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
    extraction = extract_trafilatura(article_page(img), "https://example.org/a/page.html", ExtractConfig())
    assert [i.src for i in _images(extraction)] == [expected]


def test_base_href_resolves_relative_urls():
    html = article_page('<img src="../pics/one.jpg" alt="x">', head='<base href="https://static.example.net/site/en/">')
    extraction = extract_trafilatura(html, "https://example.org/a/page.html", ExtractConfig())
    assert [i.src for i in _images(extraction)] == ["https://static.example.net/site/pics/one.jpg"]


def test_unusable_images_are_dropped():
    body = (
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="inline">'
        '<img src="javascript:void(0)" alt="script">'
        '<img src="https://tracker.example.com/t.jpg" width="1" height="1" alt="pixel">'
    )
    extraction = extract_trafilatura(article_page(body), "https://example.org/a/page.html", ExtractConfig())
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
    extraction = extract_trafilatura(article_page(f'<img src="p.jpg" alt="x" {attrs}>'), "https://example.org/", ExtractConfig())
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
    # Any callable by a dotted path "package.module:attribute[.attribute]".
    assert load_extractor("json:dumps") is json.dumps
    assert load_extractor("json:JSONDecoder.decode") is json.JSONDecoder.decode
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
# Pictures a script loads: the <noscript> copy, AMP's <amp-img>


@pytest.mark.parametrize(
    "body, expected",
    [
        # The only <img> of a script-loaded picture is in <noscript>: it is the picture.
        (
            '<figure><div class="progressive-image" data-src="/img/lead.jpg"></div>'
            '<noscript><img src="/img/lead.jpg" alt="x"></noscript></figure>',
            ["https://example.org/img/lead.jpg"],
        ),
        # Beside a lazy-loaded <img>, the <noscript> copy is not a second picture.
        (
            '<figure><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="/img/lazy.jpg" alt="x">'
            '<noscript><img src="/img/lazy.jpg" alt="x"></noscript></figure>',
            ["https://example.org/img/lazy.jpg"],
        ),
        # AMP: the <amp-img> is the picture, its <noscript> fallback a copy.
        (
            '<amp-img src="/img/amp.jpg" width="1200" height="675" layout="responsive" alt="x">'
            '<noscript><img src="/img/amp.jpg" width="1200" height="675" alt="x"></noscript></amp-img>',
            ["https://example.org/img/amp.jpg"],
        ),
        # A tracking pixel's <noscript> in the body is never a picture.
        ('<noscript><img height="1" width="1" src="https://tracker.example.com/tr?id=1&ev=PageView"></noscript>', []),
    ],
)
def test_script_loaded_pictures(body, expected):
    extraction = extract_trafilatura(article_page(body), "https://example.org/a/page.html", ExtractConfig())
    assert [i.src for i in _images(extraction)] == expected
