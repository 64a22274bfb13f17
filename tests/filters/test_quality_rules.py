"""The quality stage's rules: machine translation, weak-model text, rewrites, quality score."""

import dataclasses
import re

import numpy as np
import pytest

from docfactory import PROSE, make_doc
from mmcurate.filters import llm_text, lsh, reasons, rewrites
from mmcurate.filters import machine_translation as mt
from mmcurate.filters import mt_page
from mmcurate.filters.mt_page import NOTICE, WIDGET, page_markers
from mmcurate.filters.quality import QUALITY_SCORE, min_quality, normalize_text

WEGLOT_PAGE = '<html><head><script src="https://cdn.weglot.com/weglot.min.js"></script></head><body>Bonjour</body></html>'
GOOGLE_PAGE = '<div id="google_translate_element"></div><script src="//translate.google.com/translate_a/element.js?cb=googleTranslateElementInit"></script>'
NOTICE_PAGE = "<p>This page was automatically translated. Traduit automatiquement.</p>"


def test_page_markers_count_widgets_and_notices():
    assert page_markers(WEGLOT_PAGE) == {WIDGET: 1.0, NOTICE: 0.0}
    assert page_markers(GOOGLE_PAGE)[WIDGET] == 3.0
    assert page_markers(NOTICE_PAGE) == {WIDGET: 0.0, NOTICE: 2.0}
    assert page_markers("<p>We translate books by hand.</p>") == {WIDGET: 0.0, NOTICE: 0.0}
    assert page_markers("<P>MACHINE TRANSLATED</P><DIV CLASS=\"WEGLOT-CONTAINER\"></DIV>") == {WIDGET: 1.0, NOTICE: 1.0}


def test_page_markers_reach_over_the_longest_marker():
    # A marker lies inside the window around the key it contains only if _REACH is
    # at least the longest match of either pattern.
    import re._parser

    for pattern in (mt_page._WIDGET_MARKERS, mt_page._NOTICE_MARKERS):
        assert re._parser.parse(pattern.pattern).getwidth()[1] <= mt_page._REACH


def _findall_count(html: str) -> dict[str, float]:
    """page_markers as it was: each pattern over the whole lowered page."""
    low = html.lower()
    widgets = len(mt_page._WIDGET_MARKERS.findall(low)) if any(k in low for k in mt_page._WIDGET_KEYS) else 0
    notices = len(mt_page._NOTICE_MARKERS.findall(low)) if any(k in low for k in mt_page._NOTICE_KEYS) else 0
    return {WIDGET: float(widgets), NOTICE: float(notices)}


def test_page_markers_count_as_the_patterns_do_over_the_whole_page():
    import random

    pieces = [
        "translate.google.com/translate_a/element.js", "translate.googleapis.com/translate_a/element.js",
        "google_translate_element", "googleTranslateElementInit", "gtranslate", "cdn.weglot.com", "weglot-switcher",
        "weglot.initialize", "conveythis", "transposh", "bablic.init", "global.localizecdn.com", "localize.initialize",
        "trp-floater-ls", "translatepress-automatic", "machine translated", "auto-translated", "translated by google",
        "machine translation provided by", "powered by google translate", "maschinell übersetzt", "traduit automatiquement",
        "traducción automática", "tradução automática", "tradotto automaticamente", "traduzione automatica",
        "machinaal vertaald", "机器翻译", "自動翻訳", "transform: translate(3px)", "translateX", "Tradu", " ", "<p>", "x" * 90,
        "automatically ", "translation ", "by google", "İ",
    ]
    rng = random.Random(5)
    for _ in range(400):
        html = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        assert page_markers(html) == _findall_count(html), html


def test_a_page_without_a_byte_key_holds_no_anchor():
    # What page_markers' check of the UTF-8 bytes rests on (see _BYTE_KEYS).
    beyond_ascii_to_ascii = {c for c in range(0x80, 0x110000) if any(ch.isascii() for ch in chr(c).lower())}
    assert beyond_ascii_to_ascii == {0x130, 0x212A}
    assert "\u0130".lower() == "i\u0307" and "\u212a".lower() == "k"
    assert [c for c in range(0x110000) if "翻" in chr(c).lower()] == [ord("翻")]
    for anchor in (*mt_page._WIDGET_KEYS, *mt_page._NOTICE_KEYS):
        assert "k" not in anchor and "\u0307" not in anchor and not anchor.endswith("i")
        # a key must lie within one unbroken run of the anchor's ASCII characters: the
        # page's bytes hold the anchor's characters beyond ASCII between such runs
        runs = [run.encode() for run in re.split(r"[^\x00-\x7f]+", anchor)]
        assert any(key.decode() in anchor if not key.isascii() else any(key in run for run in runs)
                   for key in mt_page._BYTE_KEYS), anchor


def test_page_markers_ignore_case_as_lowering_the_page_does():
    import random

    pieces = [
        "Machine Translated", "AUTO-TRANSLATED", "Translated By Google", "MASCHINELL ÜBERSETZT", "Maschinell Übersetzt",
        "TRADUIT AUTOMATIQUEMENT", "Traducción Automática", "TRADOTTO AUTOMATICAMENTE", "MACHINAAL VERTAALD", "机器翻译",
        "自動翻訳", "WeGlot-Switcher", "CDN.WEGLOT.COM", "GTRANSLATE", "ConveyThis", "LOCALIZE.INITIALIZE",
        "TRP-FLOATER-LS", "BABLIC.INIT", "\u0130", "\u212a", "\u0130\u0307", "ﬀ", "ß", "Σ", "ς", " ", "<p>", "é" * 3,
        "\ud800", "x" * 90,
    ]
    rng = random.Random(11)
    found = 0
    for _ in range(600):
        html = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        expected = _findall_count(html)
        assert page_markers(html) == expected, html
        assert page_markers(html, mt_page.utf8_of(html)) == expected, html
        found += expected[WIDGET] + expected[NOTICE] > 0
    assert found > 300


def test_anchors_sharing_a_scan_are_found_where_a_scan_of_each_finds_them():
    def each(low, anchor):
        found, at = [], low.find(anchor)
        while at != -1:
            found.append(at)
            at = low.find(anchor, at + 1)
        return found

    pages = ["gtranslate", "translategtranslatetranslat", "ttransposhtranslation", "tradottradutradott", "trans trad g",
             "übersetzt translate", "ascii only: tradu gtranslate", "翻译 翻訳 tradu", ""]
    for low in pages:
        scans: dict = {}
        for anchor in (*mt_page._WIDGET_KEYS, *mt_page._NOTICE_KEYS):
            assert mt_page._anchor_starts(low, anchor, scans) == each(low, anchor), (low, anchor)


@pytest.mark.parametrize(
    "notice",
    [
        "Machine translated", "Questa pagina è stata tradotta automaticamente.", "Tradotto automaticamente",
        "Traduzione automatica di Google", "Maschinell übersetzt", "Traduit automatiquement",
        "Cette page a été traduite automatiquement", "Página traducida automáticamente", "Textos traduzidos automaticamente", "Automatisch vertaald",
        "本页面由机器翻译", "このページは機械翻訳です",
    ],
)
def test_every_notice_language_is_found_on_a_page_with_no_other_key(notice):
    # A notice is found by itself, not only where some other key (a CSS translate())
    # happens to be on the page.
    assert page_markers(f"<html><body><p>{notice}</p><p>Text.</p></body></html>")[NOTICE] == 1.0


@pytest.mark.parametrize(
    "url, language",
    [
        ("https://example.org/fr/about", "fr"),
        ("https://example.org/pt-br/sobre", "pt"),
        ("https://de.example.org/about", "de"),
        ("https://example.org/page?lang=es", "es"),
        ("https://example.org/tv/show", None),
        ("https://www.example.org/about", None),
    ],
)
def test_url_language(url, language):
    assert mt.url_language(url) == language


def _doc(**changes):
    return dataclasses.replace(make_doc("d", PROSE, images=1), **changes)


HREFLANG = tuple((lang, f"https://example.org/{lang}/") for lang in "en de fr es it pt nl pl sv ja".split())

# (document, filter with thresholds, expected reason)
CASES = [
    (_doc(signals={NOTICE: 1.0}), lambda d: mt.mt_notice(d, min_notices=1), reasons.MT_NOTICE),
    (_doc(url="https://example.org/fr/page", signals={WIDGET: 2.0}), mt.mt_widget, reasons.MT_WIDGET),
    (_doc(hreflang=HREFLANG), lambda d: mt.mt_hreflang_fanout(d, max_languages=8), reasons.MT_HREFLANG_FANOUT),
    (
        _doc(url="https://example.org/de/seite", language="en"),
        lambda d: mt.mt_url_language(d, reject_mismatch=True),
        reasons.MT_URL_LANGUAGE_MISMATCH,
    ),
    (
        _doc(signals={mt.MT_SCORE: 0.97}),
        lambda d: mt.mt_classifier(d, max_score=0.9, max_scores={}),
        reasons.MT_HIGH_SCORE,
    ),
    (
        _doc(nodes=(make_doc("x", "As an AI language model, I cannot browse the web.").nodes[0],)),
        lambda d: llm_text.llm_template(d, min_phrases=1),
        reasons.LLM_TEMPLATE_PHRASE,
    ),
    (_doc(signals={llm_text.LLM_SCORE: 0.95}), lambda d: llm_text.llm_classifier(d, max_score=0.9), reasons.LLM_HIGH_SCORE),
    (
        _doc(signals={llm_text.SITE_SCORE: 0.8, llm_text.SITE_DOCS: 6.0}),
        lambda d: llm_text.llm_site(d, max_score=0.5, min_docs=5),
        reasons.LLM_SITE_HIGH_SCORE,
    ),
    (
        _doc(signals={rewrites.REWRITE_SIMILARITY: 0.95}),
        lambda d: rewrites.rewrite_duplicate(d, threshold=0.9, survivor="a"),
        reasons.REWRITE_NEAR_DUPLICATE,
    ),
    (_doc(signals={QUALITY_SCORE: 0.2}), lambda d: min_quality(d, min_score=0.5), reasons.QUALITY_LOW_SCORE),
]


@pytest.mark.parametrize("doc, rule, reason", CASES, ids=[c[2] for c in CASES])
def test_each_rule_rejects_its_fixture(doc, rule, reason):
    verdict = rule(doc)
    assert not verdict.keep and verdict.reason == reason


def test_a_clean_page_passes_every_rule():
    doc = _doc(
        url="https://example.org/en/page",
        language="en",
        hreflang=HREFLANG[:3],
        signals={QUALITY_SCORE: 0.9, mt.MT_SCORE: 0.2, llm_text.LLM_SCORE: 0.1, NOTICE: 0.0, WIDGET: 0.0},
    )
    for _, rule, _ in CASES[:-3] + [(None, lambda d: min_quality(d, min_score=0.5), None)]:
        assert rule(doc).keep


def test_mt_classifier_keeps_a_document_without_a_score_and_uses_its_language_threshold():
    # no model for the document's language: no mt_score, no evidence
    assert mt.mt_classifier(_doc(language="pt"), max_score=0.5, max_scores={}).keep
    de = _doc(language="de-AT", signals={mt.MT_SCORE: 0.8})
    assert mt.mt_classifier(de, max_score=0.9, max_scores={}).keep
    verdict = mt.mt_classifier(de, max_score=0.9, max_scores={"de": 0.7, "en": 0.99})
    assert not verdict.keep and verdict.reason == reasons.MT_HIGH_SCORE
    assert (verdict.value, verdict.threshold) == (0.8, 0.7)


def test_url_language_is_no_evidence_without_content_language():
    verdict = mt.mt_url_language(_doc(url="https://example.org/de/seite"), reject_mismatch=True)
    assert verdict.keep and mt.URL_LANGUAGE_MISMATCH not in verdict.signals


def test_llm_features_measure_diversity_and_repetition():
    looping = make_doc("l", "the cat sat on the mat and " * 40)
    varied = make_doc("v", PROSE)
    f_loop, f_var = llm_text.llm_text_features(looping), llm_text.llm_text_features(varied)
    assert f_loop[llm_text.REPEATED_TRIGRAMS] > 0.9 and f_var[llm_text.REPEATED_TRIGRAMS] == 0.0
    assert f_loop[llm_text.MATTR] < 0.2 < 0.7 < f_var[llm_text.MATTR] <= 1.0


def test_normalize_text_is_one_line_of_tokens_with_cjk_split():
    assert normalize_text("Hello,  World!\nIt's 北京.") == "hello , world ! it's 北 京 ."
    assert len(normalize_text("word " * 5000).split()) == 1000


def test_lsh_buckets_and_cosine_verification():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(64).astype(np.float32)
    a /= np.linalg.norm(a)
    b = a + 0.05 * rng.standard_normal(64).astype(np.float32)
    b /= np.linalg.norm(b)
    planes = rewrites.hyperplanes(64, bands=20, rows=12, seed=0)
    shared = set(lsh.band_keys(rewrites.sign_bits(a, planes), 20, 12)) & set(lsh.band_keys(rewrites.sign_bits(b, planes), 20, 12))
    assert shared  # near-identical vectors meet in some band
    matches = dict(rewrites.rewrite_matches([(("2024-02", "b"), "b", b), (("2024-01", "a"), "a", a)]))
    assert list(matches) == ["b"] and matches["b"][1] == "a" and matches["b"][0] > 0.9
