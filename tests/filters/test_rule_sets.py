"""One fixture per heuristics reason code, asserting that exact code, value and
threshold; clean pages in every fixture language and script are kept by every rule set."""

import dataclasses
from functools import partial
from pathlib import Path

import pytest

from docfactory import PROSE, make_doc
from mmcurate.filters import c4, fineweb, gopher, nodes, obelics, reasons, urls
from mmcurate.filters.text import count_words
from mmcurate.pipeline.config import (
    C4Config,
    FineWebConfig,
    GopherQualityConfig,
    GopherRepetitionConfig,
    HeuristicsConfig,
    ObelicsConfig,
)
from mmcurate.stages.heuristics import node_cleanup

TEXT_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "text"
# Every fixture language: Latin (incl. Vietnamese and Yoruba with combining tone
# marks), Cyrillic, Arabic, Devanagari, Bengali, Tamil, Hangul, Thai, Han, Japanese.
LANGUAGES = tuple(sorted(p.stem for p in TEXT_DIR.glob("*.txt")))


def clean_doc(lang, images=2, language=""):
    """Clean prose from tests/fixtures/text/<lang>.txt, a text node per paragraph."""
    text = (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8")
    doc = make_doc(f"clean-{lang}", [p.strip() for p in text.split("\n\n") if p.strip()], images=images)
    return dataclasses.replace(doc, language=language) if language else doc


_G = GopherQualityConfig()
GOPHER_QUALITY = partial(
    gopher.quality,
    min_words=_G.min_words,
    max_words=_G.max_words,
    min_mean_word_length=_G.min_mean_word_length,
    max_mean_word_length=_G.max_mean_word_length,
    max_symbol_word_ratio=_G.max_symbol_word_ratio,
    max_bullet_lines_ratio=_G.max_bullet_lines_ratio,
    max_ellipsis_lines_ratio=_G.max_ellipsis_lines_ratio,
    min_alphabetic_word_ratio=_G.min_alphabetic_word_ratio,
    min_stop_words=_G.min_stop_words,
    stop_words={k: frozenset(v) for k, v in _G.stop_words.items()},
)
GOPHER_REPETITION = partial(gopher.repetition, **GopherRepetitionConfig().model_dump(exclude={"enabled"}))
C4_RULES = partial(c4.rules, **C4Config().model_dump(exclude={"enabled"}))
FINEWEB_RULES = partial(fineweb.rules, **FineWebConfig().model_dump(exclude={"enabled"}))
_O = ObelicsConfig()
OBELICS_IMAGES = partial(obelics.image_count, max_images=_O.max_images)
OBELICS_WORDS = partial(
    obelics.word_bounds, min_words=_O.min_words, max_words=_O.max_words, max_image_word_ratio=_O.max_image_word_ratio
)
OBELICS_RATIOS = partial(
    obelics.text_ratios,
    **_O.model_dump(include={
        "special_character_measure",
        "max_special_character_ratio",
        "character_repetition_length",
        "max_character_repetition_ratio",
        "word_repetition_length",
        "max_word_repetition_ratio",
    }),
)
CLEANUP = node_cleanup(HeuristicsConfig())


def after_cleanup(doc):
    return nodes.nothing_left(CLEANUP(doc), min_images=1)


def en(doc):
    return dataclasses.replace(doc, language="en")


# Distinct filler words, so that only the repetition a case builds is repeated.
UNIQUE = (
    "harbour valley century salt timber cities coast fishing boats dawn afternoon market quay crates "
    "visitors road lighthouse bay islands mountains inland railway tunnels viaduct engineers summer winter "
    "snow station villages bread orchard slope apples family cider barn grafts monastery garden border "
    "varieties seed bank capital cuttings frost disease river bridge arches barges gravel quarries hills "
    "farmers cattle toll ledgers coins spring foundations surface council lorries repairs walkers cyclists "
    "evenings parapet swallows water mill stream grain miller turbine weir volunteers roof oven meadow"
).split()
LINES_NO_PUNCT = "\n".join(f"The view from the {w} over the whole valley and the hills" for w in UNIQUE[:20])
SENTENCE = PROSE.split(". ")[0] + "."
REPEATED = "the engineers of the time thought could not be built over the river"


CASES = [
    # URL rules
    (partial(urls.blocklisted_domain, domains=urls.parse_domains(["spam.example", "# comment"])),
     make_doc("u1", PROSE, images=1, url="https://WWW.News.Spam.Example:443/a"), reasons.URL_BLOCKLISTED_DOMAIN, None, None),
    (partial(urls.blocklisted_substring, pattern=urls.compile_substrings(["/wp-login.php"])),
     make_doc("u2", PROSE, images=1, url="https://example.org/WP-Login.php?x=1"), reasons.URL_BLOCKLISTED_SUBSTRING, None, None),
    # node cleanup leaves nothing
    (after_cleanup, make_doc("n1", ["We use cookies to improve your experience. Accept all cookies.", "Share on Facebook"], images=1),
     reasons.NODES_NO_TEXT_LEFT, 0, 1),
    (after_cleanup,
     dataclasses.replace(make_doc("n2", PROSE), nodes=make_doc("n2", PROSE).nodes + (nodes.ImageNode(src="https://example.org/img/site-logo.png"),)),
     reasons.NODES_NO_IMAGES_LEFT, 0, 1),
    # Gopher quality
    (GOPHER_QUALITY, make_doc("g1", "Too short to be a page."), reasons.GOPHER_TOO_FEW_WORDS, 6, 50),
    (GOPHER_QUALITY, make_doc("g2", " ".join(["harbour"] * 100_001)), reasons.GOPHER_TOO_MANY_WORDS, 100_001, 100_000),
    (GOPHER_QUALITY, make_doc("g3", " ".join(["it is a we go up to an ox by me"] * 6)), reasons.GOPHER_SHORT_MEAN_WORD_LENGTH, 21 / 11, 3),
    (GOPHER_QUALITY, make_doc("g4", " ".join(["internationalisation telecommunications"] * 30)), reasons.GOPHER_LONG_MEAN_WORD_LENGTH, 19, 10),
    (GOPHER_QUALITY, make_doc("g5", PROSE + " " + "#news " * 10), reasons.GOPHER_SYMBOL_WORD_RATIO, 10 / 93, 0.1),
    (GOPHER_QUALITY, make_doc("g6", "\n".join(f"• {w} boats and crates on the quay" for w in UNIQUE[:10])), reasons.GOPHER_BULLET_LINES, 1.0, 0.9),
    (GOPHER_QUALITY, make_doc("g7", "\n".join(f"The {w} was there before the town and the harbour{'...' if i % 2 else '.'}" for i, w in enumerate(UNIQUE[:10]))),
     reasons.GOPHER_ELLIPSIS_LINES, 0.5, 0.3),
    (GOPHER_QUALITY, make_doc("g8", PROSE + " " + " ".join(str(1000 + i) for i in range(30))), reasons.GOPHER_ALPHABETIC_WORDS, 83 / 113, 0.8),
    (GOPHER_QUALITY, en(make_doc("g9", " ".join(UNIQUE[:60]))), reasons.GOPHER_STOP_WORDS, 0, 2),
    # Gopher repetition
    (GOPHER_REPETITION, make_doc("r1", [PROSE, PROSE, PROSE, "A different closing paragraph."]), reasons.GOPHER_DUPLICATE_PARAGRAPHS, 0.5, 0.3),
    (GOPHER_REPETITION, make_doc("r2", [PROSE, PROSE] + [f"Note on the {w}." for w in UNIQUE[:6]]), reasons.GOPHER_DUPLICATE_PARAGRAPH_CHARS, None, 0.2),
    (GOPHER_REPETITION, make_doc("r3", [f"About the {w}.\nSubscribe below." for w in UNIQUE[:4]]), reasons.GOPHER_DUPLICATE_LINES, 3 / 8, 0.3),
    (GOPHER_REPETITION, make_doc("r4", [f"{PROSE}\nNote on the {UNIQUE[0]}.", f"{PROSE}\nNote on the {UNIQUE[1]}."] + [f"Note on the {w}." for w in UNIQUE[2:6]]),
     reasons.GOPHER_DUPLICATE_LINE_CHARS, None, 0.2),
    (GOPHER_REPETITION, make_doc("r5", " ".join(f"hot dog {w}" for w in UNIQUE[:30])), reasons.GOPHER_TOP_NGRAM_CHARS, None, 0.2),
    (GOPHER_REPETITION, make_doc("r6", " ".join(UNIQUE[:20]) + " " + REPEATED + " " + " ".join(UNIQUE[20:30]) + " " + REPEATED),
     reasons.GOPHER_DUPLICATE_NGRAM_CHARS, None, 0.15),
    # C4
    (C4_RULES, make_doc("c1", PROSE + " Lorem ipsum dolor sit amet."), reasons.C4_LOREM_IPSUM, 1, None),
    (C4_RULES, make_doc("c2", PROSE + " Call init() { return 1; } first."), reasons.C4_CURLY_BRACKET, 1, None),
    (C4_RULES, make_doc("c3", LINES_NO_PUNCT), reasons.C4_NO_TERMINAL_PUNCTUATION, 1.0, 1.0),
    (C4_RULES, make_doc("c4", [f"Please enable JavaScript to see the {w} map." for w in UNIQUE[:6]]), reasons.C4_JAVASCRIPT_LINES, 1.0, 1.0),
    (C4_RULES, make_doc("c5", [f"Read the privacy policy of the {w} club." for w in UNIQUE[:6]]), reasons.C4_POLICY_LINES, 1.0, 1.0),
    (C4_RULES, make_doc("c6", PROSE), reasons.C4_TOO_FEW_SENTENCES, 3, 5),
    # FineWeb
    (FINEWEB_RULES, make_doc("f1", LINES_NO_PUNCT), reasons.FINEWEB_LINE_PUNCTUATION, 0.0, 0.12),
    (FINEWEB_RULES, make_doc("f2", "\n".join(f"See the {w}." for w in UNIQUE[:10])), reasons.FINEWEB_SHORT_LINES, 1.0, 0.67),
    (FINEWEB_RULES, make_doc("f3", [PROSE, "The quay is busy.", PROSE]), reasons.FINEWEB_DUPLICATE_LINE_CHARS, None, 0.01),
    (FINEWEB_RULES, make_doc("f4", "\n".join(f"Extraordinarily comprehensive {w}." for w in UNIQUE[:12])), reasons.FINEWEB_LIST_LIKE, 11 / 36, 0.3),
    # OBELICS
    (OBELICS_IMAGES, make_doc("o1", PROSE, images=31), reasons.OBELICS_TOO_MANY_IMAGES, 31, 30),
    (OBELICS_WORDS, make_doc("o2", "Five words are right here.", images=1), reasons.OBELICS_TOO_FEW_WORDS, 5, 10),
    # the default cap is Gopher's 100,000 words (OBELICS's own is 2,000)
    (OBELICS_WORDS, make_doc("o3", " ".join(["harbour"] * 100_001), images=1), reasons.OBELICS_TOO_MANY_WORDS, 100_001, 100_000),
    (OBELICS_WORDS, make_doc("o4", " ".join(UNIQUE[:20]), images=5), reasons.OBELICS_IMAGE_WORD_RATIO, 0.25, 0.1),
    # punctuation and symbols among non-space characters (digits are not special)
    (OBELICS_RATIOS, make_doc("o5", PROSE + " " + " ".join(f"[{i}] » {{'k': ★}} |" for i in range(40))),
     reasons.OBELICS_SPECIAL_CHARACTERS, None, 0.15),
    (OBELICS_RATIOS, make_doc("o6", "The same sentence again and again. " * 20), reasons.OBELICS_CHARACTER_REPETITION, None, 0.1),
    # a 28-word sentence twice among distinct words: 48 of 134 word 5-grams repeat
    (OBELICS_RATIOS, make_doc("o7", " ".join(UNIQUE[:60]) + " " + SENTENCE + " " + " ".join(UNIQUE[60:]) + " " + SENTENCE),
     reasons.OBELICS_WORD_REPETITION, 48 / 134, 0.2),
]


@pytest.mark.parametrize("filter_fn, doc, reason, value, threshold", CASES, ids=[c[2] for c in CASES])
def test_each_reason_code_on_its_fixture(filter_fn, doc, reason, value, threshold):
    verdict = filter_fn(doc)
    assert (verdict.keep, verdict.reason) == (False, reason)
    assert verdict.threshold == (None if threshold is None else pytest.approx(threshold))
    if value is not None:
        assert verdict.value == pytest.approx(value)


def test_every_heuristics_code_has_a_case():
    families = ("url.", "nodes.", "gopher.", "c4.", "fineweb.", "obelics.")
    declared = {code for code in reasons.ALL_REASONS if code.startswith(families)}
    assert declared == {case[2] for case in CASES}


ALL_RULES = [GOPHER_QUALITY, GOPHER_REPETITION, C4_RULES, FINEWEB_RULES, OBELICS_IMAGES, OBELICS_WORDS, OBELICS_RATIOS, after_cleanup]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_clean_pages_in_every_language_and_script_are_kept_by_every_rule(lang):
    doc = clean_doc(lang, language=lang)
    for rule in ALL_RULES:
        verdict = rule(doc)
        assert verdict.keep, (lang, rule, verdict)


@pytest.mark.parametrize("lang, words", [("zh", 257), ("ja", 324)])
def test_unspaced_pages_are_measured_per_character(lang, words):
    doc = clean_doc(lang, language=lang)
    verdict = GOPHER_QUALITY(doc)
    assert verdict.keep and verdict.signals[gopher.WORD_COUNT] == words == count_words(doc.text)
    # mean word length is a spaced-script rule: not measured on a Chinese or Japanese page
    assert gopher.MEAN_WORD_LENGTH not in verdict.signals
    assert C4_RULES(doc).signals[c4.SENTENCES] >= 8


def test_stop_words_apply_only_to_configured_languages():
    doc = make_doc("s", " ".join(UNIQUE[:60]))
    assert GOPHER_QUALITY(doc).keep
    assert GOPHER_QUALITY(dataclasses.replace(doc, language="de")).keep
    assert GOPHER_QUALITY(en(doc)).reason == reasons.GOPHER_STOP_WORDS
