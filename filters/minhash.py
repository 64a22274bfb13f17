"""MinHash signatures and LSH band keys for near-duplicate text, without Beam.

Pipeline of pure functions, each a step of the `dedup` stage's near-duplicate pass:

1. ``shingles``: the text folded (NFKC, case, punctuation, whitespace) and cut into
   units (``filters.text.character_units``: runs of letters and digits, and one
   unit per character of a script written without spaces); then n-grams of
   those units: ``word_ngram`` units for spaced scripts, ``char_ngram`` for text
   whose letters are mostly of unspaced scripts (Chinese, Japanese, Thai, ...), where
   one unit is one character.
2. ``shingle_hashes``: 32-bit hashes of the shingles. ``"sha1"`` is datasketch's
   ``sha1_hash32`` (the first 4 bytes of SHA-1, little-endian), ``"crc32"`` is zlib's
   CRC-32, about 3x faster to compute (benchmarks/bench_dedup.py measures both).
3. ``MinHasher.signature``: the minimum of each of ``num_perm`` affine permutations
   over the hashes. With ``"sha1"`` it is bit-identical to
   ``datasketch.MinHash(num_perm, seed).update_batch(...)`` in datasketch's default
   ``affine32`` scheme: the permutations are datasketch's own, the input hash is
   pre-mixed with the MurmurHash3 32-bit finalizer as datasketch does, and the
   arithmetic wraps modulo 2^32 (tests/filters/test_minhash.py checks equality).
   One numpy expression per document instead of a ``MinHash`` object.
4. ``filters.lsh.band_keys(signature, bands, rows)``: the signature cut into
   ``bands`` bands of ``rows`` values; a key per band (band index + 64-bit digest of
   the band), so two documents are LSH candidates when they share any key. Candidate probability for Jaccard ``s`` is
   ``1 - (1 - s**rows)**bands``; ``lsh_threshold`` is the ``s`` where it is 1/2.
"""

from __future__ import annotations

import unicodedata
import zlib
from functools import lru_cache
from typing import Literal, Sequence

import numpy as np

# Spaced-script words and unspaced-script characters: Chinese and Japanese text is
# shingled by character n-grams (dedup.char_ngram), not by dictionary words.
from mmcurate.filters.text import character_units, unspaced_ratio

ShingleHash = Literal["sha1", "crc32"]


def fold(text: str) -> str:
    """NFKC + casefold; punctuation and spacing are dropped by ``units``."""
    return unicodedata.normalize("NFKC", text).casefold()


def units(text: str) -> list[str]:
    """Units of the folded text, in order: spaced-script words, unspaced-script characters."""
    return character_units(fold(text))


def shingles(text: str, word_ngram: int, char_ngram: int, unspaced_cutoff: float) -> list[str]:
    """Distinct n-grams of word units (``char_ngram`` when the text is mostly unspaced
    script, else ``word_ngram``), joined by a space. A text shorter than n units is
    one shingle; a text without units has none."""
    toks = units(text)
    if not toks:
        return []
    n = char_ngram if unspaced_ratio(text) >= unspaced_cutoff else word_ngram
    if len(toks) <= n:
        return [" ".join(toks)]
    return list(dict.fromkeys(" ".join(toks[i : i + n]) for i in range(len(toks) - n + 1)))


def shingle_hashes(items: Sequence[str], hash_name: ShingleHash = "sha1") -> np.ndarray:
    """uint32 hashes of the shingles, in order (``np.unique`` them for a set)."""
    if hash_name == "sha1":
        # Imported here: datasketch imports scipy (half a second), which a run without
        # near-duplicate dedup never needs.
        from datasketch.hashfunc import sha1_hash32 as fn
    else:
        fn = zlib.crc32
    return np.fromiter((fn(s.encode("utf-8")) for s in items), dtype=np.uint32, count=len(items))


def _fmix32(h: np.ndarray) -> np.ndarray:
    """The MurmurHash3 32-bit finalizer (a bijection on uint32), as datasketch applies it."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


@lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from datasketch import MinHash

    a, b = MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations
    return a.astype(np.uint32), b.astype(np.uint32)


class MinHasher:
    """Signatures of ``num_perm`` uint32 values; datasketch-compatible (see module doc)."""

    def __init__(self, num_perm: int, seed: int = 1):
        self.num_perm = num_perm
        self.seed = seed
        self._a, self._b = _permutations(num_perm, seed)
        self.empty = np.full(num_perm, np.iinfo(np.uint32).max, dtype=np.uint32)

    def signature(self, hashes: np.ndarray) -> np.ndarray:
        if hashes.size == 0:
            return self.empty.copy()
        with np.errstate(over="ignore"):
            mixed = _fmix32(hashes.astype(np.uint32, copy=False))
            return (mixed[:, None] * self._a + self._b).min(axis=0)


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Share of equal signature values: an unbiased estimate of the Jaccard similarity."""
    return float(np.count_nonzero(sig_a == sig_b)) / len(sig_a)


def jaccard(hashes_a: np.ndarray, hashes_b: np.ndarray) -> float:
    """Jaccard similarity of the sets of two hash arrays (the shingle sets, up to
    32-bit hash collisions)."""
    a, b = np.unique(hashes_a), np.unique(hashes_b)
    if a.size == 0 and b.size == 0:
        return 1.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter)


def candidate_probability(s: float, bands: int, rows: int) -> float:
    """Probability that two documents of Jaccard ``s`` share at least one band."""
    return 1.0 - (1.0 - s**rows) ** bands


def lsh_threshold(bands: int, rows: int) -> float:
    """The Jaccard similarity at which a pair becomes a candidate with probability 1/2
    (the midpoint of the LSH S-curve; ``(1/bands)**(1/rows)`` is the usual rougher
    approximation of the same point)."""
    return (1.0 - 0.5 ** (1.0 / bands)) ** (1.0 / rows)


def to_bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array, dtype="<u4").tobytes()


def from_bytes(raw: bytes) -> np.ndarray:
    return np.frombuffer(raw, dtype="<u4")
