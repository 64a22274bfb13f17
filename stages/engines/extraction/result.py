"""What an extractor returns for one page, and the one place image URLs take their
canonical form (``url_forms.canonical_url``) for every extractor, built in or
named by a dotted path."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from mmcurate.filters.url_forms import canonical_url
from mmcurate.schemas import ImageNode, Node
from mmcurate.stages.config import ExtractConfig


@dataclass(frozen=True)
class Extraction:
    """What an extractor returns for one page."""

    nodes: tuple[Node, ...] = ()
    title: str = ""
    # (language, absolute URL) pairs from <link rel="alternate" hreflang=...>.
    hreflang: tuple[tuple[str, str], ...] = ()
    # Page facts found on the way (html_lang, author, date, sitename, ...).
    metadata: Mapping[str, str] = field(default_factory=dict)
    # Elements taken out of the page before extraction, by rule
    # (boilerplate.RULES: tables of contents, reference lists, share bars ...).
    removed: Mapping[str, int] = field(default_factory=dict)


Extractor = Callable[[str, str, ExtractConfig], Extraction]


def with_canonical_urls(nodes: Iterable[Node]) -> tuple[Node, ...]:
    """``nodes`` with each image's ``src`` and ``candidates`` in canonical form:
    computed here, once, so that retrieval, the tables and recycle use the URL as
    it is. Candidates that become the ``src`` or repeat one another are dropped."""
    out = []
    for node in nodes:
        if isinstance(node, ImageNode):
            src = canonical_url(node.src) if node.src else node.src
            candidates = tuple(dict.fromkeys(c for c in map(canonical_url, node.candidates) if c and c != src))
            if (src, candidates) != (node.src, node.candidates):
                node = dataclasses.replace(node, src=src, candidates=candidates)
        out.append(node)
    return tuple(out)


def checked(result: object, extractor_name: str) -> Extraction:
    """``result`` when an extractor returned an ``Extraction``; ``TypeError`` else."""
    if not isinstance(result, Extraction):
        raise TypeError(f"extractor {extractor_name!r} returned {type(result).__name__}, not Extraction")
    return result
