import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import PROSE, make_doc
from mmcurate.filters import reasons
from mmcurate.pipeline.config import DedupConfig
from mmcurate.stages.dedup import DedupDocuments

OTHER = "A different article about the mountain railway, its tunnels and the villages along the line."

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


def test_exact_duplicates_keep_the_earliest_capture_and_name_it():
    p = TestPipeline()
    result = p | beam.Create(DOCS) | DedupDocuments(DedupConfig())
    assert_that(
        result.kept | "Ids" >> beam.Map(lambda d: d.doc_id),
        equal_to(["original", "other", "notext-1", "notext-2"]),
        label="kept",
    )
    assert_that(
        result.rejected | "Rows" >> beam.Map(lambda r: (r.doc_id, r.stage, r.reason, r.detail)),
        equal_to(
            [
                (d, "dedup", reasons.DEDUP_EXACT_TEXT, "survivor=original")
                for d in ("copy-late", "copy-shouty", "bad-date")
            ]
        ),
        label="rejected",
    )
    assert_that(
        result.kept
        | "Sizes" >> beam.Filter(lambda d: d.doc_id == "original")
        | beam.Map(lambda d: d.signals["dedup.exact_group_size"]),
        equal_to([4.0]),
        label="group_size",
    )
    p.run().wait_until_finish()


def test_survivor_does_not_depend_on_input_order():
    for order in (DOCS, list(reversed(DOCS))):
        p = TestPipeline()
        result = p | beam.Create(order) | DedupDocuments(DedupConfig())
        assert_that(result.rejected | beam.Map(lambda r: r.detail), equal_to(["survivor=original"] * 3))
        p.run().wait_until_finish()


def test_dedup_off_passes_everything():
    p = TestPipeline()
    result = p | beam.Create(DOCS) | DedupDocuments(DedupConfig(exact_text=False))
    assert_that(result.kept | beam.Map(lambda d: d.doc_id), equal_to([d.doc_id for d in DOCS]))
    p.run().wait_until_finish()
