"""The Gopher rules (Rae et al. 2021, "Scaling Language Models: Methods, Analysis &
Insights from Training Gopher", appendix A.1.1 "MassiveWeb" quality filters and
table A1 repetition thresholds).

Quality: 50-100,000 words; mean word length 3-10 characters; symbol-to-word ratio
(``#``, ``...``, ``…``) <= 0.1; at most 90% of lines starting with a bullet and 30%
ending with an ellipsis; at least 80% of words with an alphabetic character; at least
2 of the English stop words "the, be, to, of, and, that, have, with".

Repetition: duplicate lines <= 30% by count and 20% by characters, the same for
paragraphs; the most frequent 2-, 3-, 4-gram covers at most 20%, 18%, 16% of the
characters; duplicated 5- ... 10-grams cover at most 15%, 14%, 13%, 12%, 11%, 10%.

Beyond English: words are ``text.word_units``: Chinese, Japanese, Thai and other
scripts written without spaces are split into dictionary words (ICU word break), so
such a page is measured in words, neither "one word long" nor one word a
character; the alphabetic-word ratio counts ``text.tokens``, which split those
scripts into the same words. The mean-word-length rule is about spaced
scripts and is not applied when most letters are unspaced (the signal is then not
written); the stop-word rule applies only to languages that config gives stop
words for (English by default, as Gopher). Word length counts letters: combining
marks are part of a word (``text.word_units``), and a Hangul syllable block counts
as the 2 or 3 letters (jamo) it is written with (its canonical decomposition), so a
Korean word is measured in letters as an English one is; a clean Korean page is not
"short-worded" because each block holds a syllable.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Mapping

import numpy as np

from mmcurate.filters import reasons
from mmcurate.filters.content import WORD_COUNT
from mmcurate.filters.ngram_keys import NgramHashes, ngram_hashes, token_ids
from mmcurate.filters.text import TextView, count_with_letter, view_of
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

MEAN_WORD_LENGTH = "gopher.mean_word_length"
SYMBOL_WORD_RATIO = "gopher.symbol_word_ratio"
BULLET_LINES_RATIO = "gopher.bullet_lines_ratio"
ELLIPSIS_LINES_RATIO = "gopher.ellipsis_lines_ratio"
ALPHABETIC_WORD_RATIO = "gopher.alphabetic_word_ratio"
STOP_WORDS = "gopher.stop_words"
DUPLICATE_LINE_FRACTION = "gopher.duplicate_line_fraction"
DUPLICATE_PARAGRAPH_FRACTION = "gopher.duplicate_paragraph_fraction"
DUPLICATE_LINE_CHAR_FRACTION = "gopher.duplicate_line_char_fraction"
DUPLICATE_PARAGRAPH_CHAR_FRACTION = "gopher.duplicate_paragraph_char_fraction"


def top_ngram_signal(n: int) -> str:
    return f"gopher.top_{n}gram_char_fraction"


def duplicate_ngram_signal(n: int) -> str:
    return f"gopher.duplicate_{n}gram_char_fraction"


_BULLETS = ("•", "●", "○", "◦", "▪", "▫", "■", "□", "‣", "⁃", "∙", "·", "-", "–", "—", "*", "➢", "➤", "→", "✓", "✔")
_ELLIPSES = ("...", "…")
_PARAGRAPH_BREAK = re.compile(r"\n{2,}")
# Unspaced text is not judged by mean word length when this share of letters or more is unspaced.
_UNSPACED_MAJORITY = 0.5
_HANGUL_SYLLABLES = re.compile("[\uac00-\ud7a3]")


def word_letters(word: str) -> int:
    """Letters of a word: code points, with each Hangul syllable as its jamo."""
    if _HANGUL_SYLLABLES.search(word):
        return len(unicodedata.normalize("NFD", word))
    return len(word)


def quality(
    doc: Document,
    *,
    min_words: int,
    max_words: int,
    min_mean_word_length: float,
    max_mean_word_length: float,
    max_symbol_word_ratio: float,
    max_bullet_lines_ratio: float,
    max_ellipsis_lines_ratio: float,
    min_alphabetic_word_ratio: float,
    min_stop_words: int,
    stop_words: Mapping[str, frozenset[str]],
    view: TextView | None = None,
) -> Verdict:
    """The Gopher quality rules, in the paper's order; every figure is measured first."""
    v = view_of(doc, view)
    text = v.text
    units = v.word_units
    words = len(units)
    toks = v.tokens
    text_lines = v.lines
    n_lines = len(text_lines) or 1
    signals: dict[str, float] = {WORD_COUNT: float(words)}

    check_length = v.unspaced_ratio < _UNSPACED_MAJORITY
    if check_length:
        spaced = v.spaced_words
        # word_letters differs from len only on Hangul syllables: one search of the text
        # instead of one per word when it has none.
        letters = word_letters if _HANGUL_SYLLABLES.search(text) else len
        mean_len = sum(map(letters, spaced)) / len(spaced) if spaced else 0.0
        signals[MEAN_WORD_LENGTH] = mean_len
    symbols = text.count("#") + sum(text.count(e) for e in _ELLIPSES)
    signals[SYMBOL_WORD_RATIO] = symbol_ratio = symbols / words if words else 0.0
    signals[BULLET_LINES_RATIO] = bullets = sum(1 for l in text_lines if l.startswith(_BULLETS)) / n_lines
    signals[ELLIPSIS_LINES_RATIO] = ellipsis = sum(1 for l in text_lines if l.endswith(_ELLIPSES)) / n_lines
    alpha = count_with_letter(toks) / len(toks) if toks else 0.0
    signals[ALPHABETIC_WORD_RATIO] = alpha
    language_stops = stop_words.get(doc.language)
    if language_stops is not None:
        found = len(language_stops.intersection(v.folded_words))
        signals[STOP_WORDS] = float(found)

    if words < min_words:
        return reject(reasons.GOPHER_TOO_FEW_WORDS, words, min_words, **signals)
    if words > max_words:
        return reject(reasons.GOPHER_TOO_MANY_WORDS, words, max_words, **signals)
    if check_length:
        if mean_len < min_mean_word_length:
            return reject(reasons.GOPHER_SHORT_MEAN_WORD_LENGTH, mean_len, min_mean_word_length, **signals)
        if mean_len > max_mean_word_length:
            return reject(reasons.GOPHER_LONG_MEAN_WORD_LENGTH, mean_len, max_mean_word_length, **signals)
    if symbol_ratio > max_symbol_word_ratio:
        return reject(reasons.GOPHER_SYMBOL_WORD_RATIO, symbol_ratio, max_symbol_word_ratio, **signals)
    if bullets > max_bullet_lines_ratio:
        return reject(reasons.GOPHER_BULLET_LINES, bullets, max_bullet_lines_ratio, **signals)
    if ellipsis > max_ellipsis_lines_ratio:
        return reject(reasons.GOPHER_ELLIPSIS_LINES, ellipsis, max_ellipsis_lines_ratio, **signals)
    if alpha < min_alphabetic_word_ratio:
        return reject(reasons.GOPHER_ALPHABETIC_WORDS, alpha, min_alphabetic_word_ratio, **signals)
    if language_stops is not None and found < min_stop_words:
        return reject(reasons.GOPHER_STOP_WORDS, found, min_stop_words, detail=doc.language, **signals)
    return keep(**signals)


def _duplicates(elements: list[str]) -> tuple[int, int]:
    """(count, characters) of the elements that repeat an earlier one."""
    seen: set[str] = set()
    dup = dup_chars = 0
    for element in elements:
        if element in seen:
            dup += 1
            dup_chars += len(element)
        else:
            seen.add(element)
    return dup, dup_chars


def _stable_sort(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable ordering of ``keys`` and the keys in that order (equal keys keep
    their order of occurrence)."""
    order = np.argsort(keys, kind="stable")
    return order, keys[order]


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A stable ordering of ``keys`` and where each run of equal keys starts in it:
    ``np.unique(keys, return_index=True, return_counts=True)``'s groups, in key
    order, without its other outputs."""
    order, ordered = _stable_sort(keys)
    return order, np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))


def top_ngram_char_fraction(
    words: list[str], ids: np.ndarray, lengths: np.ndarray, n: int, total_chars: int, keys: np.ndarray | None = None
) -> float:
    """Characters of the most frequent word n-gram (all its occurrences) over all word
    characters. ``keys``: ``ngram_hashes(ids, n)`` when the caller has them."""
    keys = ngram_hashes(ids, n) if keys is None else keys
    if not len(keys) or not total_chars:
        return 0.0
    order, starts = _groups(keys)
    counts = np.diff(np.append(starts, len(keys)))
    best = int(np.argmax(counts))  # the first most frequent in key order, as np.unique's
    start = int(order[starts[best]])  # its first occurrence (the sort is stable)
    return float(lengths[start : start + n].sum()) * int(counts[best]) / total_chars


def duplicate_ngram_char_fraction(
    ids: np.ndarray, lengths: np.ndarray, n: int, total_chars: int, keys: np.ndarray | None = None
) -> float:
    """Characters of the words covered by n-grams that repeat an earlier n-gram.
    ``keys``: ``ngram_hashes(ids, n)`` when the caller has them."""
    keys = ngram_hashes(ids, n) if keys is None else keys
    if not len(keys) or not total_chars:
        return 0.0
    order, ordered = _stable_sort(keys)
    # after the stable sort, an n-gram equal to the one before it repeats an earlier one
    later = order[1:][ordered[1:] == ordered[:-1]]
    if not len(later):
        return 0.0
    # words i .. i+n-1 are covered for every repeating n-gram starting at i (each i
    # once in ``later``, so plain index updates add as np.add.at does)
    delta = np.zeros(len(ids) + 1, dtype=np.int64)
    delta[later] += 1
    delta[later + n] -= 1
    covered = np.cumsum(delta[:-1]) > 0
    return float(lengths[covered].sum()) / total_chars


def repetition(
    doc: Document,
    *,
    max_duplicate_line_fraction: float,
    max_duplicate_paragraph_fraction: float,
    max_duplicate_line_char_fraction: float,
    max_duplicate_paragraph_char_fraction: float,
    max_top_ngram_char_fraction: Mapping[int, float],
    max_duplicate_ngram_char_fraction: Mapping[int, float],
    view: TextView | None = None,
) -> Verdict:
    """The Gopher repetition rules, in table A1's order; stops at the first failure."""
    v = view_of(doc, view)
    text = v.text
    signals: dict[str, float] = {}
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    text_lines = v.lines
    para_chars = sum(map(len, paragraphs)) or 1
    line_chars = sum(map(len, text_lines)) or 1

    dup, dup_chars = _duplicates(paragraphs)
    signals[DUPLICATE_PARAGRAPH_FRACTION] = para_frac = dup / (len(paragraphs) or 1)
    signals[DUPLICATE_PARAGRAPH_CHAR_FRACTION] = para_char_frac = dup_chars / para_chars
    dup, dup_chars = _duplicates(text_lines)
    signals[DUPLICATE_LINE_FRACTION] = line_frac = dup / (len(text_lines) or 1)
    signals[DUPLICATE_LINE_CHAR_FRACTION] = line_char_frac = dup_chars / line_chars
    if para_frac > max_duplicate_paragraph_fraction:
        return reject(reasons.GOPHER_DUPLICATE_PARAGRAPHS, para_frac, max_duplicate_paragraph_fraction, **signals)
    if para_char_frac > max_duplicate_paragraph_char_fraction:
        return reject(reasons.GOPHER_DUPLICATE_PARAGRAPH_CHARS, para_char_frac, max_duplicate_paragraph_char_fraction, **signals)
    if line_frac > max_duplicate_line_fraction:
        return reject(reasons.GOPHER_DUPLICATE_LINES, line_frac, max_duplicate_line_fraction, **signals)
    if line_char_frac > max_duplicate_line_char_fraction:
        return reject(reasons.GOPHER_DUPLICATE_LINE_CHARS, line_char_frac, max_duplicate_line_char_fraction, **signals)

    words = v.folded_words
    ids = token_ids(words)
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    total_chars = int(lengths.sum())
    hashes = NgramHashes(ids)
    for n, limit in sorted(max_top_ngram_char_fraction.items()):
        frac = top_ngram_char_fraction(words, ids, lengths, n, total_chars, hashes(n))
        signals[top_ngram_signal(n)] = frac
        if frac > limit:
            return reject(reasons.GOPHER_TOP_NGRAM_CHARS, frac, limit, detail=f"n={n}", **signals)
    for n, limit in sorted(max_duplicate_ngram_char_fraction.items()):
        frac = duplicate_ngram_char_fraction(ids, lengths, n, total_chars, hashes(n))
        signals[duplicate_ngram_signal(n)] = frac
        if frac > limit:
            return reject(reasons.GOPHER_DUPLICATE_NGRAM_CHARS, frac, limit, detail=f"n={n}", **signals)
    return keep(**signals)
