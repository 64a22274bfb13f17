"""Caption rules for recycled image-text pairs (stage `recycle`).

A candidate pair takes its caption from the first of the image's own texts that
passes the rules, in order of preference: alt text, ``<figcaption>``, title, then
the sentence nearest to the image in the document. All checks are string rules
(cheapest first), then language ID with the heuristics stage's fastText model when
asked. Pure functions: no I/O, nothing loaded here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from mmcurate.filters import reasons
from mmcurate.filters.language import predict_language
from mmcurate.filters.text import count_words, word_units
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document, ImageNode, TextNode

SOURCE_ALT = "alt"
SOURCE_FIGCAPTION = "figcaption"
SOURCE_TITLE = "title"
SOURCE_NEAREST_SENTENCE = "nearest_sentence"
SOURCES = (SOURCE_ALT, SOURCE_FIGCAPTION, SOURCE_TITLE, SOURCE_NEAREST_SENTENCE)

CAPTION_WORDS = "caption.words"
CAPTION_LANGUAGE_SCORE = "caption.language_score"

_SPACES = re.compile(r"\s+")
# Sentence ends: Latin and CJK terminal punctuation, then space or end (CJK needs none).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])")
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|www\.)\S*$|^\S+\.(?:com|org|net|html?|php)(?:/\S*)?$", re.IGNORECASE)
_IMAGE_EXTENSIONS = r"jpe?g|png|gif|webp|bmp|svg|tiff?|avif|heic|ico"
_FILENAME = re.compile(
    rf"^[\w\-. ()%+~]+\.(?:{_IMAGE_EXTENSIONS})$"  # photo-1.jpg, My Cat (2).png
    r"|^(?:img|dsc|dscn|dcim|pxl|image|photo|screenshot|scan)[\s_\-]?\d[\w\-]*$"  # IMG_1234, DSC01234
    r"|^[0-9a-f]{16,}$"  # a hash
    r"|^[\w\-]*\d{6,}[\w\-]*$",  # a run of digits with no space: 20240501_183012
    re.IGNORECASE,
)


def clean(text: str) -> str:
    return _SPACES.sub(" ", text or "").strip()


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (Latin and CJK terminal punctuation), whitespace folded."""
    return [s for s in (clean(part) for part in _SENTENCE_END.split(text or "")) if s]


def nearest_sentence(doc: Document, position: int) -> str:
    """The sentence closest to the node at ``position``: the last sentence of the
    text node before it or the first of the text node after it, whichever node is
    nearer (the one after wins a tie: captions usually follow their figure)."""
    nodes = doc.nodes
    before = after = None
    for i in range(position - 1, -1, -1):
        if isinstance(nodes[i], TextNode) and split_sentences(nodes[i].text):
            before = i
            break
    for i in range(position + 1, len(nodes)):
        if isinstance(nodes[i], TextNode) and split_sentences(nodes[i].text):
            after = i
            break
    if after is not None and (before is None or after - position <= position - before):
        return split_sentences(nodes[after].text)[0]
    if before is not None:
        return split_sentences(nodes[before].text)[-1]
    return ""


def caption_candidates(doc: Document, position: int, sources: Sequence[str] = SOURCES) -> list[tuple[str, str]]:
    """(source, text) for the image node at ``position``, in ``sources`` order,
    non-empty texts only; the nearest sentence is computed only when asked for."""
    node = doc.nodes[position]
    assert isinstance(node, ImageNode)
    found = []
    for source in sources:
        if source == SOURCE_ALT:
            text = node.alt
        elif source == SOURCE_FIGCAPTION:
            text = node.caption
        elif source == SOURCE_TITLE:
            text = node.title
        elif source == SOURCE_NEAREST_SENTENCE:
            text = nearest_sentence(doc, position)
        else:
            raise ValueError(f"unknown caption source {source!r}")
        text = clean(text)
        if text:
            found.append((source, text))
    return found


@dataclass(frozen=True)
class CaptionRules:
    """Thresholds of the caption rules, bound from ``RecycleConfig``."""

    min_words: int
    max_words: int
    min_chars: int
    max_chars: int
    generic_words: frozenset[str]
    languages: frozenset[str] = frozenset()
    min_language_score: float = 0.0

    @property
    def needs_language(self) -> bool:
        return bool(self.languages) or self.min_language_score > 0


def check_caption(text: str, rules: CaptionRules, language_model: Optional[Any] = None) -> Verdict:
    """Keep or reject one caption, cheapest rules first: URL, file name, generic
    words, length in characters and words, then language (only when the rules ask
    for it and ``language_model`` is given)."""
    text = clean(text)
    if not text:
        return reject(reasons.CAPTION_MISSING, 0, None)
    if _URL.match(text):
        return reject(reasons.CAPTION_URL, None, None, detail=text[:80])
    if _FILENAME.match(text):
        return reject(reasons.CAPTION_FILENAME, None, None, detail=text[:80])
    units = [u.casefold() for u in word_units(text)]
    words = count_words(text)
    signals = {CAPTION_WORDS: float(words)}
    if units and all(u in rules.generic_words for u in units):
        return reject(reasons.CAPTION_GENERIC, None, None, detail=text[:80], **signals)
    if len(text) < rules.min_chars:
        return reject(reasons.CAPTION_TOO_SHORT, len(text), rules.min_chars, detail="characters", **signals)
    if words < rules.min_words:
        return reject(reasons.CAPTION_TOO_SHORT, words, rules.min_words, detail="words", **signals)
    if len(text) > rules.max_chars:
        return reject(reasons.CAPTION_TOO_LONG, len(text), rules.max_chars, detail="characters", **signals)
    if words > rules.max_words:
        return reject(reasons.CAPTION_TOO_LONG, words, rules.max_words, detail="words", **signals)
    if rules.needs_language and language_model is not None:
        prediction = predict_language(language_model, text, max_chars=rules.max_chars)
        signals[CAPTION_LANGUAGE_SCORE] = prediction.score
        if rules.languages and prediction.language not in rules.languages:
            return reject(reasons.CAPTION_LANGUAGE_NOT_ALLOWED, prediction.score, None, detail=prediction.language, **signals)
        if prediction.score < rules.min_language_score:
            return reject(
                reasons.CAPTION_LOW_LANGUAGE_SCORE, prediction.score, rules.min_language_score, detail=prediction.language, **signals
            )
    return keep(**signals)


def choose_caption(
    candidates: Sequence[tuple[str, str]], rules: CaptionRules, language_model: Optional[Any] = None
) -> tuple[Optional[tuple[str, str]], Verdict]:
    """The first (source, text) that passes, with its verdict; or None with the
    verdict of the most preferred candidate (``caption.missing`` when there is none)."""
    first: Optional[Verdict] = None
    for source, text in candidates:
        verdict = check_caption(text, rules, language_model)
        if verdict.keep:
            return (source, text), verdict
        if first is None:
            first = Verdict(
                keep=False,
                reason=verdict.reason,
                value=verdict.value,
                threshold=verdict.threshold,
                detail=f"{source}: {verdict.detail}".rstrip(": "),
                signals=verdict.signals,
            )
    return None, first or reject(reasons.CAPTION_MISSING, 0, None, detail="no alt, figcaption, title or text nearby")
