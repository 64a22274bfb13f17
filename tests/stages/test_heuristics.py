import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import PROSE, make_doc
from mmcurate.filters import reasons
from mmcurate.pipeline.config import HeuristicsConfig
from mmcurate.stages.heuristics import ApplyTextHeuristics

DOCS = [
    make_doc("good", PROSE, images=2),
    make_doc("short", "Only a few words here.", images=1),
    make_doc("noimg", PROSE),
    make_doc("empty", [], images=3),
]


def _run(config):
    p = TestPipeline()
    result = p | beam.Create(DOCS) | ApplyTextHeuristics(config)
    return p, result


def test_kept_and_rejected_with_reasons():
    p, result = _run(HeuristicsConfig())
    assert_that(result.kept | "KeptIds" >> beam.Map(lambda d: d.doc_id), equal_to(["good"]), label="kept")
    assert_that(
        result.rejected | "Reasons" >> beam.Map(lambda r: (r.doc_id, r.stage, r.reason, r.value, r.threshold)),
        equal_to(
            [
                ("short", "heuristics", reasons.CONTENT_TOO_FEW_WORDS, 5.0, 50.0),
                ("noimg", "heuristics", reasons.CONTENT_TOO_FEW_IMAGES, 0.0, 1.0),
                ("empty", "heuristics", reasons.CONTENT_NO_TEXT, 0.0, 1.0),
            ]
        ),
        label="rejected",
    )
    assert_that(result.errors, equal_to([]), label="errors")
    run = p.run()
    run.wait_until_finish()
    counters = {c.key.metric.name: c.committed for c in run.metrics().query()["counters"] if c.key.metric.namespace == "heuristics"}
    # Counters equal the rows.
    assert counters["kept"] == 1
    assert counters[f"rejected.{reasons.CONTENT_TOO_FEW_WORDS}"] == 1
    assert counters[f"rejected.{reasons.CONTENT_TOO_FEW_IMAGES}"] == 1
    assert counters[f"rejected.{reasons.CONTENT_NO_TEXT}"] == 1


def test_text_only_documents_kept_when_min_images_is_zero():
    p, result = _run(HeuristicsConfig(min_images=0))
    assert_that(result.kept | beam.Map(lambda d: d.doc_id), equal_to(["good", "noimg"]))
    p.run().wait_until_finish()


def test_kept_documents_carry_their_signals():
    p, result = _run(HeuristicsConfig())
    assert_that(
        result.kept | beam.Map(lambda d: (d.signals["content.word_count"], d.signals["content.image_count"])),
        equal_to([(83.0, 2.0)]),
    )
    p.run().wait_until_finish()
