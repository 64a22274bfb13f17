"""Node-level cleanup before the document rules, as OBELICS does (Laurençon et al.
2023, section 3.3 "node-level filtering"): a document is cleaned first, then judged.

``NodeCleanup`` is a named transform, not a filter: it returns a new ``Document``
without the removed nodes, and counts every removal by reason in the document's
signals (``nodes.removed.<reason>``), with the node counts before cleanup
(``nodes.text_before``, ``nodes.images_before``). The pure filter ``nothing_left``
then turns a document that cleanup emptied into a decision row.

Removal reasons:
- ``boilerplate``: a short text node that is a cookie/consent banner, a
  share/follow/subscribe line, "read more", a breadcrumb trail or a copyright line;
- ``special_characters``, ``character_repetition``, ``word_repetition``: a text node
  over the node-level cutoffs, measured as ``filters/obelics.py`` says (by default
  punctuation and symbols among non-space characters, and repeats only, so that a
  clean paragraph that names one long term twice, or is full of dates and figures,
  stays);
- ``tiny_image``: an image whose declared width or height is under the minimum;
- ``image_url``: an image whose URL marks it as a logo, icon, avatar, spacer,
  tracking pixel or other page furniture (OBELICS drops URLs containing logo,
  button, icon, plugin or widget);
- ``repeated_image``: the second and later occurrences of one image URL.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Iterable

from mmcurate.filters import reasons
from mmcurate.filters.obelics import SPECIAL_MEASURES, character_repetition_ratio, word_repetition_ratio
from mmcurate.filters.text import count_words
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document, ImageNode, TextNode

REMOVED = "nodes.removed"
TEXT_BEFORE = "nodes.text_before"
IMAGES_BEFORE = "nodes.images_before"

BOILERPLATE = "boilerplate"
SPECIAL_CHARACTERS = "special_characters"
CHARACTER_REPETITION = "character_repetition"
WORD_REPETITION = "word_repetition"
TINY_IMAGE = "tiny_image"
IMAGE_URL = "image_url"
REPEATED_IMAGE = "repeated_image"
REMOVAL_REASONS = (
    BOILERPLATE,
    SPECIAL_CHARACTERS,
    CHARACTER_REPETITION,
    WORD_REPETITION,
    TINY_IMAGE,
    IMAGE_URL,
    REPEATED_IMAGE,
)


def removed_signal(reason: str) -> str:
    return f"{REMOVED}.{reason}"


_BOILERPLATE = re.compile(
    "|".join(
        [
            # cookie and consent banners
            r"\b(?:we|this (?:web)?site|our (?:web)?site) uses? cookies\b",
            r"\bcookie (?:policy|settings|preferences|consent|notice|richtlinie|einstellungen)\b",
            r"\baccept (?:all )?cookies\b",
            r"\b(?:use|usage) of cookies\b",
            r"\bby (?:continuing to (?:use|browse)|using) (?:this|our) (?:web)?site\b",
            r"\b(?:manage|privacy) (?:consent|preferences)\b",
            r"\bverwendet cookies\b|\butilise des cookies\b|\butiliza cookies\b",
            r"\bcookie\s*を|cookie\s*的使用",
            # share / follow / subscribe
            r"^\W*(?:share|tweet|pin|email|print)(?: (?:this|it))?(?: (?:article|post|page|story))?"
            r"(?: (?:on|via) (?:facebook|twitter|x|linkedin|whatsapp|pinterest|reddit|email))?\W*$",
            r"\bshare (?:this|on) (?:article|post|page|story|facebook|twitter|linkedin|whatsapp|pinterest)\b",
            r"\bfollow us\b|\blike us on facebook\b",
            r"\bsubscribe (?:to|for) (?:our|the|my) (?:newsletter|channel|blog|updates)\b",
            r"\bsign up (?:for|to) (?:our|the) newsletter\b",
            r"\bteilen auf\b|\bfolgen sie uns\b|\bnewsletter abonnieren\b|\bpartager sur\b|\bsuivez-nous\b",
            # read more
            r"^\W*(?:read more|continue reading|read the full (?:story|article)|click here|more info|"
            r"weiterlesen|mehr lesen|lire la suite|leer más|leia mais|читать далее|подробнее|"
            r"続きを読む|もっと見る|阅读全文|阅读更多|查看更多|اقرأ المزيد)\b",
            # copyright lines
            r"^\W*(?:©|\(c\) ?\d{4}|copyright ?(?:©|\(c\)|\d{4}))",
            r"\ball rights reserved\b|\balle rechte vorbehalten\b|\btous droits réservés\b|"
            r"\btodos los derechos reservados\b|\bвсе права защищены\b|版权所有|著作権|جميع الحقوق محفوظة",
        ]
    ),
    re.IGNORECASE,
)
# A breadcrumb trail: three or more short segments joined by a trail separator.
_CRUMB = re.compile(r"^\s*[^›»>/|→\n]{1,40}(?:(?:\s*[›»>→]\s*|\s+[/|]\s+)[^›»>/|→\n]{1,40}){2,}\s*$")
_URL_TOKEN = re.compile(r"[a-z0-9]+")


def is_boilerplate(text: str, *, max_words: int) -> bool:
    """A short text node that is page furniture rather than content."""
    if count_words(text) > max_words:
        return False
    return bool(_BOILERPLATE.search(text) or _CRUMB.match(text))


def image_url_marked(src: str, tokens: frozenset[str]) -> bool:
    """Whether the URL (host and path, lowercased, split on non-alphanumerics) has a
    token that is a listed word, its plural, or the word followed by digits
    (``logo``, ``icons``, ``avatar128``)."""
    rest = src.split("://", 1)[-1].split("?", 1)[0].lower()
    for token in _URL_TOKEN.findall(rest):
        if token in tokens:
            return True
        stem = token.rstrip("0123456789")
        if stem in tokens or (stem.endswith("s") and stem[:-1] in tokens):
            return True
    return False


@dataclass(frozen=True)
class NodeCleanup:
    """Removes boilerplate and degenerate nodes; thresholds from config ``heuristics.nodes``."""

    boilerplate_max_words: int
    min_declared_image_size: int
    image_url_tokens: frozenset[str]
    remove_repeated_images: bool
    max_special_character_ratio: float
    character_repetition_length: int
    max_character_repetition_ratio: float
    word_repetition_length: int
    max_word_repetition_ratio: float
    special_measure: str = "non_space"
    repeats_only: bool = True

    def text_reason(self, text: str) -> str | None:
        if is_boilerplate(text, max_words=self.boilerplate_max_words):
            return BOILERPLATE
        if SPECIAL_MEASURES[self.special_measure](text) > self.max_special_character_ratio:
            return SPECIAL_CHARACTERS
        repeats = self.repeats_only
        if character_repetition_ratio(text, self.character_repetition_length, repeats_only=repeats) > self.max_character_repetition_ratio:
            return CHARACTER_REPETITION
        if word_repetition_ratio(text, self.word_repetition_length, repeats_only=repeats) > self.max_word_repetition_ratio:
            return WORD_REPETITION
        return None

    def image_reason(self, image: ImageNode, seen: set[str]) -> str | None:
        smallest = min((s for s in (image.declared_width, image.declared_height) if s is not None), default=None)
        if smallest is not None and smallest < self.min_declared_image_size:
            return TINY_IMAGE
        if image_url_marked(image.src, self.image_url_tokens):
            return IMAGE_URL
        if self.remove_repeated_images:
            if image.src in seen:
                return REPEATED_IMAGE
            seen.add(image.src)
        return None

    def __call__(self, doc: Document) -> Document:
        removed = dict.fromkeys(REMOVAL_REASONS, 0)
        kept: list = []
        seen: set[str] = set()
        text_before = images_before = 0
        for node in doc.nodes:
            if isinstance(node, TextNode):
                text_before += 1
                reason = self.text_reason(node.text) if node.text.strip() else None
            else:
                images_before += 1
                reason = self.image_reason(node, seen)
            if reason is None:
                kept.append(node)
            else:
                removed[reason] += 1
        signals = {removed_signal(r): float(n) for r, n in removed.items()}
        signals[TEXT_BEFORE] = float(text_before)
        signals[IMAGES_BEFORE] = float(images_before)
        out = doc if len(kept) == len(doc.nodes) else dataclasses.replace(doc, nodes=tuple(kept))
        return out.with_signals(signals)


def nothing_left(doc: Document, *, min_images: int) -> Verdict:
    """Reject a document that had text (or, when images are required, images) before
    node cleanup and has none after it."""
    signals = doc.signals
    if signals.get(TEXT_BEFORE, 0) > 0 and not any(n.text.strip() for n in doc.text_nodes):
        return reject(reasons.NODES_NO_TEXT_LEFT, 0, 1, detail=_removed_detail(signals))
    if min_images > 0 and signals.get(IMAGES_BEFORE, 0) > 0 and not doc.image_nodes:
        return reject(reasons.NODES_NO_IMAGES_LEFT, 0, min_images, detail=_removed_detail(signals))
    return keep()


def _removed_detail(signals) -> str:
    parts: Iterable[str] = (f"{r}={int(signals[removed_signal(r)])}" for r in REMOVAL_REASONS if signals.get(removed_signal(r)))
    return "removed " + ", ".join(parts)
