"""Settings of the dedup stage: exact, URL and MinHash near-duplicates.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from mmcurate.filters.url_forms import DEFAULT_STRIP_PARAMS
from mmcurate.stages.config.base import Section as _Section


SurvivorCriterion = Literal["quality", "earliest", "latest", "longest"]


class DedupConfig(_Section):
    # URL dedup: captures of one normalised URL (filters/url_forms.py: dedup_key); the latest
    # capture by WARC date survives, ties to the smallest doc_id.
    url: bool = True
    url_strip_params: tuple[str, ...] = DEFAULT_STRIP_PARAMS  # "name", or "prefix*"
    url_fold_scheme: bool = True  # http and https are one URL
    # Exact dedup on the folded main text (case, punctuation, whitespace).
    exact_text: bool = True
    # MinHash-LSH near-duplicates (filters/minhash.py).
    near: bool = True
    # Word 5-gram shingles: Lee et al. 2022 ("Deduplicating Training Data Makes
    # Language Models Better") and FineWeb (Penedo et al. 2024) both shingle 5-grams.
    word_ngram: int = Field(default=5, ge=1)
    # Unspaced scripts (one unit = one character) shingle character 5-grams: the
    # same window as for words. A choice of this project, not a published figure.
    char_ngram: int = Field(default=5, ge=1)
    # A text is shingled by characters when at least this share of its letters is
    # of an unspaced script (filters.text.unspaced_ratio).
    unspaced_cutoff: float = Field(default=0.5, ge=0, le=1)
    # 128 permutations in 16 bands of 8 rows. A pair of Jaccard s becomes a
    # candidate with probability 1 - (1 - s**8)**16: 0.947 at 0.80, 0.994 at 0.85,
    # 0.999 at 0.88 (S-curve midpoint 0.674). Ours: rows of 8 as FineWeb (Penedo et
    # al. 2024; datatrove MinhashConfig, 14 buckets x 8 hashes = 0.988 at 0.85), 16
    # bands to catch >= 99% of pairs at 0.85 with the same 128 permutations. The
    # earlier 9 x 13 (datasketch's _optimal_param for 0.8) caught 0.686 at 0.85.
    num_perm: int = Field(default=128, ge=1)
    # LSH bands (see num_perm); bands * rows must not exceed num_perm.
    bands: int = Field(default=16, ge=1)
    # Rows (signature values) per LSH band.
    rows: int = Field(default=8, ge=1)
    # Seed of the MinHash permutations (same seed, same signatures).
    seed: int = 1
    # "sha1": signatures bit-identical to datasketch; "crc32": ~3x faster hashing.
    shingle_hash: Literal["sha1", "crc32"] = "sha1"
    # Check each LSH candidate pair with the true Jaccard of the shingle sets and
    # drop pairs below verify_threshold (removes LSH false positives; costs two
    # shuffles of the shingle hashes). On by default since the 16 x 8 banding makes
    # 61% of pairs at Jaccard 0.7 candidates: without it they would be clustered
    # as duplicates. 0.8 is the duplicate threshold the earlier banding aimed at.
    verify: bool = True
    # True Jaccard a candidate pair needs when verify is on.
    verify_threshold: float = Field(default=0.8, gt=0, le=1)
    # Rounds of large-star/small-star connected components (2 shuffles each). A
    # chain of n documents needs about log2(n) rounds; what has not converged after
    # them is finished by union-find in one worker (logged, counted).
    cc_rounds: int = Field(default=10, ge=1)
    # Survivor of an exact or near-duplicate cluster. "quality": highest
    # `quality_signal` (documents without it come after); "earliest"/"latest": WARC
    # date; "longest": most words. The smallest doc_id breaks remaining ties.
    survivor: tuple[SurvivorCriterion, ...] = ("quality", "earliest")
    # The document signal the "quality" survivor criterion compares.
    quality_signal: str = "quality_score"

    @field_validator("rows")
    @classmethod
    def _bands_fit(cls, rows: int, info: Any) -> int:
        bands, num_perm = info.data.get("bands"), info.data.get("num_perm")
        if bands is not None and num_perm is not None and bands * rows > num_perm:
            raise ValueError(f"bands * rows = {bands * rows} exceeds num_perm = {num_perm}")
        return rows
