"""Per-document image-text scoring from CLIP embeddings: which texts each image is
compared with, the similarities, the image and document rules of ``filters.clip``
and ``filters.nsfw``, and the MMC4 sentence assignment. Plain numpy over a
``Document``: the scoring stage's ``ScoreDocumentsFn`` calls it once per document.

Texts compared with an image: its caption (alt, else figcaption, else title), the
text block before it and the one after it, and, with ``assign_images``, every
sentence of the document.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from mmcurate.filters import clip as rules
from mmcurate.filters import nsfw as nsfw_rules
from mmcurate.filters.captions import split_sentences
from mmcurate.schemas import Document, ImageNode, TextNode
from mmcurate.stages.config import ScoringConfig


def image_caption(node: ImageNode) -> str:
    """An image's own text: alt, else figcaption, else title."""
    for text in (node.alt, node.caption, node.title):
        text = " ".join((text or "").split())
        if text:
            return text
    return ""


def neighbours(doc: Document, position: int) -> tuple[str, str]:
    """The text of the nearest text node before and after the node at ``position``."""
    before = after = ""
    for i in range(position - 1, -1, -1):
        if isinstance(doc.nodes[i], TextNode) and doc.nodes[i].text.strip():
            before = doc.nodes[i].text
            break
    for i in range(position + 1, len(doc.nodes)):
        if isinstance(doc.nodes[i], TextNode) and doc.nodes[i].text.strip():
            after = doc.nodes[i].text
            break
    return before, after


def document_sentences(doc: Document) -> list[tuple[int, str]]:
    """(text node position, sentence) for every sentence of the document, in order."""
    return [(i, s) for i, n in enumerate(doc.nodes) if isinstance(n, TextNode) for s in split_sentences(n.text)]


def scoring_texts(doc: Document, assign: bool) -> tuple[str, ...]:
    """The distinct texts the stage embeds for ``doc``, in first-use order."""
    texts: dict[str, None] = {}
    for position, node in enumerate(doc.nodes):
        if isinstance(node, ImageNode) and node.image_id:
            for text in (image_caption(node), *neighbours(doc, position)):
                if text:
                    texts.setdefault(text)
    if assign and any(isinstance(n, ImageNode) and n.image_id for n in doc.nodes):
        for _, sentence in document_sentences(doc):
            texts.setdefault(sentence)
    return tuple(texts)


def _reorder(doc: Document, anchors: dict[int, tuple[int, int]]) -> tuple:
    """Nodes with each image in ``anchors`` (position -> (text position, sentence
    index)) moved right after its text node; other images stay after the text node
    that preceded them."""
    text_positions = [i for i, n in enumerate(doc.nodes) if isinstance(n, TextNode)]
    placed: dict[int, list[tuple[int, int, int]]] = {}
    last_text = -1
    for i, node in enumerate(doc.nodes):
        if isinstance(node, TextNode):
            last_text = i
            continue
        anchor, order = anchors.get(i, (last_text, -1))
        placed.setdefault(anchor, []).append((order, i, i))
    nodes = [doc.nodes[i] for _, _, i in sorted(placed.get(-1, []))]
    for t in text_positions:
        nodes.append(doc.nodes[t])
        nodes += [doc.nodes[i] for _, _, i in sorted(placed.get(t, []))]
    return tuple(nodes)


def score_document(
    doc: Document,
    image_vectors: Mapping[str, np.ndarray],
    texts: Sequence[str],
    text_vectors: np.ndarray,
    config: ScoringConfig,
    unsafe: Optional[Mapping[str, float]] = None,
) -> tuple[Document, list[tuple[ImageNode, Any]], int]:
    """The scored document (nodes updated, images below the floor removed, signals
    added), the removed images with their verdicts, and the number of images scored.

    Per-image signals are indexed by the image's position among the document's
    image nodes as it entered the stage. ``unsafe`` holds NSFW scores by image_id
    (``scoring.nsfw``): an image above the threshold is removed before its
    similarity counts (``image.nsfw``), and the document gets ``nsfw.*`` signals."""
    text_index = {t: i for i, t in enumerate(texts)}

    def sim(vector: np.ndarray, text: str) -> Optional[float]:
        i = text_index.get(text) if text else None
        return None if i is None else float(np.dot(vector, text_vectors[i]))

    signals: dict[str, float] = {}
    nodes: list = []
    removed: list[tuple[ImageNode, Any]] = []
    best_scores: list[float] = []
    kept_vectors: list[tuple[int, int, np.ndarray]] = []  # (new position, image index, vector)
    nsfw_found: list[float] = []
    nsfw_removed = 0
    k = -1
    for position, node in enumerate(doc.nodes):
        if not isinstance(node, ImageNode):
            nodes.append(node)
            continue
        k += 1
        vector = image_vectors.get(node.image_id) if node.image_id else None
        score = unsafe.get(node.image_id) if unsafe and node.image_id else None
        if score is not None:  # safety first: an NSFW image never reaches the similarity rules
            signals[nsfw_rules.image_signal(k)] = score
            nsfw_found.append(score)
            verdict = nsfw_rules.image_verdict(score, threshold=config.nsfw.threshold)
            if not verdict.keep:
                removed.append((node, verdict))
                nsfw_removed += 1
                continue
        before, after = neighbours(doc, position)
        scores = {}
        if vector is not None:
            scores = {"caption": sim(vector, image_caption(node)), "before": sim(vector, before), "after": sim(vector, after)}
        for what, value in scores.items():
            if value is not None:
                signals[rules.image_signal(k, what)] = value
        best = rules.best_similarity(scores)
        if best is None:
            nodes.append(node)
            continue
        signals[rules.image_signal(k, "best")] = best
        best_scores.append(best)
        scored_node = dataclasses.replace(node, clip_score=best)
        verdict = rules.image_verdict(best, min_similarity=config.image_min_similarity)
        if not verdict.keep:
            removed.append((scored_node, verdict))
            continue
        kept_vectors.append((len(nodes), k, vector))
        nodes.append(scored_node)
    signals.update(rules.aggregates(best_scores, share_threshold=config.share_threshold))
    signals[rules.CLIP_REMOVED] = float(len(removed) - nsfw_removed)
    if unsafe is not None:
        signals.update(nsfw_rules.aggregates(nsfw_found, nsfw_removed))
    scored = dataclasses.replace(doc, nodes=tuple(nodes)).with_signals(signals)
    if config.assign_images and kept_vectors:
        usable = [(p, s) for p, s in document_sentences(scored) if s in text_index]
        if usable:
            matrix = np.array([[float(np.dot(v, text_vectors[text_index[s]])) for _, s in usable] for _, _, v in kept_vectors])
            anchors: dict[int, tuple[int, int]] = {}
            extra: dict[str, float] = {}
            for row, ((position, index, _), column) in enumerate(zip(kept_vectors, rules.assign_images(matrix))):
                if column is None:
                    continue
                anchors[position] = (usable[column][0], column)
                extra[rules.image_signal(index, "sentence")] = float(column)
                extra[rules.image_signal(index, "sentence_similarity")] = float(matrix[row, column])
            scored = dataclasses.replace(scored, nodes=_reorder(scored, anchors)).with_signals(extra)
    return scored, removed, len(best_scores)
