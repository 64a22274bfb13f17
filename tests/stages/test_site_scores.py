"""Site aggregation of mt_score and llm_score in the quality stage: exact decisions
through a real Beam pipeline, and what crosses its shuffle."""

import dataclasses
from typing import Any, Mapping

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.typehints.native_type_compatibility import convert_to_beam_type

from beam_checks import assert_outputs
from docfactory import PROSE, make_doc
from mmcurate.filters import llm_text, mt_combined, reasons
from mmcurate.filters.site_scores import site_of
from mmcurate.pipeline.config import QualityConfig
from mmcurate.schemas import Document
from mmcurate.stages.quality import ScoreQuality
from mmcurate.stages.site_scores import AggregateSiteScores, SiteEntry

# doc_id: (url, language, mt_score or None, llm_score)
PAGES = {
    # mtshop.com: six German pages a translation service made (subdomain and www
    # are one site), four English originals; the German mean is 0.8.
    **{f"de{i}": (f"https://{'de.' if i % 2 else 'www.'}mtshop.com/p{i}", "de", s, 0.1)
       for i, s in enumerate([0.9, 0.8, 0.7, 0.9, 0.8, 0.7])},
    **{f"en{i}": (f"https://mtshop.com/en/p{i}", "en", 0.2, 0.1) for i in range(4)},
    # few.org: three German pages scored high, under site_min_docs
    **{f"few{i}": (f"https://few.org/{i}", "de", 0.95, 0.1) for i in range(3)},
    # human.net: five German pages scored low
    **{f"hu{i}": (f"https://human.net/{i}", "de", 0.3, 0.1) for i in range(5)},
    # gen.info: five English pages a weak model wrote (llm mean 0.8), mt low
    **{f"gen{i}": (f"https://blog.gen.info/{i}", "en", 0.1, s) for i, s in enumerate([0.9, 0.7, 0.8, 0.9, 0.7])},
    # one Icelandic page (no MT model: no mt_score) on mtshop.com, and a lone page
    "is0": ("https://is.mtshop.com/p", "is", None, 0.1),
    "lone": ("https://lone.org/a", "de", 0.99, 0.1),
}

CONFIG = QualityConfig(
    mt={"site": True, "site_max_score": 0.75, "site_min_docs": 5},
    llm={"site": True, "site_max_score": 0.6, "site_min_docs": 5},
)


class _Models(dict):
    pass


class PageScorer:
    """Gives each page the scores listed in PAGES (the stage logic, not a model)."""

    def load_model(self):
        return _Models(PAGES)

    def run_inference(self, batch, model, inference_args=None):
        for doc in batch:
            _, _, mt, llm = model[doc.doc_id]
            signals = {"quality_score": 0.9, "llm_score": llm}
            if mt is not None:
                signals["mt_score"] = mt
            yield doc.with_signals(signals)

    def batch_elements_kwargs(self) -> Mapping[str, Any]:
        return {"max_batch_size": 4}


def _pages() -> list[Document]:
    return [
        dataclasses.replace(make_doc(doc_id, PROSE, images=1, url=url), language=language)
        for doc_id, (url, language, _, _) in PAGES.items()
    ]


def _site_signals(doc: Document) -> tuple:
    s = doc.signals
    mt = (round(s[mt_combined.SITE_SCORE], 6), s[mt_combined.SITE_DOCS]) if mt_combined.SITE_SCORE in s else None
    return doc.doc_id, mt, (round(s[llm_text.SITE_SCORE], 6), s[llm_text.SITE_DOCS])


def test_site_means_reject_exactly_the_pages_of_sites_above_the_threshold_with_enough_pages():
    p = TestPipeline(options=PipelineOptions(runtime_type_check=True))
    result = p | beam.Create(_pages()) | ScoreQuality(CONFIG, scorer=PageScorer())
    rows = result.rejected | beam.Map(lambda r: (r.doc_id, r.reason, round(r.value, 6), r.threshold, r.detail))
    mt_rows = [(f"de{i}", reasons.MT_SITE_HIGH_SCORE, 0.8, 0.75, "site_docs=6") for i in range(6)]
    llm_rows = [(f"gen{i}", reasons.LLM_SITE_HIGH_SCORE, 0.8, 0.6, "site_docs=5") for i in range(5)]
    # mtshop.com's llm mean is over all 11 of its pages (llm sites ignore language)
    kept = (
        [(f"en{i}", (0.2, 4.0), (0.1, 11.0)) for i in range(4)]
        + [(f"few{i}", (0.95, 3.0), (0.1, 3.0)) for i in range(3)]
        + [(f"hu{i}", (0.3, 5.0), (0.1, 5.0)) for i in range(5)]
        + [("is0", None, (0.1, 11.0)), ("lone", (0.99, 1.0), (0.1, 1.0))]
    )
    assert_outputs({
        "rejected": (rows, mt_rows + llm_rows),
        "kept": (result.kept | beam.Map(_site_signals), kept),
    })
    p.run().wait_until_finish()


def test_only_compact_site_records_cross_the_stage_s_shuffle():
    """Every GroupByKey of the stage (the CombinePerKey's) takes ((signal, site),
    units) records, checked at run time (runtime_type_check), never a Document."""
    p = TestPipeline(options=PipelineOptions(runtime_type_check=True))
    _ = p | beam.Create(_pages()) | "Quality" >> ScoreQuality(CONFIG, scorer=PageScorer())
    shuffled = []

    class Shuffles(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node):
            if isinstance(node.transform, (beam.GroupByKey, beam.CoGroupByKey)) and node.full_label.startswith("Quality/"):
                shuffled.append((node.full_label, node.inputs[0].element_type))

    p.visit(Shuffles())
    assert [label for label, _ in shuffled] == ["Quality/SiteScores/SumPerSite/GroupByKey"]
    assert all(t == convert_to_beam_type(SiteEntry) for _, t in shuffled)
    p.run().wait_until_finish()


def test_site_entries_are_all_that_is_shuffled_and_sites_of_one_page_stay_out_of_the_table():
    p = TestPipeline(options=PipelineOptions(runtime_type_check=True))
    docs = p | beam.Create(_pages()) | "Score" >> beam.Map(
        lambda d: next(iter(PageScorer().run_inference([d], PAGES)))
    )
    out = docs | AggregateSiteScores([mt_combined.SITE])
    lone = out | beam.Filter(lambda d: d.doc_id in ("lone", "is0")) | beam.Map(
        lambda d: (d.doc_id, d.signals.get(mt_combined.SITE_SCORE), d.signals.get(mt_combined.SITE_DOCS))
    )
    assert_outputs({"lone": (lone, [("lone", 0.99, 1.0), ("is0", None, None)])})
    p.run().wait_until_finish()


def test_a_site_is_the_registered_domain():
    assert site_of("https://fr.shop.example.co.uk/a") == "example.co.uk"
    assert site_of("https://WWW.Example.com:8080/x") == "example.com"
    assert site_of("https://alice.blogspot.com/post") == "alice.blogspot.com"
    assert site_of("http://192.0.2.7/page") == "192.0.2.7"
    assert site_of("not a url") == ""
