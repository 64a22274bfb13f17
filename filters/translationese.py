"""Machine-translation detection: the hashed linear model that scores normalised text.

Pure functions over normalised text (``filters.quality.normalize_text``): no I/O.
The stage loads a model file (``stages/quality_models/mt/LANG.npz``) once per worker and
calls ``LinearTextModel.probabilities``; ``mmcurate train mt`` fits one from the
same ``count_matrix``, so training and scoring see one representation.

Features (``filters.token_hashes``): ``w`` word unigrams and ``b`` word bigrams of
the normalised text (CJK characters are words), hashed into ``2**bits`` buckets.
Word n-grams are the baseline of MT detection (Aharoni et al. 2014, "Automatic
Detection of Machine Translated Text and Translation Quality Estimation"; Arase &
Zhou 2013) and, in our held-out measurements, the family that carries most across
source languages as a sublinear tf-idf logistic regression. The buckets replace a
vocabulary of strings: scoring is array arithmetic on the batch's bytes, with no
dictionary lookup per token, and every feature seen twice in training can be kept
without the model growing past ``2**bits`` weights. docs/stages.md ("Quality and
implicit duplicates") records what else was measured and not kept.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from mmcurate.filters.token_hashes import FAMILIES, feature_buckets


def count_matrix(normalized: Sequence[str], families: Sequence[str], bits: int):
    """Feature counts of each text, one row a text and one column a bucket (a scipy
    CSR matrix; scipy is imported here, for training, not by the stage that scores)."""
    from scipy import sparse

    owners, buckets = feature_buckets(normalized, families, bits)
    matrix = sparse.csr_matrix(
        (np.ones(len(owners), dtype=np.float64), (owners, buckets)), shape=(len(normalized), 2**bits)
    )
    matrix.sum_duplicates()
    return matrix


class LinearTextModel:
    """A logistic regression over sublinear tf-idf bucket features, L2-normalised per
    text: scikit-learn's ``TfidfTransformer(sublinear_tf=True)`` over the columns
    ``buckets`` of ``count_matrix``, then ``LogisticRegression``, evaluated here
    without scikit-learn."""

    def __init__(
        self,
        buckets: Sequence[int],
        idf: Sequence[float],
        coef: Sequence[float],
        intercept: float,
        families: Sequence[str],
        bits: int,
    ):
        if not len(buckets) == len(idf) == len(coef):
            raise ValueError("buckets, idf and coef differ in length")
        unknown = set(families) - set(FAMILIES)
        if unknown:
            raise ValueError(f"unknown feature families: {sorted(unknown)}")
        self.buckets = np.asarray(buckets, dtype=np.int64)
        if len(self.buckets) and (self.buckets.min() < 0 or self.buckets.max() >= 2**bits):
            raise ValueError(f"a bucket lies outside 0..2**{bits}")
        self.idf = np.asarray(idf, dtype=np.float64)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.intercept = float(intercept)
        self.families = tuple(families)
        self.bits = int(bits)
        # bucket -> column of idf/coef, -1 for a bucket the model does not weigh
        self._column = np.full(2**self.bits, -1, dtype=np.int64)
        self._column[self.buckets] = np.arange(len(self.buckets))

    def decisions(self, normalized: Sequence[str]) -> np.ndarray:
        """The model's log-odds for each normalised text (the intercept when no feature is known)."""
        n = len(normalized)
        out = np.full(n, self.intercept)
        if not n or not len(self.buckets):
            return out
        owners, buckets = feature_buckets(normalized, self.families, self.bits)
        columns = self._column[buckets]
        known = columns >= 0
        width = len(self.buckets)
        keys = owners[known] * width + columns[known]
        if not len(keys):
            return out
        if n * width < 2**31:  # a 32-bit sort is about twice as fast
            keys = keys.astype(np.int32)
        keys.sort()
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        tf = np.diff(np.append(starts, len(keys)))
        pairs = keys[starts].astype(np.int64)
        owner, column = pairs // width, pairs % width
        value = (1.0 + np.log(tf)) * self.idf[column]
        dot = np.bincount(owner, value * self.coef[column], minlength=n)
        norm = np.sqrt(np.bincount(owner, value * value, minlength=n))
        return out + np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0)

    def probabilities(self, normalized: Sequence[str]) -> list[float]:
        """P(positive class) for each normalised text."""
        z = np.clip(self.decisions(normalized), -700, 700)
        return (1.0 / (1.0 + np.exp(-z))).tolist()

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays ``from_arrays`` reads back (written with ``numpy.savez_compressed``;
        buckets as gaps, which compress to a byte or two each)."""
        return {
            "bucket_gaps": np.diff(self.buckets, prepend=0).astype(np.uint32),
            "idf": self.idf.astype(np.float32),
            "coef": self.coef.astype(np.float32),
            "intercept": np.asarray([self.intercept], dtype=np.float64),
            "families": _pack(" ".join(self.families)),
            "bits": np.asarray([self.bits], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "LinearTextModel":
        if "bucket_gaps" not in arrays:
            raise ValueError("not a hashed MT model (an older vocabulary model?): retrain it with `mmcurate train mt`")
        return cls(
            buckets=np.cumsum(arrays["bucket_gaps"].astype(np.int64)),
            idf=arrays["idf"],
            coef=arrays["coef"],
            intercept=float(arrays["intercept"][0]),
            families=_unpack(arrays["families"]).split(),
            bits=int(arrays["bits"][0]),
        )


def _pack(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _unpack(array: np.ndarray) -> str:
    return bytes(np.asarray(array, dtype=np.uint8)).decode("utf-8")
