"""Lead images on news and blog pages in the layouts of 16 kinds of real sites
(tests/newslayouts.py): through the extract and heuristics stages at defaults, at
least 95% of the articles, each of which shows a lead picture, are kept with an
image (not ``content.too_few_images``), and the lead picture is the document's
first node."""

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from mmcurate.pipeline.config import ExtractConfig, HeuristicsConfig
from mmcurate.schemas import ImageNode, TextNode
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.heuristics import ApplyTextHeuristics
from newslayouts import LAYOUTS, aside_beside_body, hero_above_h1, medium, news_pages
from pagebuild import ARTICLE_CLOSING, ARTICLE_OPENING, html_page

PAGES = news_pages(3)
LEAD_URLS = {page.url: page.lead_urls for page in PAGES}
MIN_SHARE = 0.95


def test_enough_pages_and_layouts():
    assert len(LAYOUTS) >= 10 and len(PAGES) >= 40
    assert len({page.url for page in PAGES}) == len(PAGES)


def _check_kept(docs):
    docs = list(docs)
    with_image = [d for d in docs if any(isinstance(n, ImageNode) for n in d.nodes)]
    share = len(with_image) / len(PAGES)
    missing = sorted(set(LEAD_URLS) - {d.url for d in with_image})
    assert share >= MIN_SHARE, f"{share:.3f} of the pages kept with an image; not: {missing}"
    # The lead picture comes first, before the headline.
    lead_first = [d for d in with_image if isinstance(d.nodes[0], ImageNode) and d.nodes[0].src in LEAD_URLS[d.url]]
    assert len(lead_first) / len(PAGES) >= MIN_SHARE, sorted(set(LEAD_URLS) - {d.url for d in lead_first})


def _check_no_image_rejections(rows):
    reasons = [(r.url, r.reason) for r in rows if r.reason in ("content.too_few_images", "nodes.no_images_left")]
    assert len(reasons) <= (1 - MIN_SHARE) * len(PAGES), reasons


def test_news_layouts_keep_their_lead_image_through_extract_and_heuristics():
    pipeline = TestPipeline()
    pages = pipeline | beam.Create([html_page(f"{p.layout}-{i}", p.html, p.url) for i, p in enumerate(PAGES)])
    extracted = pages | ExtractDocuments(ExtractConfig())
    result = extracted.kept | ApplyTextHeuristics(HeuristicsConfig())
    assert_that(extracted.errors, lambda rows: _assert_empty(rows), label="ExtractErrors")
    assert_that(result.kept, _check_kept, label="KeptWithImage")
    assert_that(result.rejected, _check_no_image_rejections, label="NoImageRejections")
    pipeline.run().wait_until_finish()


def _assert_empty(rows):
    assert list(rows) == []


def _nodes(page):
    return extract_trafilatura(page.html, page.url, ExtractConfig()).nodes


def test_hero_without_size_or_figure_is_found_by_its_name():
    page = hero_above_h1(1)  # no og:image on odd seeds
    assert "og:image" not in page.html
    first = _nodes(page)[0]
    assert isinstance(first, ImageNode) and first.src in page.lead_urls


def test_picture_named_by_og_image_in_an_aside_after_the_body():
    page = aside_beside_body(0)
    nodes = _nodes(page)
    assert isinstance(nodes[0], ImageNode) and nodes[0].src in page.lead_urls
    assert [n.src for n in nodes if isinstance(n, ImageNode)] == [nodes[0].src]  # no most-read thumbnail
    assert [n.text for n in nodes if isinstance(n, TextNode)][-1] == page.text[-1]


def test_picture_under_the_headline_moves_before_it():
    page = medium(0)
    nodes = _nodes(page)
    assert isinstance(nodes[0], ImageNode) and nodes[0].src in page.lead_urls
    assert isinstance(nodes[1], TextNode) and nodes[1].text == page.text[0]  # the headline, after the picture
    assert nodes[0].caption == page.html.split('<figcaption class="mu fg mv mg mh mw mx be b bf z dt">')[1].split("</figcaption>")[0]


def test_a_picture_after_an_opening_paragraph_stays_in_the_body():
    """A short opening paragraph (not a standfirst or byline by its markup) before the
    first figure: the figure is the body's, in the page's order. The same figure
    under a byline is the lead picture."""
    opening = "The harbour was built in the eighteenth century, when the town still traded salt and timber."
    figure = "<figure><img src='/img/harbour.jpg' width='640' height='480' alt=''><figcaption>The harbour in spring.</figcaption></figure>"
    for before, lead in ((f"<p>{opening}</p>", False), ('<div class="byline">By A. Writer, 2 May 2024</div>', True)):
        html = (
            f"<html><body><article><h1>The harbour at the end of the valley</h1>{before}{figure}"
            f"<p>{ARTICLE_OPENING}</p><p>{ARTICLE_CLOSING}</p></article></body></html>"
        )
        nodes = extract_trafilatura(html, "https://news.example.org/harbour", ExtractConfig()).nodes
        kinds = [type(n).__name__ for n in nodes]
        if lead:
            assert kinds[0] == "ImageNode" and nodes[0].src == "https://news.example.org/img/harbour.jpg", kinds
        else:
            assert kinds == ["TextNode", "TextNode", "ImageNode", "TextNode", "TextNode"], kinds


def test_og_image_of_a_body_picture_after_the_opening_stays_in_the_body():
    """A blog without a featured image names its first body picture in og:image: the
    picture keeps its place after the opening paragraph."""
    html = (
        '<html><head><meta property="og:image" content="https://blog.example.org/img/quay.jpg?w=1200"></head><body>'
        f"<article><h1>A week at the harbour</h1><p>{ARTICLE_OPENING}</p>"
        "<figure><img src='/img/quay.jpg' width='800' height='600' alt=''></figure>"
        f"<p>{ARTICLE_CLOSING}</p></article></body></html>"
    )
    nodes = extract_trafilatura(html, "https://blog.example.org/2024/harbour", ExtractConfig()).nodes
    assert [type(n).__name__ for n in nodes] == ["TextNode", "TextNode", "ImageNode", "TextNode"]


def test_lead_image_off_keeps_the_page_order():
    page = medium(0)
    nodes = extract_trafilatura(page.html, page.url, ExtractConfig(lead_image=False)).nodes
    assert isinstance(nodes[0], TextNode)
