"""Stage `recycle`: rejected documents' images as image-text pairs.

One Beam scenario on generated documents and images (caption rules, reuse of the
images stage's rows, WARC retrieval, exact and URL duplicates, CLIP threshold with
a fake encoder, pairs from kept documents), and the books.toscrape fixture end to
end through the CLI code path: 20 covers, 20 pairs captioned by their alt text."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from imagegen import photo
from mmcurate.filters import reasons
from mmcurate.pipeline.config import ImagesConfig, RecycleConfig, ScoringConfig, load_config
from mmcurate.pipeline.run import run_curation
from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, CapturedImage, Decision, Document, ImageNode, Provenance, TextNode
from mmcurate.schemas.arrow_rows import records_to_table
from mmcurate.schemas.rows import STATUS_OK, ImageRow
from mmcurate.schemas.tables import PAIRS, PAIRS_SCHEMA
from mmcurate.stages.image_clusters import ClusterByPhash
from mmcurate.stages.image_retrieval import RetrieveImages
from mmcurate.stages.recycle import RecyclePairs
from mmcurate.stages.scoring.pair_scores import ScorePairs
from tinyclip import ColourEncoder

BOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "books.toscrape.warc"

COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "yellow": (255, 255, 0), "magenta": (255, 0, 255)}


def marked(seed: int, colour: str, size=(320, 240)) -> bytes:
    """A distinct generated photo whose top-left 8x8 square carries a colour the
    fake encoder reads."""
    image = photo(seed, size)
    image.paste(COLOURS[colour], (0, 0, 8, 8))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def fake_loader(config):
    return ColourEncoder()


def url(name: str) -> str:
    return f"https://img.example/{name}.png"


BYTES = {
    "red": marked(1, "red"),
    "green": marked(2, "green"),
    "blue": marked(3, "blue"),
    "blue2": marked(4, "blue"),
    "magenta": marked(5, "magenta"),
    "photo": marked(6, "red"),
    "small": marked(7, "red", size=(60, 60)),
}
BYTES["green-copy"] = BYTES["green"]
REUSED = marked(8, "yellow")
SHA = {name: hashlib.sha256(data).hexdigest() for name, data in BYTES.items()}

CAPTURED = [
    CapturedImage(url=url(name), content_type="image/png", payload=data, provenance=Provenance("img.warc", name))
    for name, data in BYTES.items()
]
# What the images stage wrote for a URL it retrieved (nothing captured for it here).
IMAGE_ROWS = [
    ImageRow(hashlib.sha256(REUSED).hexdigest(), (url("reused"),), STATUS_OK, bytes=REUSED, width=320, height=240,
             format="PNG", phash="8000000000000000"),
]


def doc(doc_id: str, *nodes) -> Document:
    return Document(doc_id=doc_id, url=f"https://site.example/{doc_id}", provenance=Provenance("t.warc", doc_id), nodes=tuple(nodes))


def rejected(d: Document, stage: str = "heuristics", reason: str = reasons.CONTENT_TOO_FEW_WORDS, kind: str = KIND_REJECTED) -> Decision:
    return Decision(doc_id=d.doc_id, url=d.url, stage=stage, kind=kind, reason=reason, provenance=d.provenance, document=d)


TEXT = TextNode("Short text here.")
DECISIONS = [
    rejected(doc("d1", TEXT, ImageNode(url("red"), alt="a red barn"), ImageNode(url("photo"), alt="IMG_1234.jpg"))),
    rejected(doc("d2", ImageNode(url("red"), alt="red apples")), stage="dedup", reason=reasons.DEDUP_EXACT_TEXT),
    rejected(doc("d3", TEXT, ImageNode(url("blue"), alt="photo"), ImageNode(url("blue2")))),
    rejected(doc("d4", ImageNode(url("green"), alt="", caption="green hills at dawn")), stage="images", reason=reasons.IMAGE_DOCUMENT_TOO_FEW),
    rejected(doc("d5", ImageNode(url("small"), alt="a small red dot"))),
    rejected(doc("d6", ImageNode(url("reused"), alt="red and green")), stage="quality", reason=reasons.QUALITY_LOW_SCORE),
    rejected(doc("d7", ImageNode(url("green-copy"), title="green field"))),
    rejected(doc("d8", ImageNode(url("blue2"), alt="a red thing"))),
    # Failed pages are not recycled: only rule rejections are.
    rejected(doc("e1", ImageNode(url("magenta"), alt="red and blue")), kind=KIND_ERROR, reason="ValueError"),
]
KEPT = [doc("k1", TEXT, ImageNode(url("magenta"), alt="red and blue"))]


def test_recycle_scenario():
    config = RecycleConfig(caption_sources=("alt", "figcaption", "title"), from_kept=True, store_bytes=True)
    p = TestPipeline()
    images = ImagesConfig()
    result = p | "Decisions" >> beam.Create(DECISIONS) | RecyclePairs(
        config,
        retrieve=RetrieveImages(images),
        near_duplicates=ClusterByPhash(images.phash_max_distance),
        score=ScorePairs(ScoringConfig(pair_min_similarity=0.28), loader=fake_loader),
        captured=p | "Captured" >> beam.Create(CAPTURED),
        image_rows=p | "Rows" >> beam.Create(IMAGE_ROWS),
        kept=p | "Kept" >> beam.Create(KEPT),
    )
    assert_that(
        result.pairs
        | "Pairs" >> beam.Map(
            lambda r: (r.doc_id, r.url.rsplit("/", 1)[1], r.caption, r.caption_source, round(r.similarity, 3),
                       r.source_kept, r.source_stage, r.rejection_reason, r.image_id == hashlib.sha256(r.bytes).hexdigest())
        ),
        equal_to(
            [
                ("d1", "red.png", "a red barn", "alt", 1.0, False, "heuristics", reasons.CONTENT_TOO_FEW_WORDS, True),
                ("d4", "green.png", "green hills at dawn", "figcaption", 1.0, False, "images", reasons.IMAGE_DOCUMENT_TOO_FEW, True),
                ("d6", "reused.png", "red and green", "alt", 1.0, False, "quality", reasons.QUALITY_LOW_SCORE, True),
                ("k1", "magenta.png", "red and blue", "alt", 1.0, True, "", "", True),
            ]
        ),
        label="pairs",
    )
    assert_that(
        result.decisions | "DecisionRows" >> beam.Map(lambda r: (r.subject, r.stage, r.doc_id, r.url.rsplit("/", 1)[1], r.reason)),
        equal_to(
            [
                ("pair", "recycle", "d1", "photo.png", reasons.CAPTION_FILENAME),
                ("pair", "recycle", "d2", "red.png", reasons.PAIR_DUPLICATE_IMAGE),
                ("pair", "recycle", "d3", "blue.png", reasons.CAPTION_GENERIC),
                ("pair", "recycle", "d3", "blue2.png", reasons.CAPTION_MISSING),
                ("pair", "recycle", "d5", "small.png", reasons.PAIR_IMAGE_NOT_RETRIEVED),
                ("pair", "recycle", "d7", "green-copy.png", reasons.PAIR_DUPLICATE_IMAGE),
                ("pair", "recycle", "d8", "blue2.png", reasons.CLIP_PAIR_LOW_SIMILARITY),
            ]
        ),
        label="decisions",
    )
    assert_that(result.pairs | "Table" >> beam.combiners.ToList() | beam.Map(lambda rows: records_to_table(rows, PAIRS).num_rows), equal_to([4]), label="schema")
    outcome = p.run()
    outcome.wait_until_finish()

    def counter(name):
        found = outcome.metrics().query(MetricsFilter().with_namespace("recycle").with_name(name))["counters"]
        return sum(c.committed or 0 for c in found)

    assert counter("pairs") == 4 and counter("documents") == 9 and counter("images.reused") == 1
    assert counter(f"pair.rejected.{reasons.PAIR_DUPLICATE_IMAGE}") == 2


def test_books_toscrape_yields_twenty_alt_captioned_pairs(tmp_path):
    """The page's ~60 words fail heuristics.min_words (50 words of main text after
    extraction: content.too_few_words) with the defaults, so no --set is needed to
    reject it. Two --set are needed for the pairs: images.min_side=90 (the covers are
    98-125 px wide, below OBELICS's 150 px) and recycle.min_chars=4 (the cover of
    "Olio" has a 4-character alt text, below LAION's 5)."""
    config = load_config(  # no dedup: a one-page input has no duplicate, and a phase less to run
        overrides=["run.stages=heuristics,images,scoring,recycle", "images.min_side=90", "recycle.min_chars=4"]
    )
    manifest = run_curation([str(BOOKS)], str(tmp_path / "out"), config, ["--runner=DirectRunner"])
    pairs = pq.read_table(tmp_path / "out" / "pairs").to_pylist()
    assert len(pairs) == 20 and {p["caption_source"] for p in pairs} == {"alt"}
    assert len({p["sha256"] for p in pairs}) == 20 and {p["rejection_reason"] for p in pairs} == {reasons.CONTENT_TOO_FEW_WORDS}
    assert "Olio" in {p["caption"] for p in pairs} and "A Light in the Attic" in {p["caption"] for p in pairs}
    assert pq.read_table(tmp_path / "out" / "pairs").schema.equals(PAIRS_SCHEMA, check_metadata=False)
    recycle = manifest["stages"]["recycle"]
    assert (recycle["pairs"], recycle["recycled_documents"], recycle["candidates"]) == (20, 1, 20)
    assert manifest["stages"]["scoring"] == {"enabled": False, "why": "scoring.checkpoint is not set (and scoring.judge is off)"}
    # Recycling changes no page's fate.
    assert manifest["totals"] == {"pages": 1, "kept": 0, "rejected": 1, "errors": 0, "conserved": True}
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["tables"]["pairs"]["rows"] == 20
