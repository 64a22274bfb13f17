"""The fastText text classifiers: one text normalisation for training and scoring,
and the quality-score rule.

Every classifier mmcurate trains (``mmcurate train quality|mt|llm``) and scores
(stage ``quality``) sees text through ``normalize_text``, so a model never meets at
scoring time a spelling it was not trained on. Labels are ``__label__1`` (the
class the model is named for: good text, machine-translated text, model-generated
text) and ``__label__0``; ``positive_probabilities`` returns P(``__label__1``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

import numpy as np

from mmcurate.filters import reasons
from mmcurate.filters.text import _UNSPACED_CHAR
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

LABEL_POSITIVE = "__label__1"
LABEL_NEGATIVE = "__label__0"

# Tokens a document contributes to a classifier. fastText's cost is linear in
# tokens; the first 1,000 words carry the style a text classifier keys on, and the
# same cap applies at training and scoring time because both call normalize_text.
MAX_TOKENS = 1000

QUALITY_SCORE = "quality_score"

# Character classes of the tokeniser, one byte a code point (built on first use).
_GAP, _WORD, _SINGLE, _APOSTROPHE = 0, 1, 2, 3
_classes: np.ndarray | None = None


def _character_classes() -> np.ndarray:
    """The class of every code point: ``_WORD`` a letter or digit (``str.isalnum``,
    what ``re``'s ``[^\\W_]`` matches) of a spaced script; ``_GAP`` whitespace and
    ``_`` (they only separate); ``_APOSTROPHE`` ' and ’ (inside a word when a letter
    or digit is on both sides); ``_SINGLE`` every other character (punctuation,
    symbols, marks, and every character of an unspaced script: a token each). Classified
    by ``re`` over a string of every code point: ~50 ms once per process."""
    global _classes
    if _classes is None:
        every = np.arange(0x110000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
        table = np.full(0x110000, _SINGLE, dtype=np.uint8)
        for pattern, cls in ((r"[^\W_]+", _WORD), (r"\s+", _GAP), (_UNSPACED_CHAR.pattern + "+", _SINGLE)):
            for match in re.finditer(pattern, every):
                table[match.start() : match.end()] = cls
        table[ord("_")] = _GAP
        table[ord("'")] = table[ord("’")] = _APOSTROPHE
        _classes = table
    return _classes


def normalize_text(text: str, max_tokens: int = MAX_TOKENS) -> str:
    """One line of space-separated tokens: NFKC, case-folded, punctuation split off,
    unspaced-script characters (CJK, Thai, ...) one token each, at most ``max_tokens``
    (``normalize_texts`` of one text)."""
    return normalize_texts([text], max_tokens)[0]


def normalize_texts(texts: Sequence[str], max_tokens: int = MAX_TOKENS) -> list[str]:
    """``normalize_text`` of each text, computed for the whole batch at once.

    After NFKC and case folding, a token is a run of letters and digits (with ' or ’
    between two of them: "it's"), or any other visible character alone; every
    character of an unspaced script is a token of its own; ``_`` and whitespace only
    separate. The same tokens as ``re.findall(r"[^\\W_]+(?:['’][^\\W_]+)*|[^\\w\\s]")``
    after spacing out unspaced characters (tests/filters/test_normalize_text.py checks
    that), found by array operations over the batch's code points instead of a
    regular expression, which took ~2/3 of the time on long documents."""
    folded = [unicodedata.normalize("NFKC", text).casefold() for text in texts]
    if not folded:
        return []
    joined = "\n".join(folded)  # "\n" is a gap: no token spans two texts
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    n = len(points)
    classes = _character_classes()[points]
    word = classes == _WORD
    if "'" in joined or "’" in joined:
        apostrophes = np.flatnonzero(classes == _APOSTROPHE)
        inner = apostrophes[(apostrophes > 0) & (apostrophes < n - 1)]
        inner = inner[word[inner - 1] & word[inner + 1]]
        classes[apostrophes] = _SINGLE
        word[inner] = True
    separators = np.cumsum(np.fromiter(map(len, folded), dtype=np.int64, count=len(folded)) + 1)[:-1] - 1
    kept = classes != _GAP
    start = kept.copy()  # the first character of a token
    start[1:] &= ~(word[1:] & word[:-1])
    start[separators] = True
    starts = np.flatnonzero(start)
    separator_at = np.searchsorted(starts, separators)
    spaced = np.ones(len(starts), dtype=bool)  # a space before the token: all but a text's first
    spaced[separator_at] = False
    spaced[np.minimum(separator_at + 1, len(starts) - 1)] = False
    if len(starts):
        spaced[0] = False
    space = np.zeros(n, dtype=bool)
    space[starts[spaced]] = True
    bounds = np.concatenate(([-1], separator_at, [len(starts)]))
    for i in np.flatnonzero(np.diff(bounds) - 1 > max_tokens):  # past the cap: cut before the first token too many
        end = separators[i] if i < len(separators) else n
        cut = starts[bounds[i] + 1 + max_tokens]
        kept[cut:end] = space[cut:end] = False
    kept[separators] = True
    # each code point with the space it may need before it, then keep what is used
    pairs = np.empty((n, 2), dtype=np.uint32)
    pairs[:, 0], pairs[:, 1] = 32, points
    used = np.empty((n, 2), dtype=bool)
    used[:, 0], used[:, 1] = space, kept
    return pairs.reshape(-1)[used.reshape(-1)].tobytes().decode("utf-32-le", "surrogatepass").split("\n")


def positive_probabilities(model, normalized: Sequence[str]) -> list[float]:
    """P(``__label__1``) for each normalised text, from a loaded fastText model."""
    if not normalized:
        return []
    labels, probs = model.predict(list(normalized), k=-1)
    out = []
    for labs, ps in zip(labels, probs):
        p = 0.0
        for lab, prob in zip(labs, ps):
            if lab == LABEL_POSITIVE:
                p = float(prob)
                break
        out.append(min(1.0, max(0.0, p)))
    return out


def probabilities(model, normalized: Sequence[str]) -> list[float]:
    """P(positive) for each normalised text, from a fastText model or a model with a
    ``probabilities`` method (``filters.translationese.LinearTextModel``)."""
    if hasattr(model, "probabilities"):
        return model.probabilities(normalized)
    return positive_probabilities(model, normalized)


def min_quality(doc: Document, *, min_score: float) -> Verdict:
    """Reject a document whose ``quality_score`` (set by the scorer) is below ``min_score``."""
    score = doc.signals[QUALITY_SCORE]
    if score < min_score:
        return reject(reasons.QUALITY_LOW_SCORE, score, min_score)
    return keep()
