import random

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from mmcurate.filters.quality import normalize_text, probabilities
from mmcurate.filters.translationese import LinearTextModel, abstract_tokens, features, most_frequent_words

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


def _fit(texts, labels, families, words=frozenset()):
    vectorizer = TfidfVectorizer(analyzer=lambda t: list(features(t, families, words).elements()), min_df=2,
                                 sublinear_tf=True, max_features=5000)
    matrix = vectorizer.fit_transform(texts)
    classifier = LogisticRegression(C=10, class_weight="balanced", max_iter=2000).fit(matrix, labels)
    model = LinearTextModel(vectorizer.get_feature_names_out(), vectorizer.idf_, classifier.coef_[0],
                            classifier.intercept_[0], families, words)
    return model, vectorizer, classifier


@pytest.mark.parametrize("families", [("w",), ("w", "b"), ("w", "b", "f")])
def test_linear_model_scores_exactly_as_scikit_learn(families):
    texts, labels = _corpus()
    words = most_frequent_words(texts, 20) if "f" in families else frozenset()
    model, vectorizer, classifier = _fit(texts[:200], labels[:200], families, words)
    held_out = texts[200:] + ["", "zzz unknown words only"]
    expected = classifier.predict_proba(vectorizer.transform(held_out))[:, 1]
    np.testing.assert_allclose(model.probabilities(held_out), expected, rtol=0, atol=1e-9)
    # a text with no known feature scores the intercept alone
    assert model.decisions([""])[0] == pytest.approx(classifier.intercept_[0])
    # and the model separates the two styles it was trained on
    scores = np.asarray(probabilities(model, texts[200:]))
    y = np.asarray(labels[200:], dtype=bool)
    assert scores[y].mean() > 0.6 > 0.4 > scores[~y].mean()


def test_arrays_round_trip_to_the_same_scores():
    texts, labels = _corpus(200)
    words = most_frequent_words(texts, 15)
    model, *_ = _fit(texts, labels, ("w", "b", "f"), words)
    again = LinearTextModel.from_arrays(model.to_arrays())
    assert again.families == model.families and again.function_words == model.function_words
    np.testing.assert_allclose(again.probabilities(texts), model.probabilities(texts), atol=1e-6)  # float32 storage


def test_function_word_trigrams_abstract_content_words_in_any_script():
    words = frozenset({"the", "of", "的", "了"})
    tokens = normalize_text("The harbour of Sévigné, 1788: 北 京 的 港 口 了").split()
    assert abstract_tokens(tokens, words) == ["the", "<l>", "of", "<l>", ",", "<d>", ":", "<s>", "<s>", "的", "<s>", "<s>", "了"]
    counts = features(" ".join(tokens), ("f",), words)
    assert counts["f:the <l> of"] == 1 and all(k.startswith("f:") for k in counts)


def test_most_frequent_words_skip_punctuation_and_digits():
    texts = ["the cat , 12 .", "the dog , 7 .", "a cat ."]
    assert most_frequent_words(texts, 2) == {"the", "cat"}


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="unknown feature families"):
        LinearTextModel(["w:a"], [1.0], [1.0], 0.0, ["w", "x"])
