"""Text written by weak models: the quality stage's ``llm`` rules.

Pure rules over a document's text and signals. The classifier score (``llm_score``)
is measured by the stage; these functions measure the cheap text features and
decide: chatbot boilerplate phrases, lexical diversity (moving-average type-token
ratio, Covington & McFall 2010) and repeated word n-grams (weak decoders loop:
Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration"), and the mean
score of a page's site.
"""

from __future__ import annotations

import re
from typing import Sequence

from mmcurate.filters import reasons
from mmcurate.filters.quality import normalize_text
from mmcurate.filters.site_scores import SiteSignal, site_high_score
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

LLM_SCORE = "llm_score"
TEMPLATE_PHRASES = "llm.template_phrases"
MATTR = "llm.mattr"
REPEATED_TRIGRAMS = "llm.repeated_trigram_ratio"
SITE_SCORE = "llm.site_score"
SITE_DOCS = "llm.site_docs"
# The site mean of llm_score: one site per registered domain, every language together.
SITE = SiteSignal(LLM_SCORE, SITE_SCORE, SITE_DOCS)

# Phrases chat assistants print and people almost never write; the "ChatGPT
# fingerprints" that Cabanac's Problematic Paper Screener searches the literature for
# ("as an AI language model", "regenerate response", "as of my last knowledge update").
_TEMPLATE_PHRASES = re.compile(
    "|".join(
        [
            r"as an ai (?:language )?model",
            r"as an ai assistant",
            r"as a (?:large )?language model",
            r"regenerate response",
            r"as of my (?:last )?knowledge (?:update|cutoff)",
            r"my knowledge cutoff",
            r"i (?:cannot|can't|am unable to) (?:fulfill|comply with) (?:this|that|your) request",
            r"i don't have (?:personal )?(?:opinions|feelings|access to real-time)",
            r"certainly! here(?:'s| is)",
        ]
    ),
    re.IGNORECASE,
)


def template_phrases(text: str) -> int:
    return len(_TEMPLATE_PHRASES.findall(text))


def mattr(tokens: Sequence[str], window: int = 50) -> float:
    """Moving-average type-token ratio (Covington & McFall 2010): the mean share of
    distinct tokens over every window of ``window`` tokens; plain TTR when shorter."""
    n = len(tokens)
    if n == 0:
        return 0.0
    if n <= window:
        return len(set(tokens)) / n
    counts: dict[str, int] = {}
    for tok in tokens[:window]:
        counts[tok] = counts.get(tok, 0) + 1
    total = len(counts)
    for i in range(window, n):
        new, old = tokens[i], tokens[i - window]
        counts[new] = counts.get(new, 0) + 1
        counts[old] -= 1
        if counts[old] == 0:
            del counts[old]
        total += len(counts)
    return total / ((n - window + 1) * window)


def repeated_trigram_ratio(tokens: Sequence[str]) -> float:
    """Share of word trigrams that occur more than once in the text."""
    grams = list(zip(tokens, tokens[1:], tokens[2:]))
    if not grams:
        return 0.0
    seen: dict[tuple[str, str, str], int] = {}
    for g in grams:
        seen[g] = seen.get(g, 0) + 1
    repeated = sum(c for c in seen.values() if c > 1)
    return repeated / len(grams)


def llm_text_features(doc: Document) -> dict[str, float]:
    """The weak-model text features, as signals."""
    text = doc.text
    tokens = [t for t in normalize_text(text).split() if t.isalnum()]
    return {
        TEMPLATE_PHRASES: float(template_phrases(text)),
        MATTR: mattr(tokens),
        REPEATED_TRIGRAMS: repeated_trigram_ratio(tokens),
    }


def llm_template(doc: Document, *, min_phrases: int) -> Verdict:
    """Reject text with at least ``min_phrases`` chat-assistant template phrases."""
    features = llm_text_features(doc)
    phrases = features[TEMPLATE_PHRASES]
    if phrases >= min_phrases:
        return reject(reasons.LLM_TEMPLATE_PHRASE, phrases, min_phrases, **features)
    return keep(**features)


def llm_classifier(doc: Document, *, max_score: float) -> Verdict:
    """Reject text the weak-model classifier scores above ``max_score``."""
    score = doc.signals[LLM_SCORE]
    if score > max_score:
        return reject(reasons.LLM_HIGH_SCORE, score, max_score)
    return keep()


def llm_site(doc: Document, *, max_score: float, min_docs: int) -> Verdict:
    """Reject a page of a site whose mean ``llm_score`` over at least ``min_docs``
    pages is above ``max_score``: page-level detectors are weak on web text, the mean
    over a site's pages much less so (``filters/site_scores.py``)."""
    return site_high_score(doc, signal=SITE, reason=reasons.LLM_SITE_HIGH_SCORE, max_score=max_score, min_docs=min_docs)
