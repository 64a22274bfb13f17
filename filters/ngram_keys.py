"""Integer keys of word and character n-grams, for the repetition measures (Gopher's
and OBELICS's rules): words and characters numbered, then a polynomial rolling hash
of each n-gram, computed with numpy."""

from __future__ import annotations

import numpy as np

# n-gram keys for the repetition measures: a polynomial rolling hash over 64-bit
# integers (wrapping), computed with numpy. Two distinct n-grams collide with
# probability about 2**-64 per pair, which cannot move a ratio measurably.
_HASH_BASE = np.uint64(0x9E3779B97F4A7C15)


def ngram_hashes(ids: "np.ndarray", n: int) -> "np.ndarray":
    """One uint64 key per n-gram of the integer sequence ``ids`` (len(ids) - n + 1 keys)."""
    count = len(ids) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    keys = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            keys = keys * _HASH_BASE + ids[j : j + count]
    return keys


class NgramHashes:
    """``ngram_hashes(ids, n)`` for the sizes a rule asks, in increasing order, each
    made from the last: an (n+1)-gram's key is its first n-gram's key times the base
    plus its last id, the same wrapping arithmetic as ``ngram_hashes``, so the same
    keys (a smaller size than the last is made from scratch)."""

    def __init__(self, ids: "np.ndarray"):
        self.ids = ids
        self._n = 0
        self._keys = np.zeros(len(ids) + 1, dtype=np.uint64)

    def __call__(self, n: int) -> "np.ndarray":
        if n < self._n:
            return ngram_hashes(self.ids, n)
        keys, ids = self._keys, self.ids
        with np.errstate(over="ignore"):
            for j in range(self._n, n):
                count = max(len(ids) - j, 0)
                keys = keys[:count] * _HASH_BASE + ids[j : j + count]
        self._n, self._keys = n, keys
        return keys


def char_ids(text: str) -> "np.ndarray":
    """Code points of ``text`` as uint64, shifted so no character is 0."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64) + np.uint64(1)


def token_ids(words: list[str]) -> "np.ndarray":
    """Each distinct word as a small integer (from 1), in order."""
    index = {word: i for i, word in enumerate(dict.fromkeys(words), 1)}  # by first occurrence
    return np.fromiter(map(index.__getitem__, words), dtype=np.uint64, count=len(words))
