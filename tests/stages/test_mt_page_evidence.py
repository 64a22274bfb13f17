"""mt.page_and_score on pages with the structure of real ones: extraction finds the
page's evidence (hreflang alternates, a translation widget's script) in the HTML, the
shipped MT models score the extracted text, and the quality stage decides.

The text is WMT23 (tests/fixtures/mt): human references against system outputs of
the same passage. The shipped models were trained on these test sets, so this checks
the rule's decisions end to end, not its precision: no labelled web pages exist
here to measure that (docs/stages.md).
"""

import dataclasses
import html
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline

from beam_checks import assert_outputs
from pagebuild import html_page
from mmcurate.filters import reasons
from mmcurate.filters.mt_page import WIDGET
from mmcurate.pipeline.config import ExtractConfig, QualityConfig
from mmcurate.schemas import Page
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.quality import ScoreQuality

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mt"

WEGLOT = (
    '<script type="text/javascript" src="https://cdn.weglot.com/weglot.min.js"></script>\n'
    "<script>Weglot.initialize({ api_key: 'wg_3f1c0d2e9a' });</script>"
)
GOOGLE = (
    '<div id="google_translate_element"></div>\n'
    "<script>function googleTranslateElementInit() { new google.translate.TranslateElement("
    "{pageLanguage: 'de', layout: google.translate.TranslateElement.InlineLayout.SIMPLE}, "
    "'google_translate_element'); }</script>\n"
    '<script src="//translate.google.com/translate_a/element.js?cb=googleTranslateElementInit"></script>'
)


def article(language: str, kind: str, url: str, widget: str = "", alternates: tuple[str, ...] = ()) -> str:
    """A news article page: head with hreflang alternates and a widget's script, site
    navigation, the article (a WMT passage, a paragraph per segment), a footer."""
    lines = (FIXTURES / f"{language}.{kind}.txt").read_text(encoding="utf-8").splitlines()
    links = "\n".join(f'<link rel="alternate" hreflang="{a}" href="{url.rstrip("/")}?hl={a}">' for a in alternates)
    body = "\n".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return f"""<!DOCTYPE html>
<html lang="{language}"><head><meta charset="utf-8">
<title>{html.escape(lines[0][:60])}</title>
<link rel="canonical" href="{url}">
{links}
{widget}
</head><body>
<header><a href="/" class="logo">Home</a><nav><ul><li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li>
<li><a href="/culture">Culture</a></li><li><a href="/contact">Contact</a></li></ul></nav></header>
<main><article><h1>{html.escape(lines[0][:80])}</h1>
<p class="byline">Staff reporter, 12 May 2023</p>
{body}
</article></main>
<footer><p>All rights reserved.</p><a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer>
</body></html>"""


# doc_id: (target language, WMT text, URL, widget, hreflang alternates)
PAGES = {
    # an original English article on a site that offers Weglot translations
    "en-original": ("en", "human", "https://www.harbourtimes.com/news/story-1", WEGLOT, ("en", "de", "fr", "es")),
    # a German site's article served in English by Google's widget, on the same path
    "en-translated": ("en", "nllb-greedy", "https://www.stadtanzeiger.de/artikel/story-1", GOOGLE, ("de", "en")),
    # the same site's German original, with the widget too
    "de-original": ("de", "human", "https://www.stadtanzeiger.de/artikel/story-2", GOOGLE, ("de", "en")),
    # a Chinese translation on a mirror with the widget, and a human Chinese page with it
    "zh-translated": ("zh", "online-b", "https://www.news-mirror.com/p/1", WEGLOT, ()),
    "zh-original": ("zh", "human", "https://www.news-mirror.com/p/2", WEGLOT, ()),
    # machine translation with no page evidence: the rule needs both
    "en-translated-bare": ("en", "online-b", "https://www.plainnews.com/a/1", "", ()),
    # a widget under a language path: mt.widget decides, before the text is consulted
    "de-under-path": ("de", "nllb-greedy", "https://www.harbourtimes.com/de/news/story-1", WEGLOT, ("en", "de")),
}

CONFIG = QualityConfig(mt={"page_and_score": True})


def _pages() -> dict[str, Page]:
    pages = {}
    for doc_id, (language, kind, url, widget, alternates) in PAGES.items():
        text = article(language, kind, url, widget, alternates)
        pages[doc_id] = html_page(doc_id, text, url, warc_file="mt-pages.warc.gz")
    return pages


def _with_language(doc):
    # The language the heuristics stage's language ID gives these pages (its model is
    # not loaded here): the fixture's language.
    return dataclasses.replace(doc, language=PAGES[doc.doc_id][0])


def test_a_page_that_declares_machine_translation_and_scores_as_it_is_rejected():
    pages = _pages()
    p = TestPipeline()
    extracted = p | beam.Create(list(pages.values())) | ExtractDocuments(ExtractConfig(timeout_seconds=0))
    result = extracted.kept | beam.Map(_with_language) | ScoreQuality(CONFIG)
    page = reasons.MT_PAGE_AND_SCORE
    # mt.page_and_score's value is the page's mt_score (above 0.8: checked as such)
    rows = result.rejected | beam.Map(
        lambda r: (r.doc_id, r.reason, r.value > 0.8 if r.reason == page else r.value, r.threshold, r.detail)
    )

    # The widget counts are the markers written into those pages: Google's element
    # (div id, init function twice, element.js) on en-translated, Weglot's script and
    # initialize call on zh-translated and de-under-path.
    want_rows = [
        ("en-translated", page, True, 0.8, "notices=0 widgets=5"),
        ("zh-translated", page, True, 0.8, "notices=0 widgets=2"),
        ("de-under-path", reasons.MT_WIDGET, 2.0, 1, "url_language=de"),
    ]
    kept = result.kept | beam.Map(lambda d: (d.doc_id, d.signals[WIDGET] > 0, d.signals["mt_score"] <= 0.8))
    want_kept = [("en-original", True, True), ("de-original", True, True), ("zh-original", True, True),
                 ("en-translated-bare", False, False)]
    assert_outputs({"rejected": (rows, want_rows), "kept": (kept, want_kept)})
    p.run().wait_until_finish()
