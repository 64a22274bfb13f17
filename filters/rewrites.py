"""Rewrites: semantic near-duplicates among the quality stage's kept documents.

Random-hyperplane LSH over sentence embeddings (Charikar 2002): the stage groups
the documents by band key (``filters.lsh``), compares the members of each bucket by
cosine similarity and rejects the later of two documents at or above the threshold.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from mmcurate.filters import reasons
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

REWRITE_SIMILARITY = "rewrite.max_similarity"


def hyperplanes(dim: int, bands: int, rows: int, seed: int) -> np.ndarray:
    """``bands * rows`` random hyperplanes (Gaussian normals), fixed by ``seed``."""
    return np.random.default_rng(seed).standard_normal((bands * rows, dim)).astype(np.float32)


def sign_bits(vector: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """The side of each hyperplane ``vector`` lies on (the bits ``filters.lsh.band_keys``
    cuts into bands). Two vectors at angle θ share a band of ``rows`` bits with
    probability (1 - θ/π) ** rows."""
    return (planes @ vector) >= 0


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
