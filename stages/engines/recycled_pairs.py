"""Recycled image-text pairs, Beam-free: the ``Pair`` record, the caption rules of
``recycle`` applied to one document (``document_candidates``), which decisions
are recyclable, and a pair's decision row and pairs-table row (``PairRow``). The recycle stage
(``stages.recycle``) runs these in its DoFns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from mmcurate.filters import captions
from mmcurate.schemas import KIND_REJECTED, Decision, Document, ImageNode, Provenance
from mmcurate.schemas.document import SUBJECT_PAGE
from mmcurate.schemas.rows import PairRow
from mmcurate.stages.config import RecycleConfig

STAGE = "recycle"
SUBJECT_PAIR = "pair"


@dataclass(frozen=True)
class Pair:
    """One candidate image-text pair; image fields are filled once retrieved."""

    url: str  # canonical image URL
    caption: str
    caption_source: str
    doc_id: str
    doc_url: str
    provenance: Provenance
    source_stage: str = ""  # the stage that rejected the document ("" when kept)
    rejection_reason: str = ""
    source_kept: bool = False
    image_id: Optional[str] = None
    width: Optional[int] = None
    height: Optional[int] = None
    format: str = ""
    phash: Optional[str] = None
    data: Optional[bytes] = field(default=None, repr=False)
    similarity: Optional[float] = None

    def rank(self) -> tuple:
        """Which candidate of one image survives: the better caption source, a
        rejected document before a kept one, then the smallest doc_id."""
        order = captions.SOURCES.index(self.caption_source) if self.caption_source in captions.SOURCES else 99
        return (order, self.source_kept, self.doc_id, self.url)


def pair_decision(pair: Pair, reason: str, value=None, threshold=None, detail: str = "") -> Decision:
    return Decision(
        doc_id=pair.doc_id,
        url=pair.url,
        stage=STAGE,
        kind=KIND_REJECTED,
        reason=reason,
        provenance=pair.provenance,
        value=value,
        threshold=threshold,
        detail=detail,
        subject=SUBJECT_PAIR,
    )


def caption_rules(config: RecycleConfig) -> captions.CaptionRules:
    return captions.CaptionRules(
        min_words=config.min_words,
        max_words=config.max_words,
        min_chars=config.min_chars,
        max_chars=config.max_chars,
        generic_words=frozenset(w.casefold() for w in config.generic_words),
        languages=frozenset(config.languages),
        min_language_score=config.min_language_score,
    )


def document_candidates(
    doc: Document,
    rules: captions.CaptionRules,
    sources: tuple[str, ...],
    language_model: Any = None,
    *,
    stage: str = "",
    reason: str = "",
    kept: bool = False,
) -> Iterable[tuple[bool, Any]]:
    """(True, Pair) for each image whose caption passes, (False, (url, Verdict))
    for each that fails. Pure: the caption rules on one document."""
    for position, node in enumerate(doc.nodes):
        if not isinstance(node, ImageNode) or not node.src:
            continue
        url = node.src  # canonical since extraction (ImageNode.src)
        chosen, verdict = captions.choose_caption(captions.caption_candidates(doc, position, sources), rules, language_model)
        if chosen is None:
            yield False, (url, verdict)
            continue
        source, text = chosen
        yield True, Pair(
            url=url,
            caption=text,
            caption_source=source,
            doc_id=doc.doc_id,
            doc_url=doc.url,
            provenance=doc.provenance,
            source_stage=stage,
            rejection_reason=reason,
            source_kept=kept,
        )


def recyclable(decision: Decision) -> bool:
    """A page rejected by a rule after extraction, with its document attached."""
    return decision.subject == SUBJECT_PAGE and decision.kind == KIND_REJECTED and decision.document is not None


def with_image(pair: Pair, image: Any, data: bytes) -> Pair:
    """``pair`` with the image found for its URL: an images-table row
    (``ImageRow``) or a retrieval result (``ImageResult``), and its bytes."""
    return dataclasses.replace(
        pair,
        image_id=image.image_id,
        width=image.width,
        height=image.height,
        format=image.format or "",
        phash=image.phash,
        data=data,
    )


def pair_row(pair: Pair, store_bytes: bool) -> PairRow:
    """The pairs-table row of a pair that passed every rule (bytes with ``recycle.store_bytes``)."""
    return PairRow(
        url=pair.url,
        caption=pair.caption,
        caption_source=pair.caption_source,
        doc_id=pair.doc_id,
        doc_url=pair.doc_url,
        provenance=pair.provenance,
        similarity=pair.similarity,
        width=pair.width,
        height=pair.height,
        format=pair.format,
        image_id=pair.image_id,
        bytes=pair.data if store_bytes else None,
        source_kept=pair.source_kept,
        source_stage=pair.source_stage,
        rejection_reason=pair.rejection_reason,
    )
