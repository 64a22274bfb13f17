"""The source planner's features and bandit (filters.sources, filters.bandit): no Beam."""

import math

import pytest

from mmcurate.filters.bandit import (
    BanditParams,
    Candidate,
    Observation,
    YieldModel,
    YieldStats,
    domain_cap,
    domain_limit,
    quota_counts,
    select,
    summarise,
)
from mmcurate.filters.sources import (
    feature_keys,
    first_language,
    host_of,
    key_hash,
    normalise_language,
    path_words,
    pointer_key,
    registered_domain,
    unit_hash,
)


def obs(domain, host, success, features=(), images=None):
    return Observation(domain, host, tuple(features), success, success, images if images is not None else int(success) * 3)


def stats_of(observations):
    s = YieldStats()
    for o in observations:
        s.add(o)
    return s


def cand(domain, url, score, lang="en", pages=10, host=None, offset=None):
    return Candidate(
        score=score, tie=0.5, domain=domain, host=host or f"www.{domain}", url=url, language=lang,
        content_languages="", mime="text/html", warc_filename="a.warc.gz",
        offset=offset if offset is not None else abs(hash(url)) % 10**9, length=100, mean=score, domain_pages=pages,
    )


# -- features -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code, want",
    [("eng", "en"), ("deu", "de"), ("jpn", "ja"), ("zho", "zh"), ("ceb", "ceb"), ("de", "de"), ("pt_BR", "pt"),
     ("zh-Hant", "zh"), ("", ""), (None, "")],
)
def test_language_codes_of_the_index_and_of_fasttext_meet(code, want):
    assert normalise_language(code) == want


def test_first_detected_language_of_the_index():
    assert first_language("jpn,eng") == "ja"
    assert first_language("") == ""


def test_registered_domain_by_the_public_suffix_list():
    assert registered_domain("www.bbc.co.uk") == "bbc.co.uk"
    assert registered_domain("a.b.example.com") == "example.com"
    assert registered_domain("127.0.0.1") == "127.0.0.1"
    assert host_of("https://WWW.Example.com:8080/x") == "www.example.com"


def test_path_words_keep_words_that_generalise():
    assert path_words("/Recipes/easy-bread-2/index.html") == ["recipes", "easy", "bread"]
    assert path_words("/wiki/Ünïcode_страница") == ["wiki", "ünïcode", "страница"]
    assert path_words("/2024/05/12345") == []
    assert feature_keys("de", "de", "text/html", ["gallery"]) == ["tld:de", "lang:de", "mime:text/html", "path:gallery"]


def test_a_pointer_is_the_same_whatever_prefix_the_run_read_it_under():
    rel = pointer_key("crawl-data/CC-MAIN-2024-22/segments/1/warc/CC-MAIN-x-00001.warc.gz", 1234)
    full = pointer_key("s3://commoncrawl/crawl-data/CC-MAIN-2024-22/segments/1/warc/CC-MAIN-x-00001.warc.gz", 1234)
    assert rel == full and key_hash(rel) == key_hash(full)
    assert key_hash(pointer_key("x.warc.gz", 1)) != key_hash(pointer_key("x.warc.gz", 2))


def test_unit_hash_is_seeded_and_in_the_open_interval():
    values = [unit_hash(s, "host", "a.example") for s in range(200)]
    assert all(0.0 < v < 1.0 for v in values)
    assert unit_hash(3, "x") == unit_hash(3, "x") and len(set(values)) == 200
    assert 0.4 < sum(values) / len(values) < 0.6


# -- statistics and posteriors ----------------------------------------------------------


def test_stats_merge_equals_counting_everything_once():
    data = [obs("a.com", "www.a.com", True, ["tld:com"]), obs("a.com", "blog.a.com", False, ["tld:com"]),
            obs("b.de", "b.de", True, ["tld:de", "path:gallery"])]
    whole = stats_of(data)
    merged = stats_of(data[:1]).merge(stats_of(data[1:]))
    assert merged == whole
    assert whole.domains["a.com"] == [2, 1, 1, 3, 0, 0] and whole.hosts["blog.a.com"] == [1, 0]
    assert whole.features["tld:com"] == [2, 1] and (whole.pages, whole.successes) == (3, 2)


def test_features_move_the_prior_of_hosts_never_read():
    data = [obs(f"g{i}.com", f"g{i}.com", i % 5 != 0, ["path:gallery"]) for i in range(40)]
    data += [obs(f"n{i}.com", f"n{i}.com", i % 10 == 0, ["path:news"]) for i in range(40)]
    model = YieldModel(stats_of(data))
    assert model.p0 == pytest.approx((32 + 4 + 1) / (80 + 2))
    gallery, news, unknown = model.prior(["path:gallery"]), model.prior(["path:news"]), model.prior(["path:recipes"])
    assert gallery > unknown > news
    assert unknown == pytest.approx(model.p0)


def test_host_posterior_counts_its_own_pages_and_its_domains_at_a_weight():
    data = [obs("a.com", "www.a.com", True)] * 6 + [obs("a.com", "www.a.com", False)] * 4
    data += [obs("a.com", "shop.a.com", False)] * 10
    model = YieldModel(stats_of(data), BanditParams(prior_strength=2.0, domain_weight=0.5))
    a, b = model.posterior("a.com", "www.a.com", 0.5)
    assert (a, b) == pytest.approx((1 + 6 + 0, 1 + 4 + 0.5 * 10))
    a, b = model.posterior("a.com", "new.a.com", 0.5)  # a host never read: its domain's pages at half weight
    assert (a, b) == pytest.approx((1 + 0.5 * 6, 1 + 0.5 * 14))
    assert model.posterior("z.org", "z.org", 0.2) == pytest.approx((0.4, 1.6))


def test_thompson_scores_are_seeded_per_host_and_follow_the_evidence():
    data = [obs("good.com", "good.com", True)] * 30 + [obs("bad.com", "bad.com", False)] * 30
    stats = stats_of(data)
    runs = []
    for seed in (0, 1, 2):
        model = YieldModel(stats, BanditParams(seed=seed))
        scores, means = model.scores(["good.com", "good.com", "bad.com"], ["good.com", "good.com", "bad.com"], [(), (), ()])
        runs.append(scores.tolist())
        assert scores[0] == scores[1]  # one draw per host
        assert scores[0] > 0.8 and scores[2] < 0.2 and means[0] > means[2]
    again = YieldModel(stats, BanditParams(seed=0)).scores(["good.com"], ["good.com"], [()])[0]
    assert again[0] == runs[0][0]
    assert len({r[0] for r in runs}) == 3  # other seeds, other draws


# -- caps, quotas, selection ------------------------------------------------------------------


def test_domain_cap_and_probe_limits():
    assert domain_cap(1000, 0, 0.02) == 20
    assert domain_cap(10, 0, 0.02) == 1
    assert domain_cap(1000, 7, 0.02) == 7
    assert domain_limit(20, 0, 5, 2.0) == 5
    assert domain_limit(20, 4, 5, 2.0) == 8
    assert domain_limit(20, 50, 5, 2.0) == 20
    assert domain_limit(20, 0, 0, 2.0) == 20
    assert quota_counts(100, {"ja": 0.1, "de": 0.15}) == {"de": 15, "ja": 10}


def test_select_fills_quotas_first_then_the_best_under_the_cap():
    overall = [cand("a.com", f"https://a.com/{i}", 0.9 - i * 0.01) for i in range(10)]
    overall += [cand("b.com", f"https://b.com/{i}", 0.5 - i * 0.01) for i in range(10)]
    german = [cand("c.de", f"https://c.de/{i}", 0.1 - i * 0.001, lang="de") for i in range(10)]
    chosen = select(overall + german, {"de": german}, budget=10, cap=4, quotas={"de": 3})
    assert [c.url for c in chosen] == (
        [f"https://a.com/{i}" for i in range(4)] + [f"https://b.com/{i}" for i in range(3)]
        + [f"https://c.de/{i}" for i in range(3)]
    )  # the quota's 3 German rows first, then the best 7 with at most 4 per domain
    chosen = select(overall + german, {"de": german}, budget=10, cap=4, quotas={"de": 3}, probe_pages=2, growth=2.0)
    assert max(sum(c.domain == d for c in chosen) for d in ("a.com", "b.com", "c.de")) == 4
    unread = [cand("new.com", f"https://new.com/{i}", 0.99, pages=0) for i in range(5)]
    chosen = select(unread + overall, {}, budget=6, cap=4, quotas={}, probe_pages=2, growth=2.0)
    assert [c.domain for c in chosen] == ["new.com", "new.com", "a.com", "a.com", "a.com", "a.com"]


def test_select_never_takes_one_url_twice():
    dupes = [cand("a.com", "https://a.com/x", 0.9, offset=1), cand("a.com", "https://a.com/x", 0.8, offset=2)]
    assert len(select(dupes, {}, budget=5, cap=5, quotas={})) == 1


def test_summary_says_quotas_met_and_exploration():
    chosen = [cand("a.com", "https://a.com/1", 0.8, pages=0), cand("b.de", "https://b.de/1", 0.4, lang="de", pages=3)]
    summary = summarise(chosen, YieldStats(), 4, 2, {"de": 1, "ja": 1}, {"de": 0.25, "ja": 0.25})
    assert summary["languages"]["de"]["met"] and not summary["languages"]["ja"]["met"]
    assert summary["exploration_share"] == 0.5 and summary["selected"] == 2
    assert summary["expected_successes"] == pytest.approx(1.2)
    assert math.isclose(summary["expected_yield"], 0.6)
