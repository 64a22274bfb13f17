"""A Wikipedia-like article page through the extract stage: its article text stays, in
order, its pictures keep their captions, and exactly the furniture goes (the "Jump to
content" link, the table of contents, "[edit]" links, citation marks, the reference
list and its heading, the navigation box and category links), each removal counted
per rule in the document's signals and in the stage's counters."""

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import ImageNode, TextNode
from mmcurate.stages.engines.extraction import boilerplate
from mmcurate.stages.engines.extraction.page_documents import extract_document, removed_signal
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura
from mmcurate.stages.extract import ExtractDocuments
from pagebuild import html_page

URL = "https://en.wiki.example.org/wiki/Portrait_of_a_Harbour"
UPLOAD = "https://upload.wiki.example.org/wikipedia/commons/thumb"
TITLE = "Portrait of a Harbour"
LEAD = [
    "Portrait of a Harbour is an oil painting of the harbour at Brimhaven, finished in 1887 and hung in the town hall "
    "until it was stolen in 1911.",
    "The painting shows the quay at low tide, with the fishing fleet drawn up on the mud and the lighthouse beyond the "
    "breakwater.",
]
SECTIONS = {
    "History": [
        "The painter spent two summers in the town, working from a room above the harbour office.",
        "The council bought the finished work by public subscription and unveiled it at the regatta of 1888.",
    ],
    "Theft": [
        "On the night of 21 August 1911 the painting was cut from its frame and carried out through a window.",
        "It was found two years later in a dealer's shop, rolled inside a length of sailcloth.",
    ],
    "Legacy": ["Copies of the painting hang in the harbour office and the lifeboat station."],
}
CAPTIONS = ["The quay at Brimhaven in 1890", "Vacant wall in the town hall after the theft"]
MARKS = 5  # citation marks in the text
REFERENCES = 4


def _mark(k: int) -> str:
    return f'<sup id="cite_ref-{k}" class="reference"><a href="#cite_note-{k}"><span class="cite-bracket">[</span>{k}<span class="cite-bracket">]</span></a></sup>'


def _heading(name: str) -> str:
    return (
        f'<div class="mw-heading mw-heading2"><h2 id="{name}">{name}</h2><span class="mw-editsection">'
        f'<span class="mw-editsection-bracket">[</span><a href="/w/index.php?title=Portrait_of_a_Harbour&amp;action=edit&amp;section=1" '
        f'title="Edit section: {name}"><span>edit</span></a><span class="mw-editsection-bracket">]</span></span></div>'
    )


def wikipedia_page() -> str:
    marks = iter(range(1, MARKS + 1))
    lead = "".join(f"<p>{p}{_mark(next(marks))}</p>" for p in LEAD)
    thumb_new = (
        '<figure class="mw-default-size" typeof="mw:File/Thumb"><a href="/wiki/File:Quay_1890.jpg" class="mw-file-description">'
        f'<img src="{UPLOAD}/a/ab/Quay_1890.jpg/220px-Quay_1890.jpg" decoding="async" width="220" height="150" class="mw-file-element" '
        f'srcset="{UPLOAD}/a/ab/Quay_1890.jpg/330px-Quay_1890.jpg 1.5x, {UPLOAD}/a/ab/Quay_1890.jpg/440px-Quay_1890.jpg 2x"></a>'
        f"<figcaption>{CAPTIONS[0]}</figcaption></figure>"
    )
    thumb_old = (
        '<div class="thumb tright"><div class="thumbinner" style="width:222px;"><a href="/wiki/File:Empty_wall.jpg" class="image">'
        f'<img alt="" src="{UPLOAD}/c/cd/Empty_wall.jpg/220px-Empty_wall.jpg" decoding="async" width="220" height="165" class="thumbimage" '
        f'srcset="{UPLOAD}/c/cd/Empty_wall.jpg/330px-Empty_wall.jpg 1.5x, {UPLOAD}/c/cd/Empty_wall.jpg/440px-Empty_wall.jpg 2x"></a>'
        '<div class="thumbcaption"><div class="magnify"><a href="/wiki/File:Empty_wall.jpg" class="internal" title="Enlarge"></a></div>'
        f"{CAPTIONS[1]}</div></div></div>"
    )
    toc = (
        '<div id="toc" class="toc" role="navigation" aria-labelledby="mw-toc-heading"><div class="toctitle" lang="en" dir="ltr">'
        '<h2 id="mw-toc-heading">Contents</h2></div><ul>'
        + "".join(
            f'<li class="toclevel-1 tocsection-{i}"><a href="#{name}"><span class="tocnumber">{i}</span> <span class="toctext">{name}</span></a></li>'
            for i, name in enumerate([*SECTIONS, "References"], 1)
        )
        + "</ul></div>"
    )
    sections = []
    for name, paragraphs in SECTIONS.items():
        sections.append(_heading(name))
        if name == "History":
            sections.append(thumb_new)
        if name == "Theft":
            sections.append(thumb_old)
        for i, p in enumerate(paragraphs):
            sections.append(f"<p>{p}{_mark(next(marks)) if i == 0 else ''}</p>")
    references = (
        _heading("References")
        + '<div class="reflist"><div class="mw-references-wrap"><ol class="references">'
        + "".join(
            f'<li id="cite_note-{k}"><span class="mw-cite-backlink"><a href="#cite_ref-{k}">^</a></span> '
            f'<span class="reference-text">Brimhaven Town Council minutes, volume {k}, p. {k * 7}.</span></li>'
            for k in range(1, REFERENCES + 1)
        )
        + "</ol></div></div>"
    )
    navbox = (
        '<div class="navbox-styles"></div><div role="navigation" class="navbox" aria-labelledby="Paintings" style="padding:3px">'
        '<table class="nowraplinks hlist navbox-inner"><tbody><tr><th class="navbox-title" colspan="2">Paintings of the coast</th></tr>'
        '<tr><th class="navbox-group">Related works</th><td class="navbox-list"><ul>'
        + "".join(f'<li><a href="/wiki/Work_{k}">The lighthouse, study {k}</a></li>' for k in range(8))
        + "</ul></td></tr></tbody></table></div>"
    )
    return f"""<!DOCTYPE html>
<html class="client-nojs" lang="en" dir="ltr"><head><meta charset="UTF-8"><title>{TITLE} - Wikipedia</title></head>
<body class="skin-vector mediawiki ltr sitedir-ltr">
<a class="mw-jump-link" href="#bodyContent">Jump to content</a>
<div class="vector-header-container"><header class="vector-header mw-header"><a href="/wiki/Main_Page" class="mw-logo">
<img class="mw-logo-icon" src="/static/images/icons/wikipedia.png" alt="" width="50" height="50"></a></header></div>
<div class="mw-page-container"><nav id="mw-panel" class="vector-main-menu"><ul><li><a href="/wiki/Main_Page">Main page</a></li>
<li><a href="/wiki/Special:Random">Random article</a></li></ul></nav>
<main id="content" class="mw-body"><header class="mw-body-header"><h1 id="firstHeading" class="firstHeading mw-first-heading">
<span class="mw-page-title-main">{TITLE}</span></h1></header>
<div id="bodyContent" class="vector-body"><div id="mw-content-text" class="mw-body-content">
<div class="mw-content-ltr mw-parser-output" lang="en" dir="ltr">
{lead}{toc}{"".join(sections)}{references}{navbox}
</div></div>
<div id="catlinks" class="catlinks" data-mw="interface"><div id="mw-normal-catlinks" class="mw-normal-catlinks">
<a href="/wiki/Help:Category" title="Help:Category">Categories</a>: <ul><li><a href="/wiki/Category:1887_paintings">1887 paintings</a></li>
<li><a href="/wiki/Category:Stolen_works_of_art">Stolen works of art</a></li></ul></div></div></div></main></div>
<footer id="footer" class="mw-footer"><ul id="footer-info"><li>This page was last edited on 1 May 2024.</li></ul></footer>
</body></html>"""


EXPECTED_TEXT = [TITLE, *LEAD, *(block for name, paragraphs in SECTIONS.items() for block in (name, *paragraphs))]
EXPECTED_REMOVED = {
    boilerplate.TOC: 1,
    boilerplate.REFERENCES: 2,  # the list and its heading
    boilerplate.FOOTNOTE_MARKS: MARKS,
    boilerplate.NAVBOX: 2,  # the navigation box and the category links
    boilerplate.EDIT_LINKS: len(SECTIONS) + 1,  # the References heading's too
    boilerplate.JUMP_LINKS: 1,
    boilerplate.COOKIE_BAR: 0,
    boilerplate.SHARE_BAR: 0,
}


def test_wikipedia_like_page_keeps_its_article_and_loses_exactly_the_furniture():
    extraction = extract_trafilatura(wikipedia_page(), URL, ExtractConfig())
    assert [n.text for n in extraction.nodes if isinstance(n, TextNode)] == EXPECTED_TEXT
    images = [n for n in extraction.nodes if isinstance(n, ImageNode)]
    assert [i.caption for i in images] == CAPTIONS
    assert dict(extraction.removed) == EXPECTED_REMOVED


def test_wikipedia_like_page_without_the_rules_keeps_the_furniture():
    """trafilatura alone keeps the "[edit]" links and the citation marks as text: the
    rules are what takes them out."""
    import trafilatura

    text = trafilatura.extract(wikipedia_page(), include_comments=False)
    assert "[edit]" in text and f"[{MARKS}]" in text
    assert not any("[edit]" in t or f"[{MARKS}]" in t for t in EXPECTED_TEXT)


def test_removals_are_signals_and_stage_counters():
    page = html_page("wiki", wikipedia_page(), URL)
    doc, failure = extract_document(page, ExtractConfig(), lambda h, u: extract_trafilatura(h, u, ExtractConfig()))
    assert failure is None
    assert {rule: doc.signals[removed_signal(rule)] for rule in boilerplate.RULES} == EXPECTED_REMOVED

    pipeline = TestPipeline()
    result = pipeline | beam.Create([page, html_page("wiki-2", wikipedia_page(), URL + "_2")]) | ExtractDocuments(ExtractConfig())
    assert_that(result.kept | beam.Map(lambda d: d.doc_id), equal_to(["wiki", "wiki-2"]))
    run = pipeline.run()
    run.wait_until_finish()
    counters = {
        c.key.metric.name: c.committed for c in run.metrics().query(MetricsFilter().with_namespace("extract"))["counters"]
    }
    assert {name: n for name, n in counters.items() if name.startswith("extract.removed.")} == {
        removed_signal(rule): 2 * n for rule, n in EXPECTED_REMOVED.items() if n
    }
