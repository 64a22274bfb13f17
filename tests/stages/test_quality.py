import dataclasses
from pathlib import Path
from typing import Any, Mapping

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import ModelHandler
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import PROSE, make_doc
from mmcurate.filters import llm_text, reasons
from mmcurate.filters.mt_page import NOTICE
from mmcurate.pipeline.config import QualityConfig
from mmcurate.stages.engines.text_classifiers import model_paths, mt_languages
from mmcurate.stages.quality import FastTextModelHandler, FastTextModels, ScoreQuality

SCORES = {  # doc_id: (quality_score, mt_score, llm_score) the fake scorer gives
    "good": (0.9, 0.1, 0.1),
    "notice": (0.9, 0.1, 0.1),
    "fanout": (0.9, 0.1, 0.1),
    "chatbot": (0.9, 0.1, 0.1),
    "poor": (0.2, 0.1, 0.1),
    "translated": (0.9, 0.95, 0.1),
    "generated": (0.9, 0.1, 0.95),
    "a": (0.9, 0.1, 0.1),
    "b": (0.9, 0.1, 0.1),
    "c": (0.9, 0.1, 0.1),
}


class FakeModels(dict):
    """Beam's model cache holds models by weak reference: a dict subclass allows one."""


class FakeScorer(ModelHandler):
    """Gives each document the scores listed in SCORES (the stage logic, not a model)."""

    def load_model(self) -> dict:
        return FakeModels(SCORES)

    def run_inference(self, batch, model, inference_args=None):
        for doc in batch:
            q, mt, llm = model[doc.doc_id]
            yield doc.with_signals({"quality_score": q, "mt_score": mt, "llm_score": llm})

    def batch_elements_kwargs(self) -> Mapping[str, Any]:
        return {"max_batch_size": 4}


def _docs():
    hreflang = tuple((lang, f"https://example.org/{lang}/") for lang in "en de fr es it pt nl pl sv ja".split())
    chatbot = make_doc("chatbot", [PROSE, "As an AI language model, I cannot give medical advice."], images=1)
    return [
        make_doc("good", PROSE, images=1),
        make_doc("notice", PROSE, images=1).with_signals({NOTICE: 1.0}),
        dataclasses.replace(make_doc("fanout", PROSE, images=1), hreflang=hreflang),
        chatbot,
        make_doc("poor", PROSE, images=1),
        make_doc("translated", PROSE, images=1),
        make_doc("generated", PROSE, images=1),
    ]


CONFIG = QualityConfig(
    min_score=0.5,
    mt={"max_score": 0.9},
    llm={"max_score": 0.9},
)


def _counters(run, namespace="quality"):
    """The stage's counters summed over steps, as the run manifest sums them."""
    totals: dict[str, int] = {}
    for c in run.metrics().query()["counters"]:
        if c.key.metric.namespace == namespace and c.key.metric.name != "micros":
            totals[c.key.metric.name] = totals.get(c.key.metric.name, 0) + c.committed
    return totals


def test_each_detector_rejects_with_its_reason_and_counters_equal_rows():
    p = TestPipeline()
    result = p | beam.Create(_docs()) | ScoreQuality(CONFIG, scorer=FakeScorer())
    assert_that(result.kept | "Kept" >> beam.Map(lambda d: d.doc_id), equal_to(["good"]), label="kept")
    assert_that(
        result.rejected | "Reasons" >> beam.Map(lambda r: (r.doc_id, r.stage, r.reason)),
        equal_to(
            [
                ("notice", "quality", reasons.MT_NOTICE),
                ("fanout", "quality", reasons.MT_HREFLANG_FANOUT),
                ("chatbot", "quality", reasons.LLM_TEMPLATE_PHRASE),
                ("poor", "quality", reasons.QUALITY_LOW_SCORE),
                ("translated", "quality", reasons.MT_HIGH_SCORE),
                ("generated", "quality", reasons.LLM_HIGH_SCORE),
            ]
        ),
        label="rejected",
    )
    # The score signals are a contract: on decision rows as on kept documents.
    assert_that(
        result.rejected | "Scores" >> beam.Map(lambda r: sorted(k for k in r.signals if k.endswith("_score"))),
        equal_to([["llm_score", "mt_score", "quality_score"]] * 6),
        label="row-signals",
    )
    assert_that(result.errors, equal_to([]), label="errors")
    run = p.run()
    run.wait_until_finish()
    assert _counters(run) == {
        "kept": 1,
        f"rejected.{reasons.MT_NOTICE}": 1,
        f"rejected.{reasons.MT_HREFLANG_FANOUT}": 1,
        f"rejected.{reasons.LLM_TEMPLATE_PHRASE}": 1,
        f"rejected.{reasons.QUALITY_LOW_SCORE}": 1,
        f"rejected.{reasons.MT_HIGH_SCORE}": 1,
        f"rejected.{reasons.LLM_HIGH_SCORE}": 1,
    }


def test_disabled_detectors_keep_what_they_would_reject():
    config = QualityConfig(mt={"enabled": False}, llm={"enabled": False})
    p = TestPipeline()
    result = p | beam.Create(_docs()) | ScoreQuality(config, scorer=FakeScorer())
    assert_that(result.kept | beam.Map(lambda d: d.doc_id), equal_to([d.doc_id for d in _docs()]))
    p.run().wait_until_finish()


def test_site_aggregation_rejects_every_page_of_a_generated_site():
    site = [make_doc(f"s{i}", PROSE, images=1, url=f"https://www.farm.example/{i}") for i in range(3)]
    other = make_doc("o", PROSE, images=1, url="https://other.example/a")
    scores = {"s0": (0.9, 0.1, 0.9), "s1": (0.9, 0.1, 0.7), "s2": (0.9, 0.1, 0.5), "o": (0.9, 0.1, 0.9)}

    class SiteScorer(FakeScorer):
        def load_model(self):
            return FakeModels(scores)

    config = QualityConfig(llm={"site": True, "site_max_score": 0.6, "site_min_docs": 3})
    p = TestPipeline()
    result = p | beam.Create(site + [other]) | ScoreQuality(config, scorer=SiteScorer())
    assert_that(result.kept | "Kept" >> beam.Map(lambda d: (d.doc_id, d.signals[llm_text.SITE_DOCS])), equal_to([("o", 1.0)]), label="kept")
    assert_that(
        result.rejected | "Rows" >> beam.Map(lambda r: (r.doc_id, r.reason, round(r.value, 3))),
        equal_to([(f"s{i}", reasons.LLM_SITE_HIGH_SCORE, 0.7) for i in range(3)]),
        label="rejected",
    )
    p.run().wait_until_finish()


class FakeEmbedder(ModelHandler):
    """Unit vectors by doc_id: 'a' and its paraphrase 'b' nearly parallel, 'c' orthogonal."""

    def load_model(self):
        return FakeModels()

    def run_inference(self, batch, model, inference_args=None):
        from mmcurate.stages.quality import capture_rank

        base = {"a": [1.0, 0.0, 0.0], "b": [0.98, 0.2, 0.0], "c": [0.0, 0.0, 1.0]}
        for doc in batch:
            v = np.asarray(base[doc.doc_id], dtype=np.float32)
            yield doc.doc_id, capture_rank(doc), v / np.linalg.norm(v)


def test_rewrites_keep_the_earliest_capture_and_counters_stay_equal_to_rows():
    docs = [
        make_doc("b", PROSE, images=1, date="2024-03-01T00:00:00Z"),
        make_doc("a", PROSE, images=1, date="2024-01-01T00:00:00Z"),
        make_doc("c", PROSE, images=1),
    ]
    config = QualityConfig(rewrite={"enabled": True, "threshold": 0.95, "bands": 8, "rows": 4})
    p = TestPipeline()
    result = p | beam.Create(docs) | ScoreQuality(config, scorer=FakeScorer(), embedder=FakeEmbedder())
    assert_that(result.kept | "Kept" >> beam.Map(lambda d: d.doc_id), equal_to(["a", "c"]), label="kept")
    assert_that(
        result.rejected | "Rows" >> beam.Map(lambda r: (r.doc_id, r.reason, r.detail)),
        equal_to([("b", reasons.REWRITE_NEAR_DUPLICATE, "survivor=a")]),
        label="rejected",
    )
    run = p.run()
    run.wait_until_finish()
    assert _counters(run) == {"kept": 2, f"rejected.{reasons.REWRITE_NEAR_DUPLICATE}": 1}


# Real text of the shipped languages (first lines of Wikipedia-style prose written for
# these tests), 10 sentences or more each as the models were trained on.
SHIPPED_TEXTS = {
    "en": PROSE,
    "de": ("Der Hafen am Ende des Tals wurde im achtzehnten Jahrhundert gebaut. Damals handelte die Stadt mit Salz. "
           "Die Boote brachten das Salz flussabwärts bis an die Küste. " * 4),
    "zh": "这座港口建于十八世纪，当时小镇以盐业贸易为生。船只把盐沿河运到海边。" * 4,
}


def test_shipped_models_load_and_score_by_document_language():
    config = QualityConfig()
    paths = model_paths(config)
    languages = mt_languages(config)
    # one MT model per language the shipped data covers, at least these eight
    assert {"zh", "de", "ru", "ja", "cs", "uk", "he", "en"} <= set(languages)
    assert {k for k in paths if not k.startswith("mt:")} == {"quality", "llm"}
    assert sorted(k.removeprefix("mt:") for k in paths if k.startswith("mt:")) == languages
    for path in paths.values():
        assert Path(path).stat().st_size < 5_000_000
    handler = FastTextModelHandler(paths, batch_size=8)
    models = handler.load_model()
    docs = [dataclasses.replace(make_doc(lang, text), language=lang) for lang, text in SHIPPED_TEXTS.items()]
    docs.append(dataclasses.replace(make_doc("pt", "O porto no fim do vale foi construído no século XVIII."), language="pt"))
    docs.append(make_doc("unknown", PROSE))  # no language ID ran
    scored = {doc.doc_id: doc for doc in handler.run_inference(docs, models)}
    for doc_id in SHIPPED_TEXTS:
        assert 0.0 <= scored[doc_id].signals["mt_score"] <= 1.0
    # no model for Portuguese, no language at all: no mt_score (not a meaningless one)
    assert "mt_score" not in scored["pt"].signals and "mt_score" not in scored["unknown"].signals
    for doc in scored.values():
        assert 0.0 <= doc.signals["quality_score"] <= 1.0 and 0.0 <= doc.signals["llm_score"] <= 1.0
    assert {d.doc_id: d for d in handler.run_inference(docs, models)} == scored  # deterministic


def test_mt_languages_follow_the_model_folder_and_config(tmp_path):
    folder = tmp_path / "mt"
    folder.mkdir()
    for name in ("de.npz", "fr.bin"):
        (folder / name).write_bytes(b"")
    assert mt_languages(QualityConfig(mt={"model_dir": str(folder)})) == ["de", "fr"]
    assert mt_languages(QualityConfig(mt={"model_dir": str(folder), "languages": ["fr"]})) == ["fr"]
    assert mt_languages(QualityConfig(mt={"model_path": str(folder / "fr.bin"), "languages": ["fr", "it"]})) == ["fr", "it"]
    assert mt_languages(QualityConfig(mt={"enabled": False})) == []
    with pytest.raises(FileNotFoundError, match="no mt model for it"):
        mt_languages(QualityConfig(mt={"model_dir": str(folder), "languages": ["it"]}))
    with pytest.raises(ValueError, match="model_path needs quality.mt.languages"):
        QualityConfig(mt={"model_path": str(folder / "fr.bin")})


def test_mt_score_comes_from_the_model_of_the_document_language():
    class Fixed:
        def __init__(self, p):
            self.p = p

        def probabilities(self, texts):
            return [self.p] * len(texts)

    handler = FastTextModelHandler({}, batch_size=8)
    models = FastTextModels({"mt:de": Fixed(0.25), "mt:en": Fixed(0.75)})
    docs = [dataclasses.replace(make_doc(i, PROSE), language=lang) for i, lang in (("a", "de"), ("b", "en-GB"), ("c", "fr"))]
    scores = {d.doc_id: d.signals.get("mt_score") for d in handler.run_inference(docs, models)}
    assert scores == {"a": 0.25, "b": 0.75, "c": None}


def test_missing_model_fails_before_the_pipeline_runs(tmp_path):
    with pytest.raises(FileNotFoundError, match="quality: mt model not found"):
        ScoreQuality(QualityConfig(mt={"model_path": str(tmp_path / "none.bin"), "languages": ["en"]}))
    with pytest.raises(FileNotFoundError, match="quality: mt model folder not found"):
        ScoreQuality(QualityConfig(mt={"model_dir": str(tmp_path / "nowhere")}))


@pytest.mark.slow
def test_real_sentence_embedder_loads_offline(monkeypatch):
    pytest.importorskip("sentence_transformers")
    from mmcurate.stages.engines.text_classifiers import default_embedding_model
    from mmcurate.stages.quality import SentenceEmbeddingModelHandler

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    handler = SentenceEmbeddingModelHandler(str(default_embedding_model()), batch_size=4)
    model = handler.load_model()
    docs = [
        make_doc("a", "The harbour was built in the eighteenth century, when the town traded salt."),
        make_doc("b", "Built in the 1700s, the harbour dates from the time the town's trade was in salt."),
        make_doc("c", "Preheat the oven and whisk the eggs with sugar until pale."),
    ]
    vectors = {doc_id: v for doc_id, _, v in handler.run_inference(docs, model)}
    assert vectors["a"] @ vectors["b"] > 0.8 > 0.2 > vectors["a"] @ vectors["c"]


def test_run_manifest_lists_the_languages_that_get_an_mt_score():
    from mmcurate.pipeline.config import Config
    from mmcurate.pipeline.manifest import stage_funnel

    config = Config(run={"stages": ["heuristics", "quality"]})
    funnel = stage_funnel(config, {}, {"kept": 0})
    assert funnel["quality"]["mt_languages"] == mt_languages(config.quality)
    off = Config(run={"stages": ["heuristics", "quality"]}, quality={"mt": {"enabled": False}})
    assert stage_funnel(off, {}, {"kept": 0})["quality"]["mt_languages"] == []


def test_preflight_checks_every_mt_model_before_a_run(tmp_path):
    from mmcurate.pipeline.config import Config
    from mmcurate.pipeline.preflight import PreflightError, check_files

    check_files(Config(run={"stages": ["heuristics", "quality"]}))  # the shipped models pass
    folder = tmp_path / "mt"
    folder.mkdir()
    (folder / "de.npz").write_bytes(b"not a zip archive")
    with pytest.raises(PreflightError, match=r"quality.mt.model_dir \(de\): .*de.npz is not a .npz model"):
        check_files(Config(run={"stages": ["heuristics", "quality"]}, quality={"mt": {"model_dir": str(folder)}}))
    with pytest.raises(PreflightError, match="quality.mt.model_dir: quality: mt model folder not found"):
        check_files(Config(run={"stages": ["heuristics", "quality"]}, quality={"mt": {"model_dir": str(tmp_path / "no")}}))
