"""CLIP image-text similarity: per-image figures, document aggregates and rules,
and MMC4-style image-to-sentence assignment (stage `scoring`).

Similarities are cosines of L2-normalised open_clip embeddings, the figure LAION
and MMC4 threshold. Pure functions over numbers and documents; the model runs in
``stages.scoring``.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from mmcurate.filters import reasons
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

CLIP_IMAGES = "clip.images"  # images scored in the document
CLIP_MEAN = "clip.mean"
CLIP_MIN = "clip.min"
CLIP_MAX = "clip.max"
CLIP_SHARE_ABOVE = "clip.share_above"
CLIP_REMOVED = "clip.images_removed"
CLIP_JUDGE_SCORE = "judge.score"


def image_signal(index: int, what: str) -> str:
    """Signal name of one image's figure: ``clip.image.<index>.<what>`` where
    ``what`` is caption, before, after, best or sentence (assigned sentence index)."""
    return f"clip.image.{index}.{what}"


def best_similarity(scores: Mapping[str, Optional[float]]) -> Optional[float]:
    """An image's score: the best of its caption and neighbouring-text similarities."""
    values = [v for v in scores.values() if v is not None]
    return max(values) if values else None


def image_verdict(score: Optional[float], *, min_similarity: float) -> Verdict:
    """Keep an image whose best similarity reaches ``min_similarity`` (an image with
    no text to compare with has no score and is kept)."""
    if score is None or score >= min_similarity:
        return keep()
    return reject(reasons.CLIP_IMAGE_LOW_SIMILARITY, score, min_similarity)


def pair_verdict(similarity: float, *, min_similarity: float) -> Verdict:
    if similarity >= min_similarity:
        return keep()
    return reject(reasons.CLIP_PAIR_LOW_SIMILARITY, similarity, min_similarity)


def aggregates(scores: Sequence[float], *, share_threshold: float) -> dict[str, float]:
    """Mean, min, max and share of images at or above ``share_threshold``."""
    if not scores:
        return {CLIP_IMAGES: 0.0}
    values = np.asarray(scores, dtype=np.float64)
    return {
        CLIP_IMAGES: float(len(values)),
        CLIP_MEAN: float(values.mean()),
        CLIP_MIN: float(values.min()),
        CLIP_MAX: float(values.max()),
        CLIP_SHARE_ABOVE: float((values >= share_threshold).mean()),
    }


def document_rules(doc: Document, *, min_mean: float, min_share_above: float, no_images: str, had_images: bool) -> Verdict:
    """Rules on the aggregates the stage put in ``doc.signals``."""
    if had_images and not doc.image_nodes and no_images == "reject":
        return reject(reasons.CLIP_NO_IMAGES_LEFT, 0, 1, detail=f"{int(doc.signals.get(CLIP_REMOVED, 0))} removed")
    if CLIP_MEAN in doc.signals:
        if doc.signals[CLIP_MEAN] < min_mean:
            return reject(reasons.CLIP_LOW_MEAN_SIMILARITY, doc.signals[CLIP_MEAN], min_mean)
        if doc.signals[CLIP_SHARE_ABOVE] < min_share_above:
            return reject(reasons.CLIP_LOW_SHARE_ABOVE, doc.signals[CLIP_SHARE_ABOVE], min_share_above)
    return keep()


def assign_images(similarity: np.ndarray) -> list[Optional[int]]:
    """MMC4's assignment (Zhu et al. 2023, sec. 3): each image (row) gets a distinct
    sentence (column) so that the summed similarity is maximal (a linear assignment,
    solved with scipy's ``linear_sum_assignment``). Images beyond the number of
    sentences get None."""
    from scipy.optimize import linear_sum_assignment

    if similarity.size == 0:
        return [None] * similarity.shape[0]
    rows, cols = linear_sum_assignment(similarity, maximize=True)
    assigned: list[Optional[int]] = [None] * similarity.shape[0]
    for r, c in zip(rows, cols):
        assigned[int(r)] = int(c)
    return assigned
