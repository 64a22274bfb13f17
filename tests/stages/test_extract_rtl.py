"""Right-to-left article pages (Urdu in Nastaliq, Arabic, Persian, Hebrew) through
extraction and the heuristics stage's steps at defaults: kept, every paragraph
through node cleanup.

Their text carries the invisible format characters (Unicode Cf) such pages are
written with: a zero-width non-joiner where two Urdu words meet (Nastaliq text
typed so that the words' letters do not join across the gap) and inside Persian
words, right-to-left marks after punctuation, left-to-right marks around digits and
Latin words. Counted as special characters, they put nine of the Urdu page's eleven
blocks over node cleanup's 0.2 (0.15-0.25 against 0.00-0.05 without them), and
node cleanup removed them; and a mark after a full stop hid the stop from FineWeb's
and C4's line-end rules (``fineweb.line_punctuation`` on all four pages). Format characters now count for neither. The text is the UDHR's
(tests/fixtures/rtl/build.py)."""

import json
import re
import unicodedata
from pathlib import Path

import pytest

from mmcurate.filters import flagged_words, nodes
from mmcurate.filters.obelics import symbol_character_ratio
from mmcurate.filters.text import ends_sentence
from mmcurate.pipeline.config import ExtractConfig, HeuristicsConfig
from mmcurate.schemas import Document, Provenance, TextNode
from mmcurate.stages.engines.extraction.page_documents import extract_document
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura
from mmcurate.stages.heuristics import build_steps, node_cleanup
from mmcurate.stages.results import apply_filters
from pagebuild import html_page

TEXTS = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "rtl" / "udhr_rtl.json").read_text(encoding="utf-8"))

ZWNJ, LRM, RLM = "\u200c", "\u200e", "\u200f"
_PUNCTUATION = re.compile(r"([،۔؛؟.,:;!?])")
_LATIN_OR_DIGITS = re.compile(r"([A-Za-z0-9]+)")


def written(language: str, text: str) -> str:
    """``text`` with the format characters a page in ``language`` carries."""
    text = _PUNCTUATION.sub(rf"\1{RLM}", text)
    if language == "ur":
        # A non-joiner where two words meet.
        text = text.replace(" ", f"{ZWNJ} ")
    if language in ("he", "ar"):
        text = _LATIN_OR_DIGITS.sub(rf"{LRM}\1{LRM}", text)
    return text


SITES = {
    "ur": ("اردو خبریں", "پاکستان", "دنیا", "کھیل", "فوٹو: نامہ نگار"),
    "ar": ("الأخبار", "سياسة", "اقتصاد", "رياضة", "تصوير: مراسلنا"),
    "fa": ("خبرگزاری", "سیاسی", "اقتصادی", "ورزشی", "عکس: خبرنگار ما"),
    "he": ("חדשות", "פוליטיקה", "כלכלה", "ספורט", "צילום: כתבנו"),
}


def rtl_article(language: str) -> tuple[str, str, list[str]]:
    """A news article page in ``language``: a right-to-left ``<html dir="rtl">`` with
    a Nastaliq (Urdu) or Naskh web font, a site header and menu, the headline, a
    byline with a date, a lead figure, the paragraphs, a footer. Returns the URL,
    the HTML and the paragraphs as written."""
    entry = TEXTS[language]
    site, *menu, credit = SITES[language]
    font = "'Noto Nastaliq Urdu', 'Jameel Noori Nastaleeq'" if language == "ur" else "'Noto Naskh Arabic', 'Noto Sans Hebrew'"
    url = f"https://www.news-{language}.example.com/2024/05/article-1948"
    title = written(language, entry["title"])
    paragraphs = [written(language, p) for p in entry["paragraphs"]]
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    html = f"""<!DOCTYPE html>
<html lang="{language}" dir="rtl"><head><meta charset="utf-8"><title>{title} | {site}</title>
<link rel="stylesheet" href="https://fonts.example.com/css2?family=Noto+Nastaliq+Urdu">
<style>body {{ font-family: {font}, serif; direction: rtl; }}</style>
<meta property="og:image" content="https://cdn.news-{language}.example.com/2024/05/assembly-1948.jpg"></head>
<body><header class="site-header"><a href="/" class="site-logo"><img src="/static/site-logo.png" alt="{site}" width="200" height="60"></a>
<nav><ul>{"".join(f'<li><a href="/{k}">{m}</a></li>' for k, m in enumerate(menu))}</ul></nav></header>
<main><article class="story"><h1 class="story-title">{title}</h1>
<div class="byline">{site} {LRM}10.12.1948{LRM}</div>
<figure class="story-image"><img src="https://cdn.news-{language}.example.com/2024/05/assembly-1948.jpg" width="1200" height="675" alt="{site}">
<figcaption>{credit}</figcaption></figure>
<div class="story-body">{body}</div></article></main>
<footer><p>{site} {LRM}2024{LRM}</p></footer></body></html>"""
    return url, html, [title, *paragraphs]


def _without_format_characters(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


@pytest.fixture(scope="module")
def steps():
    return build_steps(HeuristicsConfig())


@pytest.mark.parametrize("language", ["ur", "ar", "fa", "he"])
def test_rtl_article_is_kept_with_every_paragraph(language, steps):
    url, html, blocks = rtl_article(language)
    doc, failure = extract_document(html_page(f"rtl-{language}", html, url), ExtractConfig(), lambda h, u: extract_trafilatura(h, u, ExtractConfig()))
    assert failure is None
    texts = [n.text for n in doc.text_nodes]
    assert texts == blocks  # headline and paragraphs, in order, format characters kept
    out, verdict = apply_filters(doc, steps)
    assert verdict is None, verdict
    # Node cleanup's own rules remove nothing from these pages, nor the flagged-word rule.
    assert all(out.signals[nodes.removed_signal(r)] == 0 for r in nodes.REMOVAL_REASONS if r != nodes.REPEATED_IMAGE)
    assert out.signals.get(flagged_words.NODES_REMOVED, 0) == 0


@pytest.mark.parametrize("language", ["ur", "ar", "fa", "he"])
def test_format_characters_count_on_neither_side_of_the_special_character_ratio(language):
    _, _, blocks = rtl_article(language)
    assert any(unicodedata.category(ch) == "Cf" for block in blocks for ch in block)
    for block in blocks:
        assert symbol_character_ratio(block) == symbol_character_ratio(_without_format_characters(block))


def test_urdu_blocks_pass_node_cleanup_at_defaults():
    """With the non-joiners and marks counted, nine of these eleven blocks measured
    0.206-0.245, over the 0.2 cutoff; uncounted, at most 0.03, and node cleanup keeps
    every block."""
    _, _, blocks = rtl_article("ur")
    cleanup = node_cleanup(HeuristicsConfig())
    assert [cleanup.text_reason(b) for b in blocks] == [None] * len(blocks)
    assert max(symbol_character_ratio(b) for b in blocks) < 0.03


@pytest.mark.parametrize(
    "line",
    [
        f"یہ جملہ ختم ہوا۔{RLM}",
        f"انتهت الجملة.{RLM}{RLM}",
        f"המשפט הסתיים.{LRM}",
        f"«پایان جمله.»{RLM}",
        "\u2067نهاية.\u2069",
    ],
)
def test_a_format_character_after_the_full_stop_still_ends_the_sentence(line):
    assert ends_sentence(line)
    assert not ends_sentence(line.replace(".", "").replace("۔", ""))


def test_persian_everyday_words_are_flagged_only_beside_obscene_ones():
    """کس ("anyone": هر کس "everyone") is in the LDNOOBW Persian list; it is in the
    UDHR's Persian text 60 times, and its paragraphs were removed one by one. Now it
    counts only beside an unambiguous entry (fa.ambiguous.txt)."""
    words = flagged_words.load_flagged_words(languages=["fa"])
    cleanup = flagged_words.FlaggedNodeCleanup(words, HeuristicsConfig().flagged_words.max_node_ratio)
    clean = "هر کس حق دارد که از آزادی اندیشه، وجدان و مذهب بهره‌مند شود."
    spam = "فیلم سکس رایگان برای هر کس که می‌خواهد ببیند."
    doc = Document(
        doc_id="fa", url="https://fa.example.com/", provenance=Provenance(warc_file="t"),
        nodes=(TextNode(clean), TextNode(spam)), language="fa",
    )
    assert [n.text for n in cleanup(doc).text_nodes] == [clean]
    assert flagged_words.find(clean, words.for_language("fa")).entries == {"کس": 1}
