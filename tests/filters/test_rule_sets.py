"""One fixture per heuristics reason code (tests/reason_cases/text_rules.py, the
heuristics stage's own steps), asserting that exact code, value and threshold;
clean pages in every fixture language and script are kept by every rule set."""

import dataclasses
from functools import partial
from pathlib import Path

import pytest

from docfactory import make_doc
from mmcurate.filters import c4, content, fineweb, gopher, nodes, obelics, reasons
from mmcurate.filters.text import character_units, count_words
from mmcurate.pipeline.config import (
    C4Config,
    FineWebConfig,
    GopherQualityConfig,
    GopherRepetitionConfig,
    HeuristicsConfig,
    ObelicsConfig,
)
from mmcurate.stages.heuristics import node_cleanup
from reason_cases.text_rules import RULE_SET_CASES as CASES
from reason_cases.text_rules import UNIQUE, en

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
    # url.blocklisted_prefix is decided in stage extract by safety.urls, never by
    # heuristics.urls (its case: tests/reason_cases/pair_rules.py)
    declared.discard(reasons.URL_BLOCKLISTED_PREFIX)
    assert declared == {case[2] for case in CASES}


ALL_RULES = [GOPHER_QUALITY, GOPHER_REPETITION, C4_RULES, FINEWEB_RULES, OBELICS_IMAGES, OBELICS_WORDS, OBELICS_RATIOS, after_cleanup]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_clean_pages_in_every_language_and_script_are_kept_by_every_rule(lang):
    doc = clean_doc(lang, language=lang)
    for rule in ALL_RULES:
        verdict = rule(doc)
        assert verdict.keep, (lang, rule, verdict)


@pytest.mark.parametrize("lang, words, characters", [("zh", 175, 257), ("ja", 209, 324), ("th", 115, 339)])
def test_unspaced_pages_are_measured_in_words(lang, words, characters):
    doc = clean_doc(lang, language=lang)
    verdict = GOPHER_QUALITY(doc)
    assert verdict.keep and verdict.signals[content.WORD_COUNT] == words == count_words(doc.text)
    # dictionary words, not characters (character_units: one per character)
    assert len(character_units(doc.text)) == characters
    # mean word length is a spaced-script rule: not measured on a Chinese, Japanese or Thai page
    assert gopher.MEAN_WORD_LENGTH not in verdict.signals
    assert C4_RULES(doc).signals[c4.SENTENCES] >= 8


def test_script_blind_measures_are_fixed_for_hangul_and_devanagari():
    # OBELICS's measure counts whitespace and short syllables: the clean Korean page
    # is over its 0.275 cutoff; the default measure (punctuation and symbols among
    # non-space characters) puts it with every other clean page.
    ko = clean_doc("ko", language="ko")
    assert obelics.SPECIAL_MEASURES["obelics"](ko.text) > 0.275
    verdict = OBELICS_RATIOS(ko)
    assert verdict.keep and verdict.signals[obelics.SPECIAL_CHARACTER_RATIO] < 0.05
    # Devanagari vowel signs (Mn/Mc) stay inside their word: Hindi words average
    # over Gopher's 3 characters (split at the marks they were 1.58)
    hi = GOPHER_QUALITY(clean_doc("hi", language="hi"))
    assert hi.keep and 3.5 < hi.signals[gopher.MEAN_WORD_LENGTH] < 4.5


def test_stop_words_apply_only_to_configured_languages():
    doc = make_doc("s", " ".join(UNIQUE[:60]))
    assert GOPHER_QUALITY(doc).keep
    assert GOPHER_QUALITY(dataclasses.replace(doc, language="de")).keep
    assert GOPHER_QUALITY(en(doc)).reason == reasons.GOPHER_STOP_WORDS


def test_ngram_fractions_take_np_uniques_groups():
    """The n-gram fractions group equal keys with one stable sort; np.unique's groups
    (the first most frequent key in key order, at its first occurrence; every later
    occurrence of a key) give the same figures, ties and all."""
    import random

    import numpy as np

    from mmcurate.filters.gopher import duplicate_ngram_char_fraction, top_ngram_char_fraction
    from mmcurate.filters.ngram_keys import ngram_hashes, token_ids

    def top_by_unique(lengths, n, total, keys):
        _, first, counts = np.unique(keys, return_index=True, return_counts=True)
        best = int(np.argmax(counts))
        return float(lengths[int(first[best]) : int(first[best]) + n].sum()) * int(counts[best]) / total

    def duplicate_by_unique(ids, lengths, n, total, keys):
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        later = np.flatnonzero(first[inverse] != np.arange(len(keys)))
        delta = np.zeros(len(ids) + 1, dtype=np.int64)
        np.add.at(delta, later, 1)
        np.add.at(delta, later + n, -1)
        return float(lengths[np.cumsum(delta[:-1]) > 0].sum()) / total

    rng = random.Random(2)
    for _ in range(300):
        letters = "abcdef"[: rng.randint(1, 6)]
        words = [rng.choice(letters) * rng.randint(1, 3) for _ in range(rng.randint(1, 60))]
        ids = token_ids(words)
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        total = int(lengths.sum())
        for n in range(1, min(len(words), 11) + 1):
            keys = ngram_hashes(ids, n)
            assert top_ngram_char_fraction(words, ids, lengths, n, total, keys) == top_by_unique(lengths, n, total, keys)
            assert duplicate_ngram_char_fraction(ids, lengths, n, total, keys) == duplicate_by_unique(ids, lengths, n, total, keys)
    # two n-grams as frequent: the smaller key's first occurrence is the one measured
    words = ["aa", "b", "aa", "b", "ccc", "d", "ccc", "d"]
    ids = token_ids(words)
    lengths = np.array([2, 1, 2, 1, 3, 1, 3, 1])
    keys = ngram_hashes(ids, 2)
    assert top_ngram_char_fraction(words, ids, lengths, 2, 14, keys) == top_by_unique(lengths, 2, 14, keys)
