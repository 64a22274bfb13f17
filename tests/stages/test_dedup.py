"""Stage dedup: URL, exact-text and near-duplicate dedup under TestPipeline, with the
survivor each dropped document's row names; chains; order and worker independence."""

import random

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import PROSE, make_doc
from mmcurate.filters import lsh, minhash, reasons
from mmcurate.pipeline.config import DedupConfig
from mmcurate.stages.connected_components import ConnectedComponents
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.engines.dedup_fingerprints import describe_lsh, rank_string

OTHER = "A different article about the mountain railway, its tunnels and the villages along the line."
THIRD = "The salt museum opens at ten; guided tours of the old evaporation pans start every hour."

DOCS = [
    make_doc("copy-late", PROSE, images=1, date="2024-06-01T00:00:00Z"),
    make_doc("original", PROSE, images=1, date="2024-01-01T00:00:00Z"),
    # Same text once case, whitespace and punctuation are folded.
    make_doc("copy-shouty", PROSE.upper().replace(",", "") + "  ", images=1, date="2024-03-01T00:00:00Z"),
    make_doc("bad-date", PROSE, images=1, date="not a date"),
    make_doc("other", OTHER, images=1),
    make_doc("notext-1", [], images=1),
    make_doc("notext-2", [], images=1),
]

_RNG = random.Random(7)
VOCAB = [f"w{i}" for i in range(3000)]
BASE = [_RNG.choice(VOCAB) for _ in range(400)]


def edited(words: list[str], start: int, count: int, seed: int) -> list[str]:
    """``words`` with ``count`` words from ``start`` replaced by fresh ones."""
    rng = random.Random(seed)
    out = list(words)
    for i in range(start, start + count):
        out[i] = f"x{seed}_{rng.randrange(10**6)}"
    return out


# A chain: each link replaces 12 more words (J ≈ 0.85 to the previous one), so the
# ends are far apart (J ≈ 0.4) and only the links join them.
CHAIN_WORDS = [BASE]
for step in range(1, 6):
    CHAIN_WORDS.append(edited(CHAIN_WORDS[-1], 60 * step, 12, seed=step))
CHAIN = [
    # chain-3 is the earliest capture, so it survives (default survivor order).
    make_doc(f"chain-{i}", " ".join(w), date=f"2024-0{9 - i if i != 3 else 1}-01T00:00:00Z")
    for i, w in enumerate(CHAIN_WORDS)
]
LONER = make_doc("loner", " ".join(_RNG.choice(VOCAB) for _ in range(400)))


URL_DOCS = [
    make_doc("old", "first version of the page", url="http://Example.org:80/page?b=2&a=1#top",
             date="2023-01-01T00:00:00Z"),
    make_doc("new", "second version, rewritten", url="https://example.org/page?a=1&b=2&utm_source=feed",
             date="2024-01-01T00:00:00Z"),
    # Same date as "new": the smaller doc_id wins the tie.
    make_doc("new-tie", "a third version", url="https://EXAMPLE.org/page?a=1&b=2&fbclid=x",
             date="2024-01-01T00:00:00Z"),
    make_doc("other-query", "another page", url="https://example.org/page?a=2&b=2"),
    # "a-old" is the earliest copy of THIRD but an older capture of a-new's URL: URL
    # dedup drops it first, so the text survivor is a-new, never a dropped document.
    make_doc("a-old", THIRD, url="https://example.org/a", date="2023-01-01T00:00:00Z"),
    make_doc("a-new", THIRD, url="https://example.org/a", date="2024-06-01T00:00:00Z"),
    make_doc("b", THIRD, url="https://example.org/b", date="2024-07-01T00:00:00Z"),
]

_JA_RNG = random.Random(5)
JA_TEXT = "".join(_JA_RNG.choice("日本語の文章を書くとき句読点や漢字仮名交じり文が使われる東京大阪京都") for _ in range(600))
# Two inserted characters: by character 5-grams a near duplicate (by words, the
# whole text would be a single unit).
JA_DOCS = [
    make_doc("ja-1", JA_TEXT, date="2024-01-01T00:00:00Z"),
    make_doc("ja-2", JA_TEXT[:300] + "追加" + JA_TEXT[300:], date="2024-02-01T00:00:00Z"),
]

SCENARIO = DOCS + CHAIN + [LONER] + URL_DOCS + JA_DOCS
SCENARIO_KEPT = ["original", "other", "notext-1", "notext-2", "chain-3", "loner", "new", "other-query", "a-new", "ja-1"]
SCENARIO_REJECTED = (
    [(d, reasons.DEDUP_EXACT_TEXT, "survivor=original") for d in ("copy-late", "copy-shouty", "bad-date")]
    + [(f"chain-{i}", reasons.DEDUP_NEAR_DUPLICATE, "survivor=chain-3") for i in (0, 1, 2, 4, 5)]
    + [(d, reasons.DEDUP_SAME_URL, "survivor=new") for d in ("old", "new-tie")]
    + [("a-old", reasons.DEDUP_SAME_URL, "survivor=a-new"), ("b", reasons.DEDUP_EXACT_TEXT, "survivor=a-new")]
    + [("ja-2", reasons.DEDUP_NEAR_DUPLICATE, "survivor=ja-1")]
)


def _ids(pcoll, label):
    return pcoll | label >> beam.Map(lambda d: d.doc_id)


def _rows(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: (r.doc_id, r.reason, r.detail.split(" ")[0]))


# Fewer component rounds than the default keep the pipelines small; the fixtures'
# clusters converge in 3 (and the union-find residual would finish them otherwise).
FAST = DedupConfig(cc_rounds=3)


def _run(docs, config=FAST, options=None, kept=None, rejected=None):
    p = TestPipeline(options=options) if options else TestPipeline()
    result = p | beam.Create(docs) | DedupDocuments(config)
    if kept is not None:
        assert_that(_ids(result.kept, "KeptIds"), equal_to(kept), label="kept")
    if rejected is not None:
        assert_that(_rows(result.rejected, "RejectedRows"), equal_to(rejected), label="rejected")
    assert_that(result.errors, equal_to([]), label="errors")
    return p, result


def test_url_exact_and_near_duplicates_name_their_survivors():
    p, result = _run(SCENARIO, DedupConfig(), kept=SCENARIO_KEPT, rejected=SCENARIO_REJECTED)
    # verified by default: the threshold is verify_threshold and the value the true Jaccard
    threshold = DedupConfig().verify_threshold
    assert_that(
        result.rejected
        | "Values" >> beam.Map(lambda r: (r.doc_id, r.stage, r.reason, 0.2 < r.value <= 1.0, r.threshold, r.detail)),
        equal_to(
            [(d, "dedup", reasons.DEDUP_EXACT_TEXT, True, 1.0, "survivor=original") for d in ("copy-late", "copy-shouty", "bad-date")]
            + [(d, "dedup", reasons.DEDUP_SAME_URL, True, 1.0, "survivor=new") for d in ("old", "new-tie")]
            + [("a-old", "dedup", reasons.DEDUP_SAME_URL, True, 1.0, "survivor=a-new"),
               ("b", "dedup", reasons.DEDUP_EXACT_TEXT, True, 1.0, "survivor=a-new")]
            + [(f"chain-{i}", "dedup", reasons.DEDUP_NEAR_DUPLICATE, True, threshold,
                "survivor=chain-3 jaccard=true") for i in (0, 1, 2, 4, 5)]
            + [("ja-2", "dedup", reasons.DEDUP_NEAR_DUPLICATE, True, threshold, "survivor=ja-1 jaccard=true")]
        ),
        label="values",
    )
    sizes = ("dedup.url_group_size", "dedup.exact_group_size", "dedup.near_cluster_size")
    assert_that(
        result.kept
        | "Sizes" >> beam.Map(lambda d: (d.doc_id, tuple(d.signals.get(k) for k in sizes)))
        | beam.Filter(lambda kv: any(kv[1])),
        equal_to([
            ("original", (None, 4.0, None)),
            ("chain-3", (None, None, 6.0)),
            ("new", (3.0, None, None)),
            ("a-new", (2.0, 2.0, None)),
            ("ja-1", (None, None, 2.0)),
        ]),
        label="group_sizes",
    )
    p.run().wait_until_finish()


def test_chain_fixture_is_a_chain_for_lsh():
    """The chain's ends share no LSH band: only the links can join them."""
    config = DedupConfig()
    hasher = minhash.MinHasher(config.num_perm, config.seed)

    def keys(doc):
        hv = minhash.shingle_hashes(minhash.shingles(doc.text, 5, 5, 0.5))
        return set(lsh.band_keys(hasher.signature(hv), config.bands, config.rows))

    k = [keys(d) for d in CHAIN]
    assert not k[0] & k[5]
    assert all(k[i] & k[i + 1] for i in range(5))


@pytest.mark.parametrize("order", ["reversed", pytest.param("shuffled", marks=pytest.mark.slow)])
def test_survivors_do_not_depend_on_input_order(order):
    docs = list(reversed(SCENARIO)) if order == "reversed" else random.Random(3).sample(SCENARIO, len(SCENARIO))
    p, _ = _run(docs, kept=SCENARIO_KEPT, rejected=SCENARIO_REJECTED)
    p.run().wait_until_finish()


@pytest.mark.slow
def test_survivors_with_two_worker_processes():
    options = PipelineOptions(["--direct_num_workers=2", "--direct_running_mode=multi_processing"])
    p, _ = _run(list(reversed(SCENARIO)), options=options, kept=SCENARIO_KEPT, rejected=SCENARIO_REJECTED)
    p.run().wait_until_finish()


@pytest.mark.slow
def test_survivor_prefers_the_quality_signal_then_the_earliest():
    docs = [d.with_signals({"quality_score": q}) for d, q in zip(CHAIN[:3], (0.2, 0.9, 0.5))] + CHAIN[3:]
    p, _ = _run(
        docs,
        kept=["chain-1"],
        rejected=[(f"chain-{i}", reasons.DEDUP_NEAR_DUPLICATE, "survivor=chain-1") for i in (0, 2, 3, 4, 5)],
    )
    p.run().wait_until_finish()


@pytest.mark.slow
def test_verify_drops_edges_below_the_true_jaccard():
    # Every link of the chain is below a true Jaccard of 0.95: nothing is dropped.
    p, _ = _run(CHAIN, DedupConfig(cc_rounds=3, verify=True, verify_threshold=0.95), kept=[d.doc_id for d in CHAIN], rejected=[])
    p.run().wait_until_finish()


def test_verified_rows_carry_the_true_jaccard_to_the_survivor():
    docs = CHAIN[2:5]
    p, result = _run(
        docs,
        DedupConfig(cc_rounds=3, verify=True, verify_threshold=0.7),
        kept=["chain-3"],
        rejected=[(f"chain-{i}", reasons.DEDUP_NEAR_DUPLICATE, "survivor=chain-3") for i in (2, 4)],
    )
    sets = {d.doc_id: minhash.shingle_hashes(minhash.shingles(d.text, 5, 5, 0.5)) for d in docs}
    expected = [
        (i, round(minhash.jaccard(sets[i], sets["chain-3"]), 4), 0.7, "jaccard=true") for i in ("chain-2", "chain-4")
    ]
    assert_that(
        result.rejected | "True" >> beam.Map(lambda r: (r.doc_id, r.value, r.threshold, r.detail.split(" ")[1])),
        equal_to(expected),
        label="true_jaccard",
    )
    p.run().wait_until_finish()


def test_a_failing_fingerprint_is_an_error_row(monkeypatch):
    real = minhash.shingles

    def shingles(text, *args):
        if "BOOM" in text:
            raise RuntimeError("bad text")
        return real(text, *args)

    monkeypatch.setattr(minhash, "shingles", shingles)
    p = TestPipeline()
    result = p | beam.Create([make_doc("ok", PROSE), make_doc("boom", "BOOM " + PROSE)]) | DedupDocuments(FAST)
    assert_that(_ids(result.kept, "Kept"), equal_to(["ok"]), label="kept")
    assert_that(result.errors | beam.Map(lambda r: (r.doc_id, r.stage, r.reason)),
                equal_to([("boom", "dedup", "RuntimeError")]), label="errors")
    p.run().wait_until_finish()


@pytest.mark.slow
def test_dedup_off_passes_everything():
    config = DedupConfig(url=False, exact_text=False, near=False)
    p, _ = _run(DOCS + CHAIN, config, kept=[d.doc_id for d in DOCS + CHAIN], rejected=[])
    p.run().wait_until_finish()


@pytest.mark.parametrize("rounds", [1, pytest.param(12, marks=pytest.mark.slow)])
def test_connected_components_of_a_long_chain(rounds):
    """A 40-node path: 12 rounds converge; 1 round leaves it to the union-find residual."""
    nodes = [f"n{i:03d}" for i in random.Random(1).sample(range(40), 40)]
    edges = [(max(a, b), min(a, b)) for a, b in zip(nodes, nodes[1:])]
    edges += [("z1", "z0")]  # a second component
    p = TestPipeline()
    labels = p | beam.Create(edges) | ConnectedComponents(rounds)
    expected = [(n, "n000") for n in nodes] + [("z0", "z0"), ("z1", "z0")]
    assert_that(labels, equal_to(expected))
    p.run().wait_until_finish()


def test_rank_string_orders_by_the_survivor_criteria():
    a = make_doc("a", "one two", date="2024-01-01T00:00:00Z").with_signals({"q": 0.5})
    b = make_doc("b", "one two three", date="2023-01-01T00:00:00Z").with_signals({"q": -1.0})
    c = make_doc("c", "one", date="garbage")
    assert sorted("abc", key=lambda i: rank_string({"a": a, "b": b, "c": c}[i], ("quality",), "q")) == list("abc")
    assert sorted([a, b, c], key=lambda d: rank_string(d, ("earliest",))) == [b, a, c]
    assert sorted([a, b, c], key=lambda d: rank_string(d, ("latest",))) == [a, b, c]
    assert sorted([a, b, c], key=lambda d: rank_string(d, ("longest",))) == [b, a, c]


def test_the_implied_threshold_is_described():
    described = describe_lsh(DedupConfig())
    assert "16 bands x 8 rows" in described and "Jaccard 0.674" in described
    assert "verified at true Jaccard >= 0.8" in described
