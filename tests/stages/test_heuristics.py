import dataclasses
from collections import Counter
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import PROSE, make_doc
from mmcurate.filters import reasons
from mmcurate.filters.text import character_units, count_words
from mmcurate.pipeline.config import HeuristicsConfig, UrlConfig
from mmcurate.schemas import ImageNode
from mmcurate.stages.heuristics import STAGE, ApplyTextHeuristics

TEXT_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "text"
LANGS = ("en", "de", "zh", "ja", "ru", "ar")
UNIQUE = (
    "harbour valley century salt timber cities coast fishing boats dawn afternoon market quay crates "
    "visitors road lighthouse bay islands mountains inland railway tunnels viaduct engineers summer winter"
).split()


def clean(lang):
    text = (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8")
    return make_doc(f"clean-{lang}", [p.strip() for p in text.split("\n\n") if p.strip()], images=2)


def with_logo_only(doc_id):
    doc = make_doc(doc_id, PROSE)
    return dataclasses.replace(doc, nodes=doc.nodes + (ImageNode("https://example.org/static/logo.png"),))


DOCS = [clean(lang) for lang in LANGS] + [
    make_doc("short", "Only a few words here.", images=1),
    make_doc("noimg", PROSE),
    make_doc("empty", [], images=3),
    make_doc("nothing", []),
    make_doc("blocked", PROSE, images=1, url="https://www.spam.example/page"),
    make_doc("cookies", ["We use cookies to improve your experience. Accept all cookies."], images=1),
    with_logo_only("logo"),
    make_doc("gallery", PROSE, images=31),
    make_doc("dupes", [PROSE, PROSE, PROSE, "A different closing paragraph that ends here."], images=1),
    make_doc("listy", [f"• The {a} near the {b} opens early today" for a, b in zip(UNIQUE[:12], UNIQUE[12:24])], images=1),
]
EXPECTED_REJECTED = [
    ("short", reasons.CONTENT_TOO_FEW_WORDS),
    ("noimg", reasons.CONTENT_TOO_FEW_IMAGES),
    ("empty", reasons.CONTENT_NO_TEXT),
    # no word and no image: its own reason, not content.too_few_images
    ("nothing", reasons.CONTENT_EMPTY),
    ("blocked", reasons.URL_BLOCKLISTED_DOMAIN),
    ("cookies", reasons.NODES_NO_TEXT_LEFT),
    ("logo", reasons.NODES_NO_IMAGES_LEFT),
    ("gallery", reasons.OBELICS_TOO_MANY_IMAGES),
    # FineWeb's duplicate-line rule (1% of characters) runs before Gopher's repetition rules
    ("dupes", reasons.FINEWEB_DUPLICATE_LINE_CHARS),
    ("listy", reasons.GOPHER_BULLET_LINES),
]


@pytest.fixture
def blocklist(tmp_path):
    path = tmp_path / "domains.txt"
    path.write_text("# test list\nspam.example\n")
    return str(path)


def _counters(run):
    return {c.key.metric.name: c.committed for c in run.metrics().query()["counters"] if c.key.metric.namespace == STAGE}


def test_kept_rejected_and_counters_equal_the_decision_rows(blocklist):
    config = HeuristicsConfig(urls=UrlConfig(domain_blocklists=(blocklist,)))
    p = TestPipeline()
    result = p | beam.Create(DOCS) | ApplyTextHeuristics(config)
    assert_that(
        result.kept | "Kept" >> beam.Map(lambda d: (d.doc_id, d.language)),
        equal_to([(f"clean-{lang}", lang) for lang in LANGS]),
        label="kept",
    )
    assert_that(
        result.rejected | "Reasons" >> beam.Map(lambda r: (r.doc_id, r.reason)), equal_to(EXPECTED_REJECTED), label="rejected"
    )
    assert_that(result.rejected | "Stages" >> beam.Map(lambda r: r.stage), equal_to([STAGE] * len(EXPECTED_REJECTED)), label="stage")
    assert_that(result.errors, equal_to([]), label="errors")
    run = p.run()
    run.wait_until_finish()
    counters = _counters(run)
    rows = Counter(reason for _, reason in EXPECTED_REJECTED)
    assert {k.removeprefix("rejected."): v for k, v in counters.items() if k.startswith("rejected.")} == rows
    assert counters["kept"] == len(LANGS)
    assert counters["nodes.removed.boilerplate"] == 1 and counters["nodes.removed.image_url"] == 1


def test_kept_documents_carry_every_signal():
    p = TestPipeline()
    result = p | beam.Create([clean("zh"), clean("en")]) | ApplyTextHeuristics(HeuristicsConfig())

    def figures(doc):
        s = doc.signals
        return (
            doc.doc_id,
            s["content.word_count"],
            "gopher.duplicate_10gram_char_fraction" in s,
            "fineweb.newline_word_ratio" in s,
            "obelics.word_repetition_ratio" in s,
            "nodes.removed.boilerplate" in s,
            round(s["language.score"], 2) == round(doc.language_score, 2),
        )

    assert_that(
        result.kept | beam.Map(figures),
        equal_to([("clean-zh", 175.0, True, True, True, True, True), ("clean-en", 171.0, True, True, True, True, True)]),
    )
    p.run().wait_until_finish()


def test_language_allow_list_and_rejection_row_has_value_and_threshold():
    config = HeuristicsConfig(language={"allowed": ("en",)}, min_images=0)
    p = TestPipeline()
    result = p | beam.Create([clean("de"), clean("en")]) | ApplyTextHeuristics(config)
    assert_that(result.kept | "K" >> beam.Map(lambda d: d.doc_id), equal_to(["clean-en"]), label="kept")
    assert_that(
        result.rejected | "R" >> beam.Map(lambda r: (r.doc_id, r.reason, r.detail, r.threshold)),
        equal_to([("clean-de", reasons.LANGUAGE_NOT_ALLOWED, "de", None)]),
        label="rejected",
    )
    p.run().wait_until_finish()


def test_missing_blocklist_fails_at_construction_naming_the_key(tmp_path):
    config = HeuristicsConfig(urls=UrlConfig(substring_blocklists=(str(tmp_path / "nope.txt"),)))
    with pytest.raises(FileNotFoundError, match="heuristics.urls.substring_blocklists: file not found"):
        ApplyTextHeuristics(config)


# -- long articles are kept (a long-context corpus wants them most) ---------------------

LONG_DIR = TEXT_DIR / "long"


def illustrated(doc_id, lang, images, every):
    """A long article from tests/fixtures/text/long/<lang>.txt with an image after every ``every`` paragraphs."""
    paragraphs = [p.strip() for p in (LONG_DIR / f"{lang}.txt").read_text(encoding="utf-8").split("\n\n") if p.strip()]
    doc = make_doc(doc_id, [])
    nodes = []
    for i, p in enumerate(paragraphs, 1):
        nodes.append(dataclasses.replace(make_doc("x", p).nodes[0]))
        if i % every == 0 and sum(isinstance(n, ImageNode) for n in nodes) < images:
            nodes.append(ImageNode(f"https://example.org/{doc_id}/figure-{i}.jpg", alt=f"figure {i}"))
    return dataclasses.replace(doc, nodes=tuple(nodes))


@pytest.fixture(scope="module")
def identifier():
    from mmcurate.filters.language import DEFAULT_IDENTIFIER, load_identifier

    return load_identifier(DEFAULT_IDENTIFIER)


def _outcome(config, doc, identifier):
    from mmcurate.stages.results import apply_filters
    from mmcurate.stages.heuristics import heuristic_steps

    out, verdict = apply_filters(doc, heuristic_steps(config, language_model=identifier))
    return out, (verdict.reason if verdict else "kept")


def test_a_4000_word_article_with_ten_images_is_kept_and_obelics_exact_rejects_it(identifier):
    doc = illustrated("long-en", "en", images=10, every=6)
    assert len(doc.image_nodes) == 10
    out, outcome = _outcome(HeuristicsConfig(), doc, identifier)
    assert outcome == "kept" and out.signals["content.word_count"] > 3900 and out.language == "en"
    # one word count, whichever rule families measured it
    assert [k for k in out.signals if k.endswith("word_count")] == ["content.word_count"]
    _, exact = _outcome(HeuristicsConfig(obelics={"max_words": 2000}), doc, identifier)
    assert exact == reasons.OBELICS_TOO_MANY_WORDS


@pytest.mark.parametrize("lang", ["zh", "ja"])
def test_a_2000_character_chinese_or_japanese_article_is_kept_even_under_obelics_2000_word_cap(identifier, lang):
    doc = illustrated(f"long-{lang}", lang, images=3, every=4)
    # over 2,000 units when each character is one (the count before words were segmented)
    assert len(character_units(doc.text)) > 2100
    for config in (HeuristicsConfig(), HeuristicsConfig(obelics={"max_words": 2000})):
        out, outcome = _outcome(config, doc, identifier)
        assert outcome == "kept" and out.language == lang
        # counted in words (1,307 and 1,154), not one per character
        assert out.signals["content.word_count"] == count_words(doc.text) < 1400


def test_text_is_joined_and_tokenised_once_per_document_and_rules_measure_the_same(identifier, monkeypatch):
    from mmcurate.filters.text import TextView
    from mmcurate.stages import heuristics
    from mmcurate.stages.results import apply_filters

    built = []

    class CountingView(TextView):
        def __init__(self, text):
            built.append(text)
            super().__init__(text)

    monkeypatch.setattr(heuristics, "TextView", CountingView)
    config = HeuristicsConfig(c4={"enabled": True}, min_images=1)
    steps = heuristics.heuristic_steps(config, language_model=identifier)
    doc = clean("en")
    shared_out, verdict = apply_filters(doc, steps)
    assert verdict is None and len(built) == 1
    # the same figures as every rule computing its own text
    plain = [getattr(s, "step", s) for s in steps]
    plain_out, _ = apply_filters(doc, plain)
    assert shared_out.signals == plain_out.signals
    # node cleanup that removes a node makes a new view of the edited text
    built.clear()
    edited = dataclasses.replace(doc, nodes=(make_doc("x", "Share on Facebook").nodes[0],) + doc.nodes)
    apply_filters(edited, steps)
    assert len(built) == 1 and "Share on Facebook" not in built[0]
