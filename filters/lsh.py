"""Band keys of locality-sensitive hashing, shared by every near-duplicate search.

A locality-sensitive hash of an item is an array of values (a MinHash signature,
the bits of a perceptual hash, the signs of random-hyperplane projections); LSH cuts
it into bands, and two items are candidates when they agree on a whole band. Each
band becomes one string key, ``"<band index>:<band value>"``, so that a Beam
``GroupByKey`` on the keys puts the candidates of each band in one bucket:

- text near-duplicates (stage `dedup`, ``filters/minhash.py``): ``bands`` bands of
  ``rows`` signature values, candidates for Jaccard ``s`` with probability
  ``1 - (1 - s**rows)**bands``;
- images (stage `images`, ``filters/images.py``): the 64 bits of a pHash in
  ``k + 1`` bands; by pigeonhole two hashes within Hamming distance ``k`` agree on
  one band;
- rewrites (stage `quality`, ``filters/rewrites.py``): ``bands`` bands of ``rows``
  hyperplane sign bits; two vectors at angle θ share a band with probability
  ``(1 - θ/π) ** rows``.

Bits (a boolean array) are written as the band's bits read as one binary number, in
hexadecimal; other values (unsigned integers) as a 64-bit BLAKE2b digest of the
band's little-endian uint32 bytes, which keeps keys short for long bands.
"""

from __future__ import annotations

import hashlib

import numpy as np


def band_keys(values: np.ndarray, bands: int, rows: int | None = None) -> list[str]:
    """One key per band of ``values``. With ``rows``, the first ``bands * rows``
    values in bands of ``rows`` (a MinHash signature may be longer); without, all of
    ``values`` in ``bands`` contiguous bands whose sizes differ by at most one (the
    first ``len % bands`` one value longer)."""
    values = np.asarray(values)
    if rows is not None:
        values = values[: bands * rows]
    parts = np.array_split(values, bands)
    if values.dtype == np.bool_:
        return [f"{i}:{_bits_value(part):x}" for i, part in enumerate(parts)]
    return [f"{i}:{_digest(part)}" for i, part in enumerate(parts)]


def hex_bits(value: str) -> np.ndarray:
    """The bits of a hex-encoded hash, most significant first (4 per hex digit)."""
    return np.array([bit == "1" for bit in format(int(value, 16), f"0{4 * len(value)}b")], dtype=np.bool_)


def _bits_value(bits: np.ndarray) -> int:
    value = 0
    for bit in bits.tolist():
        value = (value << 1) | bit
    return value


def _digest(part: np.ndarray) -> str:
    raw = np.ascontiguousarray(part, dtype="<u4").tobytes()
    return hashlib.blake2b(raw, digest_size=8).hexdigest()
