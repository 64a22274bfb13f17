import random

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.linear_model import LogisticRegression

from mmcurate.filters.quality import normalize_text, probabilities
from mmcurate.filters.token_hashes import feature_buckets, token_hashes
from mmcurate.filters.translationese import LinearTextModel, count_matrix

FUNCTION = "the a of and to in is was for on with as by at from that this it".split()
CONTENT = ("harbour village river council mayor bridge station railway museum century trade salt merchants ships "
           "winter harvest festival school library market").split()
# Two styles of the same content: one that prefers "which" clauses and commas, one
# that prefers "that" and full stops; both share the topic words.
STYLE = {1: ["which", ","], 0: ["that", "."]}


def _text(rng: random.Random, label: int, sentences: int = 10) -> str:
    out = []
    for _ in range(sentences):
        words = [rng.choice(FUNCTION if rng.random() < 0.5 else CONTENT) for _ in range(rng.randint(8, 20))]
        if rng.random() < 0.6:
            words.insert(rng.randint(1, len(words) - 1), rng.choice(STYLE[label]))
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def _corpus(n: int = 300, seed: int = 5):
    rng = random.Random(seed)
    labels = [i % 2 for i in range(n)]
    return [normalize_text(_text(rng, y)) for y in labels], labels


def _fit(texts, labels, families, bits=16):
    counts = count_matrix(texts, families, bits)
    buckets = np.flatnonzero(np.bincount(counts.indices, minlength=2**bits) >= 2)
    tfidf = TfidfTransformer(sublinear_tf=True)
    classifier = LogisticRegression(C=10, class_weight="balanced", max_iter=2000)
    classifier.fit(tfidf.fit_transform(counts[:, buckets]), labels)
    model = LinearTextModel(buckets, tfidf.idf_, classifier.coef_[0], classifier.intercept_[0], families, bits)
    return model, (lambda held: tfidf.transform(count_matrix(held, families, bits)[:, buckets])), classifier


@pytest.mark.parametrize("families", [("w",), ("w", "b")])
def test_linear_model_scores_exactly_as_scikit_learn(families):
    texts, labels = _corpus()
    model, transform, classifier = _fit(texts[:200], labels[:200], families)
    held_out = texts[200:] + ["", "zzz unknown words only"]
    expected = classifier.predict_proba(transform(held_out))[:, 1]
    np.testing.assert_allclose(model.probabilities(held_out), expected, rtol=0, atol=1e-9)
    # a text with no known feature scores the intercept alone
    assert model.decisions([""])[0] == pytest.approx(classifier.intercept_[0])
    assert model.decisions(["zzz qqq"])[0] == pytest.approx(classifier.intercept_[0])
    # and the model separates the two styles it was trained on
    scores = np.asarray(probabilities(model, texts[200:]))
    y = np.asarray(labels[200:], dtype=bool)
    assert scores[y].mean() > 0.6 > 0.4 > scores[~y].mean()


def test_arrays_round_trip_to_the_same_scores():
    texts, labels = _corpus(200)
    model, *_ = _fit(texts, labels, ("w", "b"))
    again = LinearTextModel.from_arrays(model.to_arrays())
    assert again.families == model.families and again.bits == model.bits
    np.testing.assert_array_equal(again.buckets, model.buckets)
    np.testing.assert_allclose(again.probabilities(texts), model.probabilities(texts), atol=1e-6)  # float32 storage


def test_token_hashes_are_one_per_token_and_the_same_wherever_the_token_stands():
    hashes, lengths = token_hashes(["the cat sat", "", "cat ,", "北 京"])
    assert lengths.tolist() == [3, 0, 2, 2]
    assert len(hashes) == 7 and len(set(hashes.tolist())) == 6  # "cat" twice
    assert hashes[1] == hashes[3]
    # fixed values: the model files depend on them, on every platform and in every process
    assert token_hashes(["the"])[0].tolist() == token_hashes(["a the"])[0].tolist()[1:]
    assert int(token_hashes(["the"])[0][0]) == 6699269138692645401
    # distinct tokens of a real vocabulary get distinct hashes
    words = [f"w{i}" for i in range(20000)] + ["é", "e\u0301", "ß", "ss", "日本"]
    assert len(set(token_hashes(words)[0].tolist())) == len(words)


def test_feature_buckets_keep_bigrams_inside_one_text_and_families_apart():
    owners, buckets = feature_buckets(["a b", "c"], ("w", "b"), 20)
    assert owners.tolist() == [0, 0, 1, 0]  # words a, b, c, then the one bigram "a b" ("b c" spans two texts)
    w_only = feature_buckets(["a b", "c"], ("w",), 20)[1]
    assert buckets[:3].tolist() == w_only.tolist() and buckets[3] not in w_only
    assert buckets.max() < 2**20


def test_unknown_family_and_bad_bucket_are_refused():
    with pytest.raises(ValueError, match="unknown feature families"):
        LinearTextModel([1], [1.0], [1.0], 0.0, ["w", "f"], 8)
    with pytest.raises(ValueError, match="outside"):
        LinearTextModel([256], [1.0], [1.0], 0.0, ["w"], 8)
