"""The n-gram keys of the repetition measures (filters/ngram_keys.py)."""

import random

import numpy as np

from mmcurate.filters.ngram_keys import NgramHashes, ngram_hashes, token_ids


def test_ngram_hashes_made_one_size_from_the_last_are_ngram_hashes():
    rng = random.Random(1)
    for length in (0, 1, 2, 3, 5, 11, 300):
        ids = token_ids([rng.choice("abcdefgh") for _ in range(length)])
        made = NgramHashes(ids)
        for n in (1, 2, 3, 4, 5, 7, 10, 12, 3, 11):  # a smaller size again, and past the end
            keys = made(n)
            assert keys.dtype == np.uint64 and np.array_equal(keys, ngram_hashes(ids, n)), (length, n)
            assert len(keys) == max(length - n + 1, 0)


def test_token_ids_number_words_by_first_occurrence_from_one():
    assert token_ids(["b", "a", "b", "c", "a"]).tolist() == [1, 2, 1, 3, 2]
    assert token_ids([]).tolist() == []


def test_equal_ngrams_share_a_key_and_different_ones_do_not():
    ids = token_ids("the cat sat on the cat sat".split())
    keys = ngram_hashes(ids, 3).tolist()
    assert keys[0] == keys[4]  # "the cat sat" twice
    assert len(set(keys)) == 4
