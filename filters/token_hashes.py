"""Stable 64-bit hashes of the tokens of normalised text, and their feature buckets,
computed with array operations for a whole batch at once.

Normalised text (``filters.quality.normalize_text``) is tokens joined by single
spaces, so a batch is one UTF-8 byte array and a token is the run of bytes between
two spaces. A token's hash is a polynomial over its bytes modulo 2**64 (prefix sums
of ``(byte + 1) * P**i``, shifted to the token's start by the inverse power), then
mixed with splitmix64's finaliser: the same value in every process and on every
platform (Python's ``hash`` of a string is salted per process). A word bigram's
hash mixes the two word hashes. A feature's bucket is the top ``bits`` bits of its
hash (the hashing trick: Weinberger et al. 2009, "Feature Hashing for Large Scale
Multitask Learning"), so a model needs no vocabulary of strings and scoring needs no
dictionary lookup.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

_P = np.uint64(0x100000001B3)  # the FNV-1 64-bit prime; odd, so invertible modulo 2**64
_P_INV = np.uint64(pow(0x100000001B3, -1, 2**64))
_BIGRAM = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's increment: a bigram's first word is multiplied by it
_FAMILY = {"w": np.uint64(0x243F6A8885A308D3), "b": np.uint64(0x13198A2E03707344)}  # pi's digits: one salt a family
FAMILIES = tuple(_FAMILY)

_powers = np.ones(1, dtype=np.uint64)
_inverse_powers = np.ones(1, dtype=np.uint64)


def _powers_up_to(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P**i and P**-i modulo 2**64 for i < n (grown once, kept for the process)."""
    global _powers, _inverse_powers
    if len(_powers) < n:
        size = max(n, 2 * len(_powers))
        with np.errstate(over="ignore"):
            _powers, _inverse_powers = np.full(size, _P, dtype=np.uint64), np.full(size, _P_INV, dtype=np.uint64)
            _powers[0] = _inverse_powers[0] = 1
            np.cumprod(_powers, dtype=np.uint64, out=_powers)
            np.cumprod(_inverse_powers, dtype=np.uint64, out=_inverse_powers)
    return _powers[:n], _inverse_powers[:n]


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (Steele, Lea & Flood 2014): every input bit reaches every output bit."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def token_hashes(normalized: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(hash of every token of the batch in order, uint64; token count of each text)."""
    lengths = np.asarray([text.count(" ") + 1 if text else 0 for text in normalized], dtype=np.int64)
    data = " ".join(text for text in normalized if text).encode("utf-8")
    if not data:
        return np.zeros(0, dtype=np.uint64), lengths
    raw = np.frombuffer(data, dtype=np.uint8)
    powers, inverse = _powers_up_to(len(raw) + 1)
    with np.errstate(over="ignore"):
        prefix = np.zeros(len(raw) + 1, dtype=np.uint64)
        np.cumsum((raw.astype(np.uint64) + np.uint64(1)) * powers[: len(raw)], dtype=np.uint64, out=prefix[1:])
        spaces = np.flatnonzero(raw == 32)
        starts = np.concatenate([np.zeros(1, dtype=np.int64), spaces + 1])
        ends = np.concatenate([spaces, np.full(1, len(raw), dtype=np.int64)])
        hashes = _mix((prefix[ends] - prefix[starts]) * inverse[starts] + ends.astype(np.uint64) - starts.astype(np.uint64))
    if len(hashes) != int(lengths.sum()):  # not normalize_text output (a double space): count as split() does
        lengths = np.asarray([len(text.split(" ")) if text else 0 for text in normalized], dtype=np.int64)
    return hashes, lengths


def feature_buckets(normalized: Sequence[str], families: Sequence[str], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(text index, bucket) of every feature occurrence of the batch: ``w`` word
    unigrams and ``b`` word bigrams within one text, each family salted apart."""
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown feature families: {sorted(unknown)}")
    hashes, lengths = token_hashes(normalized)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    shift = np.uint64(64 - bits)
    owners, buckets = [], []
    with np.errstate(over="ignore"):
        if "w" in families:
            owners.append(owner)
            buckets.append(_mix(hashes ^ _FAMILY["w"]) >> shift)
        if "b" in families and len(hashes) > 1:
            same = owner[1:] == owner[:-1]
            owners.append(owner[1:][same])
            buckets.append(_mix((hashes[:-1][same] * _BIGRAM + hashes[1:][same]) ^ _FAMILY["b"]) >> shift)
    if not owners:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(owners), np.concatenate(buckets).astype(np.int64)
