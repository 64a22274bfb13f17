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

_UNSPACED_RUN = re.compile(_UNSPACED_CHAR.pattern + "+")

# Letters and digits stay together; every other visible character is its own token.
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[^\w\s]", re.UNICODE)


def normalize_text(text: str, max_tokens: int = MAX_TOKENS) -> str:
    """One line of space-separated tokens: NFKC, case-folded, punctuation split off,
    unspaced-script characters (CJK, Thai, ...) one token each, at most ``max_tokens``."""
    text = unicodedata.normalize("NFKC", text).casefold()
    # one call per run of unspaced characters, not per character
    text = _UNSPACED_RUN.sub(lambda m: " " + " ".join(m.group(0)) + " ", text)
    tokens = _TOKEN.findall(text)
    return " ".join(tokens[:max_tokens])


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
