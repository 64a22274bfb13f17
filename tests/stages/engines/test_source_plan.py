"""The planner's records and heaps without Beam."""

import random

from mmcurate.filters.bandit import Candidate
from mmcurate.stages.engines.plan_index import IndexRow, contains, sorted_unique
from mmcurate.stages.engines.source_plan import ALL, PageRead, best_lists, heap_candidates, observation, push_best, summary_path


def _candidate(score, url):
    return Candidate(score, 0.5, "example.org", "example.org", url, "en", "en", "text/html", "f.warc.gz", 0, 10, 0.1, 0)


def test_heaps_keep_the_best_of_each_tag_whatever_the_order_and_merging():
    cands = [_candidate(i / 100, f"https://example.org/{i}") for i in range(100)]
    random.Random(0).shuffle(cands)
    halves = [{}, {}]
    for i, c in enumerate(cands):
        push_best(halves[i % 2], ALL, c, 5)
    merged = halves[0]
    for c in heap_candidates(halves[1][ALL]):
        push_best(merged, ALL, c, 5)
    assert [c.score for c in best_lists(merged)[ALL]] == [0.99, 0.98, 0.97, 0.96, 0.95]


def test_observation_takes_the_best_outcome_and_the_index_features():
    pages = [PageRead(1, "https://a.example.org/x", False, True, 0), PageRead(1, "https://a.example.org/x", True, True, 3)]
    row = IndexRow("https://a.example.org/x", "a.example.org", "example.org", "en", "eng", "text/html", 200,
                   "f.warc.gz", 5, 10, ("tld:org",))
    obs = observation(pages, [row])
    assert (obs.domain, obs.host, obs.features, obs.success, obs.images) == ("example.org", "a.example.org", ("tld:org",), True, 3)
    # no index row: features from the URL; no page: no observation
    assert observation(pages, []).domain == "example.org"
    assert observation([], [row]) is None


def test_sorted_hash_lookup_and_summary_path():
    keys = sorted_unique([5, 3, 5, 9])
    assert keys.tolist() == [3, 5, 9]
    assert contains(keys, sorted_unique([1, 3, 10])).tolist() == [False, True, False]
    assert contains(sorted_unique([]), keys).tolist() == [False, False, False]
    assert summary_path("out/pointers.parquet") == "out/pointers.summary.json"
