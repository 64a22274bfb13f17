"""OBELICS-style rules for interleaved documents (Laurençon et al. 2023, "OBELICS:
An Open Web-Scale Filtered Dataset of Interleaved Image-Text Documents", section
3 and appendix A; thresholds from the released
``obelics/configs/config_filter_web_documents.yaml``).

Document level: 1-30 images (the lower bound is ``content.min_images``), 10-2,000
words in OBELICS (mmcurate's default upper bound is Gopher's 100,000: long
articles are what a long-context corpus wants), special-character ratio <= 0.275,
10-character repetition ratio <= 0.1, 5-word repetition ratio <= 0.2. The same
measures run per text node in node cleanup (``filters/nodes.py``) with the
node-level cutoffs (0.3, 0.1, 0.1).

Two measures are counted differently by default (config picks OBELICS's):

- ``special_character_measure="non_space"``: OBELICS counts whitespace and digits as special, so the
  ratio of clean text depends on the script's word length (a clean Korean or
  Vietnamese page sits at 0.28-0.30, English at ~0.20, an encyclopedia paragraph
  with dates and figures at 0.22-0.30 against a 0.3 node cutoff). mmcurate counts
  punctuation, symbols (emoji included) and control characters among the
  non-whitespace characters; digits, letters and combining marks are not special.
  Clean prose in 28 languages measures 0.014-0.088 (Chinese, whose full-width
  punctuation is one character in eleven, the highest); menus, code, JSON and
  symbol runs 0.16-1.0 (``tests/filters/test_rule_sets.py``).
- ``repeats_only`` (node cleanup): a repeated n-gram counts its repeats, not its
  first occurrence. On a short paragraph OBELICS's ratio is dominated by any one
  phrase that occurs twice (a 300-character paragraph naming
  "1,3,7-trimethylxanthine" twice measures ~0.1); counting repeats halves that and
  leaves degenerate text (a phrase four times: 3/4 of its occurrences) caught.

The ratios are defined as in OBELICS (after BigScience ROOTS, Laurençon et al.
2022): the character repetition ratio is the share of character n-gram occurrences
taken by the ``floor(sqrt(distinct))`` most frequent n-grams that occur more than
once; the word repetition ratio is the share of word n-gram occurrences whose n-gram
occurs more than once. Words are ``text.word_units``, so Chinese, Japanese and Thai
are measured in dictionary words rather than as one long "word" or one word a
character: a 2,500-character Chinese article is about 1,300 words, inside OBELICS's
2,000-word cap.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

import numpy as np

from mmcurate.filters import reasons
from mmcurate.filters.content import WORD_COUNT
from mmcurate.filters.ngram_keys import char_ids, ngram_hashes, token_ids
from mmcurate.filters.text import TextView, view_of, word_units
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

IMAGE_COUNT = "obelics.image_count"
IMAGE_WORD_RATIO = "obelics.image_word_ratio"
SPECIAL_CHARACTER_RATIO = "obelics.special_character_ratio"
CHARACTER_REPETITION_RATIO = "obelics.character_repetition_ratio"
WORD_REPETITION_RATIO = "obelics.word_repetition_ratio"

# Candidates for a special character: whitespace, digits, underscore and anything
# that is not a letter or digit; combining marks are then taken back out, since
# they belong to the letters of Arabic, Indic and other scripts.
_SPECIAL_CANDIDATE = re.compile(r"[\d_]|[^\w]")


def special_character_ratio(text: str) -> float:
    """Share of characters that are whitespace, digits, punctuation or symbols
    (emoji included), as OBELICS's special characters."""
    if not text:
        return 0.0
    special = sum(1 for ch in _SPECIAL_CANDIDATE.findall(text) if ch < "\u0300" or unicodedata.category(ch)[0] != "M")
    return special / len(text)


_NON_SPACE_SPECIAL = re.compile(r"[^\w\s]")


def symbol_character_ratio(text: str) -> float:
    """Share of the non-whitespace characters that are punctuation, symbols (emoji
    included) or control characters; letters, combining marks and digits are not
    (module doc, ``special_character_measure="non_space"``).

    Invisible format characters (Unicode category Cf) are not counted at all, on
    either side of the ratio: the zero-width non-joiner and joiner that shape
    Arabic-script (Persian, Urdu's Nastaliq), Hebrew and Indic words, the
    right-to-left, left-to-right and Arabic letter marks, bidirectional embeddings
    and isolates, the soft hyphen. They are part of how a script is written or laid
    out, not symbols a reader sees; counted, an Urdu or Persian paragraph with a
    non-joiner where its words meet measured over 0.2 and node cleanup emptied the
    page (``nodes.no_text_left``)."""
    non_space = len(text) - sum(1 for ch in text if ch.isspace())
    if non_space <= 0:
        return 0.0
    special = invisible = 0
    for ch in _NON_SPACE_SPECIAL.findall(text):
        if ch < "\u00ad":  # ASCII and Latin-1 punctuation and symbols
            special += 1
            continue
        category = unicodedata.category(ch)
        if category == "Cf":
            invisible += 1
        elif category[0] != "M":
            special += 1
    visible = non_space - invisible
    return special / visible if visible > 0 else 0.0


SPECIAL_MEASURES = {"non_space": symbol_character_ratio, "obelics": special_character_ratio}


# Below this many n-grams a Counter is faster than numpy's per-call overhead, which
# dominates on pages of hundreds of short nodes (the rules run per node).
_SMALL_NGRAMS = 256


def _ngram_counts_small(items, n: int) -> list[int]:
    return list(Counter(tuple(items[i : i + n]) for i in range(len(items) - n + 1)).values())


def character_repetition_ratio(text: str, n: int, *, repeats_only: bool = False) -> float:
    """Share of character n-gram occurrences held by the sqrt(distinct) most
    frequent repeated n-grams (``repeats_only``: their occurrences after the first)."""
    if len(text) < n:
        return 0.0
    first = 1 if repeats_only else 0
    if len(text) - n + 1 <= _SMALL_NGRAMS:
        counts = sorted(Counter(text[i : i + n] for i in range(len(text) - n + 1)).values(), reverse=True)
        repeated = sum(1 for c in counts if c > 1)
        top = min(math.isqrt(len(counts)), repeated)
        return (sum(counts[:top]) - first * top) / sum(counts) if top else 0.0
    _, counts = np.unique(ngram_hashes(char_ids(text), n), return_counts=True)
    repeated = int(np.count_nonzero(counts > 1))
    top = min(math.isqrt(len(counts)), repeated)
    if top == 0:
        return 0.0
    return float(np.sort(counts)[::-1][:top].sum() - first * top) / float(counts.sum())


def word_repetition_ratio(text: str, n: int, *, repeats_only: bool = False, words: list[str] | None = None) -> float:
    """Share of word n-gram occurrences whose n-gram occurs more than once
    (``repeats_only``: the occurrences after the first). ``words``: the casefolded
    word units of ``text`` when the caller has them."""
    if words is None:
        words = [w.casefold() for w in word_units(text)]
    if len(words) < n:
        return 0.0
    first = 1 if repeats_only else 0
    if len(words) - n + 1 <= _SMALL_NGRAMS:
        counts = _ngram_counts_small(words, n)
        return sum(c - first for c in counts if c > 1) / sum(counts)
    _, counts = np.unique(ngram_hashes(token_ids(words), n), return_counts=True)
    repeated = counts[counts > 1]
    return float(repeated.sum() - first * len(repeated)) / float(counts.sum())


def image_count(doc: Document, *, max_images: int) -> Verdict:
    """Reject a document with more than ``max_images`` images."""
    images = len(doc.image_nodes)
    if images > max_images:
        return reject(reasons.OBELICS_TOO_MANY_IMAGES, images, max_images, **{IMAGE_COUNT: float(images)})
    return keep(**{IMAGE_COUNT: float(images)})


def word_bounds(
    doc: Document, *, min_words: int, max_words: int, max_image_word_ratio: float, view: TextView | None = None
) -> Verdict:
    """Word count within [min_words, max_words] and at most ``max_image_word_ratio``
    images per word."""
    words = view_of(doc, view).word_count
    ratio = len(doc.image_nodes) / words if words else float(len(doc.image_nodes) > 0)
    signals = {WORD_COUNT: float(words), IMAGE_WORD_RATIO: ratio}
    if words < min_words:
        return reject(reasons.OBELICS_TOO_FEW_WORDS, words, min_words, **signals)
    if words > max_words:
        return reject(reasons.OBELICS_TOO_MANY_WORDS, words, max_words, **signals)
    if ratio > max_image_word_ratio:
        return reject(reasons.OBELICS_IMAGE_WORD_RATIO, ratio, max_image_word_ratio, **signals)
    return keep(**signals)


def text_ratios(
    doc: Document,
    *,
    special_character_measure: str = "non_space",
    max_special_character_ratio: float,
    character_repetition_length: int,
    max_character_repetition_ratio: float,
    word_repetition_length: int,
    max_word_repetition_ratio: float,
    view: TextView | None = None,
) -> Verdict:
    """Special-character, character-repetition and word-repetition ratios of the
    whole text, against the document-level cutoffs."""
    v = view_of(doc, view)
    text = v.text
    special = SPECIAL_MEASURES[special_character_measure](text)
    signals = {SPECIAL_CHARACTER_RATIO: special}
    if special > max_special_character_ratio:
        return reject(reasons.OBELICS_SPECIAL_CHARACTERS, special, max_special_character_ratio, **signals)
    char_rep = character_repetition_ratio(text, character_repetition_length)
    signals[CHARACTER_REPETITION_RATIO] = char_rep
    if char_rep > max_character_repetition_ratio:
        return reject(reasons.OBELICS_CHARACTER_REPETITION, char_rep, max_character_repetition_ratio, **signals)
    word_rep = word_repetition_ratio(text, word_repetition_length, words=v.folded_words)
    signals[WORD_REPETITION_RATIO] = word_rep
    if word_rep > max_word_repetition_ratio:
        return reject(reasons.OBELICS_WORD_REPETITION, word_rep, max_word_repetition_ratio, **signals)
    return keep(**signals)
