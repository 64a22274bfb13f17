"""Implicit duplicates: machine-translated text, weak-model text, rewrites.

Pure rules over a document's signals and fields. The classifier scores
(``mt_score``, ``llm_score``) and the page markers (``mt.widget``, ``mt.notice``,
set at extraction by ``filters.mt_page``) are measured elsewhere; these functions
measure the cheap text features and decide.

Machine translation (Thompson et al. 2024, "A Shocking Amount of the Web is Machine
Translated", ACL Findings): content published in many languages at once is mostly
low-quality machine translation, so a page whose ``hreflang`` alternates span many
languages is evidence; so is a website-translation widget on a page served under a
language path, a notice that the page was translated automatically, and a URL that
names one language for content in another.

Weak-model text: chatbot boilerplate phrases, lexical diversity (moving-average
type-token ratio, Covington & McFall 2010) and repeated word n-grams (weak decoders
loop: Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration").
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Optional, Sequence
from urllib.parse import parse_qs, urlsplit

import numpy as np

from mmcurate.filters import reasons
from mmcurate.filters.mt_page import NOTICE, WIDGET
from mmcurate.filters.quality import normalize_text
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

MT_SCORE = "mt_score"
LLM_SCORE = "llm_score"
HREFLANG_LANGUAGES = "mt.hreflang_languages"
URL_LANGUAGE_MISMATCH = "mt.url_language_mismatch"
TEMPLATE_PHRASES = "llm.template_phrases"
MATTR = "llm.mattr"
REPEATED_TRIGRAMS = "llm.repeated_trigram_ratio"
SITE_SCORE = "llm.site_score"
SITE_DOCS = "llm.site_docs"
REWRITE_SIMILARITY = "rewrite.max_similarity"

# A language code as sites write it in a path, subdomain or query: "fr", "pt-br", "zh_hans".
_LANG_CODE = re.compile(r"^([a-z]{2})(?:[-_](?:[a-z]{2}|[a-z]{4}))?$")
# ISO 639-1 codes (the ones fastText lid.176 can also return); an unlisted two-letter
# path segment ("tv", "us") is not a language.
_ISO_639_1 = frozenset(
    "af am an ar as av az ba be bg bh bn bo br bs ca ce co cs cv cy da de dv el en eo es et eu fa fi fr fy "
    "ga gd gl gn gu gv he hi hr ht hu hy ia id ie ilo io is it ja jv ka kk km kn ko ku kv kw ky la lb li lo "
    "lt lv mg mk ml mn mr ms mt my nds ne nl nn no oc or os pa pl ps pt qu rm ro ru sa sc sd sh si sk sl so "
    "sq sr su sv sw ta te tg th tk tl tr tt ug uk ur uz vi vo wa yi yo zh".split()
)


def _code(value: str) -> Optional[str]:
    match = _LANG_CODE.match(value.lower())
    if match and match.group(1) in _ISO_639_1:
        return match.group(1)
    return None


def url_language(url: str) -> Optional[str]:
    """The language a URL names: first path segment (/fr/...), subdomain (fr.example.org),
    or a ``lang``/``hl``/``language`` query parameter; None when it names none."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if segments:
        code = _code(segments[0])
        if code:
            return code
    host = (parts.hostname or "").split(".")
    if len(host) > 2:
        code = _code(host[0])
        if code:
            return code
    query = parse_qs(parts.query)
    for key in ("lang", "hl", "language", "locale"):
        for value in query.get(key, ()):
            code = _code(value)
            if code:
                return code
    return None


def primary_language(language: str) -> str:
    """The primary subtag of a language code, lower-case: "zh-Hans" -> "zh", "pt_BR" -> "pt"."""
    return language.lower().replace("_", "-").split("-")[0]


_primary = primary_language


def hreflang_languages(doc: Document) -> int:
    """Distinct primary languages among the page's ``hreflang`` alternates (x-default aside)."""
    langs = {_primary(lang) for lang, _ in doc.hreflang if lang and lang.lower() != "x-default"}
    return len(langs)


def mt_notice(doc: Document, *, min_notices: int) -> Verdict:
    """Reject a page that says it was translated automatically."""
    notices = doc.signals.get(NOTICE, 0.0)
    if notices >= min_notices:
        return reject(reasons.MT_NOTICE, notices, min_notices)
    return keep()


def mt_widget(doc: Document) -> Verdict:
    """Reject a page that carries a website-translation widget and is served under a
    language path: the translated variant such services generate (Weglot, GTranslate
    and ConveyThis serve translations as /xx/ pages of the site)."""
    widgets = doc.signals.get(WIDGET, 0.0)
    if widgets >= 1 and url_language(doc.url) is not None:
        return reject(reasons.MT_WIDGET, widgets, 1, detail=f"url_language={url_language(doc.url)}")
    return keep()


def mt_hreflang_fanout(doc: Document, *, max_languages: int) -> Verdict:
    """Reject a page whose hreflang alternates span more than ``max_languages`` languages."""
    langs = hreflang_languages(doc)
    if langs > max_languages:
        return reject(reasons.MT_HREFLANG_FANOUT, langs, max_languages, **{HREFLANG_LANGUAGES: float(langs)})
    return keep(**{HREFLANG_LANGUAGES: float(langs)})


def mt_url_language(doc: Document, *, reject_mismatch: bool) -> Verdict:
    """Compare the URL's language with the content's (``Document.language``, set by the
    heuristics stage's language ID); no evidence when either is unknown."""
    named = url_language(doc.url)
    if not named or not doc.language:
        return keep()
    mismatch = float(named != _primary(doc.language))
    if mismatch and reject_mismatch:
        return reject(
            reasons.MT_URL_LANGUAGE_MISMATCH, 1.0, 0.0, detail=f"url={named} content={doc.language}",
            **{URL_LANGUAGE_MISMATCH: mismatch},
        )
    return keep(**{URL_LANGUAGE_MISMATCH: mismatch})


def mt_classifier(doc: Document, *, max_score: float, max_scores: Mapping[str, float]) -> Verdict:
    """Reject text the MT classifier of its language scores above the threshold for
    that language (``max_scores``, else ``max_score``). A document without an
    ``mt_score`` (no model for its language) is kept: no evidence."""
    score = doc.signals.get(MT_SCORE)
    if score is None:
        return keep()
    threshold = max_scores.get(_primary(doc.language), max_score) if doc.language else max_score
    if score > threshold:
        return reject(reasons.MT_HIGH_SCORE, score, threshold)
    return keep()


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
    """Reject a page of a site (host) whose mean ``llm_score`` over at least
    ``min_docs`` pages is at or above ``max_score``: page-level detectors are weak on
    web text, the mean over a site's pages much less so."""
    score, docs = doc.signals.get(SITE_SCORE), doc.signals.get(SITE_DOCS, 0.0)
    if score is not None and docs >= min_docs and score >= max_score:
        return reject(reasons.LLM_SITE_HIGH_SCORE, score, max_score, detail=f"site_docs={docs:.0f}")
    return keep()


def site_of(url: str) -> str:
    """The host a page belongs to, lower-case, without a leading ``www.``."""
    host = (urlsplit(url).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host


# --- rewrites: random-hyperplane LSH over sentence embeddings (Charikar 2002) ---


def hyperplanes(dim: int, bands: int, rows: int, seed: int) -> np.ndarray:
    """``bands * rows`` random hyperplanes (Gaussian normals), fixed by ``seed``."""
    return np.random.default_rng(seed).standard_normal((bands * rows, dim)).astype(np.float32)


def band_keys(vector: np.ndarray, planes: np.ndarray, rows: int) -> list[str]:
    """One key per band: the band index and the signs of its ``rows`` projections.
    Two vectors at angle θ share a band with probability (1 - θ/π) ** rows."""
    bits = (planes @ vector) >= 0
    keys = []
    for band in range(len(bits) // rows):
        chunk = bits[band * rows : (band + 1) * rows]
        keys.append(f"{band}:{int(''.join('1' if b else '0' for b in chunk), 2):x}")
    return keys


def rewrite_matches(
    members: Iterable[tuple[tuple[str, str], str, np.ndarray]],
) -> Iterable[tuple[str, tuple[float, str]]]:
    """For the members of one LSH bucket ((rank, doc_id, unit vector)), each member's
    highest cosine similarity to a member that ranks before it, and that member."""
    ordered = sorted(members, key=lambda m: m[0])
    if len(ordered) < 2:
        return
    matrix = np.stack([m[2] for m in ordered])
    sims = matrix @ matrix.T
    for i in range(1, len(ordered)):
        j = int(np.argmax(sims[i, :i]))
        yield ordered[i][1], (float(sims[i, j]), ordered[j][1])


def rewrite_duplicate(doc: Document, *, threshold: float, survivor: str = "") -> Verdict:
    """Reject a document whose embedding is at least ``threshold`` cosine-similar to an
    earlier one (``rewrite.max_similarity``, measured by the LSH step)."""
    similarity = doc.signals.get(REWRITE_SIMILARITY, 0.0)
    if similarity >= threshold:
        return reject(reasons.REWRITE_NEAR_DUPLICATE, similarity, threshold, detail=f"survivor={survivor}")
    return keep()
