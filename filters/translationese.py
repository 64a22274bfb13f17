"""Machine-translation detection features and the linear model that scores them.

Pure functions over normalised text (``filters.quality.normalize_text``): no I/O.
The stage loads a model file (``stages/quality_models/mt/LANG.npz``) once per worker and
calls ``LinearTextModel.probabilities``; ``mmcurate train mt`` fits one from the
same ``features``, so training and scoring see one representation.

Features, by family (each a string key; the model's vocabulary decides which count):

- ``w:``  word unigrams and ``b:`` word bigrams of the normalised text (CJK
  characters are words). The baseline of MT detection (Aharoni et al. 2014,
  "Automatic Detection of Machine Translated Text and Translation Quality
  Estimation"; Arase & Zhou 2013) and, in our held-out measurements, the family that
  carries most across source languages once it is a sublinear tf-idf logistic
  regression rather than a 16-dimensional fastText embedding bag.
- ``f:`` function-word trigrams: every token that is not among the language's most
  frequent words (``function_words``, chosen at training time by document
  frequency) is replaced by its shape (punctuation kept, digits ``<d>``, words by
  length class). Function words and part-of-speech-like n-grams are the
  translationese markers that transfer across source languages and topics in
  Volansky, Ordan & Wintner 2015 ("On the features of translationese") and
  Rabinovich & Wintner 2015.

Whether a family is used is the model's choice (``families``), so a model trained
without one scores without it. docs/stages.md ("Quality and implicit duplicates") records
which families the held-out numbers kept.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import repeat
from typing import Iterable, Mapping, Sequence

import numpy as np

FAMILIES = ("w", "b", "f")

_PUNCT = re.compile(r"^[^\w\s]$")


def _shape(token: str) -> str:
    if _PUNCT.match(token):
        return token
    if token.isdigit():
        return "<d>"
    n = len(token)
    return "<s>" if n <= 3 else "<m>" if n <= 6 else "<l>"


def abstract_tokens(tokens: Sequence[str], function_words: frozenset[str]) -> list[str]:
    """Tokens with every word outside ``function_words`` replaced by its shape."""
    return [t if t in function_words else _shape(t) for t in tokens]


def features(normalized: str, families: Sequence[str], function_words: frozenset[str] = frozenset()) -> Counter:
    """Feature counts of one normalised text (see the module docstring)."""
    tokens = normalized.split()
    counts: Counter = Counter()
    if "w" in families:
        counts.update("w:" + t for t in tokens)
    if "b" in families:
        counts.update(f"b:{a} {b}" for a, b in zip(tokens, tokens[1:]))
    if "f" in families:
        abstract = abstract_tokens(tokens, function_words)
        counts.update(f"f:{a} {b} {c}" for a, b, c in zip(abstract, abstract[1:], abstract[2:]))
    return counts


def most_frequent_words(texts: Iterable[str], k: int) -> frozenset[str]:
    """The ``k`` words (punctuation and digits aside) in the most texts: a language's
    function words when the texts are many and varied."""
    df: Counter = Counter()
    for text in texts:
        df.update({t for t in text.split() if not _PUNCT.match(t) and not t.isdigit()})
    return frozenset(w for w, _ in df.most_common(k))


class LinearTextModel:
    """A logistic regression over sublinear tf-idf features, L2-normalised per text
    (scikit-learn's ``TfidfVectorizer(sublinear_tf=True)`` then
    ``LogisticRegression``, evaluated here without scikit-learn: one dictionary
    lookup per feature)."""

    def __init__(
        self,
        terms: Sequence[str],
        idf: Sequence[float],
        coef: Sequence[float],
        intercept: float,
        families: Sequence[str],
        function_words: Iterable[str] = (),
    ):
        if not len(terms) == len(idf) == len(coef):
            raise ValueError("terms, idf and coef differ in length")
        unknown = set(families) - set(FAMILIES)
        if unknown:
            raise ValueError(f"unknown feature families: {sorted(unknown)}")
        self.terms = list(terms)
        self.idf = np.asarray(idf, dtype=np.float64)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.intercept = float(intercept)
        self.families = tuple(families)
        self.function_words = frozenset(function_words)
        self._index()

    def _index(self) -> None:
        """Integer keys for every feature, so a batch is scored with array operations:
        words get ids (``vocab``), a bigram is ``id1 * V + id2``, a function-word
        trigram the same over the ids of abstract tokens (``abstract``)."""
        split = [(t.partition(":")[0], t.partition(":")[2].split(" ")) for t in self.terms]
        words = sorted({w for family, key in split if family in "wb" for w in key} | self.function_words)
        self.vocab = {w: i for i, w in enumerate(words)}
        symbols = sorted({w for family, key in split if family == "f" for w in key})
        self.abstract = {w: i for i, w in enumerate(symbols)}
        v, a = max(len(words), 1), max(len(symbols), 1)
        self._unigram = np.full(v, -1, dtype=np.int64)
        bigrams, trigrams = {}, {}
        for column, (family, key) in enumerate(split):
            if family == "w":
                self._unigram[self.vocab[key[0]]] = column
            elif family == "b":
                bigrams[self.vocab[key[0]] * v + self.vocab[key[1]]] = column
            else:
                trigrams[(self.abstract[key[0]] * a + self.abstract[key[1]]) * a + self.abstract[key[2]]] = column
        self._bigrams, self._trigrams = _sorted_table(bigrams), _sorted_table(trigrams)
        # the abstract token of every known word: itself if a function word, else its shape
        self._abstract_of = np.asarray(
            [self.abstract.get(w if w in self.function_words else _shape(w), -1) for w in words] or [-1], dtype=np.int64
        )
        self._v, self._a = v, a

    def decisions(self, normalized: Sequence[str]) -> np.ndarray:
        """The model's log-odds for each normalised text (the intercept when no feature is known)."""
        n = len(normalized)
        out = np.full(n, self.intercept)
        if not n:
            return out
        # normalised text is tokens joined by single spaces: one split for the batch,
        # and each text's token count is its spaces plus one
        flat = " ".join(normalized).split()
        lengths = [text.count(" ") + 1 if text else 0 for text in normalized]
        if len(flat) != sum(lengths):  # not normalize_text output: count token by token
            lengths = [len(text.split()) for text in normalized]
        ids = np.fromiter(map(self.vocab.get, flat, repeat(-1)), dtype=np.int64, count=len(flat))
        doc = np.repeat(np.arange(n), lengths)
        docs, cols = [], []
        if "w" in self.families:
            col = np.where(ids >= 0, self._unigram[ids], -1)
            docs.append(doc[col >= 0])
            cols.append(col[col >= 0])
        if "b" in self.families:
            same = doc[1:] == doc[:-1]
            ok = same & (ids[:-1] >= 0) & (ids[1:] >= 0)
            d, c = _lookup(ids[:-1][ok] * self._v + ids[1:][ok], self._bigrams, doc[1:][ok])
            docs.append(d)
            cols.append(c)
        if "f" in self.families:
            abstract = np.where(ids >= 0, self._abstract_of[ids], -1)
            unknown = np.nonzero(ids < 0)[0]
            if len(unknown):
                abstract[unknown] = [self.abstract.get(_shape(flat[i]), -1) for i in unknown]
            same = (doc[2:] == doc[:-2])
            x, y, z = abstract[:-2], abstract[1:-1], abstract[2:]
            ok = same & (x >= 0) & (y >= 0) & (z >= 0)
            keys = (x[ok] * self._a + y[ok]) * self._a + z[ok]
            d, c = _lookup(keys, self._trigrams, doc[2:][ok])
            docs.append(d)
            cols.append(c)
        doc_all, col_all = np.concatenate(docs), np.concatenate(cols)
        if not len(col_all):
            return out
        pairs, tf = np.unique(doc_all * len(self.terms) + col_all, return_counts=True)
        owner, column = pairs // len(self.terms), pairs % len(self.terms)
        value = (1.0 + np.log(tf)) * self.idf[column]
        dot = np.bincount(owner, value * self.coef[column], minlength=n)
        norm = np.sqrt(np.bincount(owner, value * value, minlength=n))
        return out + np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0)

    def probabilities(self, normalized: Sequence[str]) -> list[float]:
        """P(positive class) for each normalised text."""
        z = np.clip(self.decisions(normalized), -700, 700)
        return (1.0 / (1.0 + np.exp(-z))).tolist()

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays ``from_arrays`` reads back (written with ``numpy.savez_compressed``)."""
        return {
            "terms": _pack("\n".join(self.terms)),
            "idf": self.idf.astype(np.float32),
            "coef": self.coef.astype(np.float32),
            "intercept": np.asarray([self.intercept], dtype=np.float64),
            "families": _pack(" ".join(self.families)),
            "function_words": _pack("\n".join(sorted(self.function_words))),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "LinearTextModel":
        terms = _unpack(arrays["terms"])
        words = _unpack(arrays["function_words"])
        return cls(
            terms=terms.split("\n") if terms else [],
            idf=arrays["idf"].tolist(),
            coef=arrays["coef"].tolist(),
            intercept=float(arrays["intercept"][0]),
            families=_unpack(arrays["families"]).split(),
            function_words=words.split("\n") if words else (),
        )


def _sorted_table(table: Mapping[int, int]) -> tuple[np.ndarray, np.ndarray]:
    keys = np.asarray(sorted(table), dtype=np.int64)
    return keys, np.asarray([table[k] for k in keys.tolist()], dtype=np.int64)


def _lookup(keys: np.ndarray, table: tuple[np.ndarray, np.ndarray], owners: np.ndarray):
    """(owners, columns) of the integer ``keys`` found in a sorted (keys, columns) table."""
    table_keys, table_cols = table
    if not len(table_keys) or not len(keys):
        return owners[:0], keys[:0]
    pos = np.minimum(np.searchsorted(table_keys, keys), len(table_keys) - 1)
    hit = table_keys[pos] == keys
    return owners[hit], table_cols[pos[hit]]


def _pack(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _unpack(array: np.ndarray) -> str:
    return bytes(np.asarray(array, dtype=np.uint8)).decode("utf-8")
