"""Reason codes that only a corpus-wide (or record-level) step gives, asserted
through the stage itself on a tiny input: the read stage on a generated WARC
(``http.status_not_ok``, and an image capture over ``read.max_image_bytes``), the
images stage (capture, frequency, in-document and image-set dedup), the dedup stage,
recycling (``pair.*``) and the VLM judge with a client that always answers 1.

All of them run as ONE Beam pipeline, once per test session (``decided``); every
decision row is keyed by its stage and its subject (URL for images and pairs,
doc_id for pages), and a case reads the codes of its own fixture."""

from __future__ import annotations

import json
import tempfile
from functools import lru_cache
from pathlib import Path

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline

from docfactory import PROSE, make_doc
from imagegen import encode, jpeg, photo, recompressed
from mmcurate.filters import reasons
from mmcurate.schemas import KIND_REJECTED, Decision, Document, ImageNode, Provenance, TextNode
from mmcurate.stages.config import DedupConfig, ImagesConfig, JudgeConfig, ReadConfig, RecycleConfig
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.image_clusters import ClusterByPhash
from mmcurate.stages.image_retrieval import RetrieveImages
from mmcurate.stages.images import CurateImages
from mmcurate.stages.scoring.judge import JudgeDocuments
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.recycle import RecyclePairs
from reason_cases import ReasonCase
from warcbuild import WarcBuilder

IMG = "https://img.example/"
BIG = jpeg(7, (900, 700))
LIMIT = len(BIG) - 1
PHOTOS = {f"p{i}": encode(photo(i), "JPEG", quality=90) for i in range(1, 10)}
PHOTOS["p4-recompressed"] = encode(recompressed(photo(4), 40), "JPEG", quality=90)
PHOTOS["logo"] = jpeg(99, (200, 200))


def page(doc_id: str, images: list[str], date: str = "2024-05-01T00:00:00Z") -> Document:
    nodes = (TextNode(PROSE),) + tuple(ImageNode(IMG + name + ".jpg", alt=f"picture {name}") for name in images)
    return Document(doc_id, f"https://example.org/{doc_id}", Provenance("t.warc.gz", f"<urn:uuid:{doc_id}>", date), nodes=nodes)


IMAGE_DOCS = [
    page("not-captured", ["p1", "nowhere"]),
    page("too-big", ["p2", "big"]),
    *[page(f"logo{i}", ["logo", f"p{4 + i}"]) for i in range(1, 4)],
    page("twice", ["p4", "p4-recompressed"]),
    page("set-first", ["p9", "p3"], date="2024-01-01T00:00:00Z"),
    page("set-copy", ["p3", "p9"], date="2024-03-01T00:00:00Z"),
]
IMAGES_CONFIG = ImagesConfig(max_doc_frequency=2)

_WORDS = (Path(__file__).resolve().parents[1] / "fixtures" / "text" / "en.txt").read_text(encoding="utf-8").split()
DEDUP_DOCS = [
    make_doc("first", PROSE, url="https://example.org/one", date="2023-01-01T00:00:00Z"),
    make_doc("copy", PROSE, url="https://example.org/copy", date="2024-01-01T00:00:00Z"),
    make_doc("url-old", "an older version of the page", url="https://example.org/same?utm_source=x", date="2023-01-01T00:00:00Z"),
    make_doc("url-new", "the current version of the page", url="https://example.org/same", date="2024-01-01T00:00:00Z"),
    make_doc("near-a", " ".join(_WORDS), url="https://example.org/near-a", date="2023-01-01T00:00:00Z"),
    make_doc("near-b", " ".join(_WORDS[:-1] + ["again"]), url="https://example.org/near-b", date="2024-01-01T00:00:00Z"),
]


def rejected_page(doc: Document) -> Decision:
    return Decision(doc.doc_id, doc.url, "heuristics", KIND_REJECTED, reasons.GOPHER_STOP_WORDS, doc.provenance, document=doc)


RECYCLED = [
    rejected_page(page("pair-a", ["shared"])),
    rejected_page(page("pair-b", ["shared"])),
    rejected_page(page("pair-lost", ["lost"])),
]


class LowScoreJudge:
    """A judge client (``JudgeFn``'s ``client`` factory) that rates every page 1 of 5."""

    def __init__(self, config) -> None:
        self.requests = 0
        self.retries = 0

    async def complete(self, messages) -> str:
        self.requests += 1
        return json.dumps({"score": 1, "reason": "thin page"})

    async def close(self) -> None:
        pass


JUDGE_CONFIG = JudgeConfig(enabled=True, endpoint="http://judge.invalid/v1", model="tiny-vlm", min_score=3)


def _write_warc(path: Path) -> None:
    with WarcBuilder.open(path) as warc:
        warc.html("https://example.org/gone", "<html><body>Not found</body></html>", status=404)
        warc.image(IMG + "big.jpg", BIG)
        warc.image(IMG + "shared.jpg", jpeg(8))
        for name, data in PHOTOS.items():
            warc.image(IMG + name + ".jpg", data)


def _key(stage: str, decision: Decision) -> str:
    """Pages by doc_id (by URL in the read stage, before ids matter); images by URL;
    pairs by the page they came from."""
    if stage == "read" or decision.subject == "image":
        subject = decision.url
    else:
        subject = decision.doc_id
    return json.dumps([stage, subject, decision.reason])


@lru_cache(maxsize=None)
def decided() -> dict[tuple[str, str], list[str]]:
    """(stage, subject) -> the codes its rows carry, from one run of every stage."""
    root = Path(tempfile.mkdtemp(prefix="reason-cases-"))
    _write_warc(root / "in.warc.gz")
    with TestPipeline() as p:
        read = p | ReadWarc([str(root / "in.warc.gz")], ReadConfig(max_image_bytes=LIMIT))
        images = p | "ImageDocs" >> beam.Create(IMAGE_DOCS) | CurateImages(IMAGES_CONFIG, read.images)
        dedup = p | "DedupDocs" >> beam.Create(DEDUP_DOCS) | DedupDocuments(DedupConfig(cc_rounds=3))
        pairs = p | "Recycled" >> beam.Create(RECYCLED) | RecyclePairs(
            RecycleConfig(),
            retrieve=RetrieveImages(ImagesConfig()),
            near_duplicates=ClusterByPhash(ImagesConfig().phash_max_distance),
            captured=read.images,
        )
        judged = p | "JudgeDocs" >> beam.Create([make_doc("judged", PROSE)]) | JudgeDocuments(JUDGE_CONFIG, client=LowScoreJudge)
        rows = [
            read.rejected | "ReadRows" >> beam.Map(lambda d: _key("read", d)),
            # Image failures (image.timeout, ...) are error rows, refusals (image.not_captured too) rejected rows.
            (images.rejected, images.errors) | "ImageDecisions" >> beam.Flatten() | "ImageRows" >> beam.Map(lambda d: _key("images", d)),
            dedup.rejected | "DedupRows" >> beam.Map(lambda d: _key("dedup", d)),
            pairs.decisions | "PairRows" >> beam.Map(lambda d: _key("recycle", d)),
            judged.rejected | "JudgeRows" >> beam.Map(lambda d: _key("judge", d)),
        ]
        _ = rows | beam.Flatten() | beam.io.WriteToText(str(root / "rows"), shard_name_template="", num_shards=1)
    out: dict[tuple[str, str], list[str]] = {}
    for line in (root / "rows").read_text().splitlines():
        stage, subject, reason = json.loads(line)
        out.setdefault((stage, subject), []).append(reason)
    return out


def codes(stage: str, subject: str) -> list[str]:
    return sorted(decided().get((stage, subject), []))


CASES = [
    ReasonCase(reasons.HTTP_STATUS_NOT_OK, "a 404 HTML record in a WARC",
               lambda: codes("read", "https://example.org/gone")),
    ReasonCase(reasons.IMAGE_NOT_CAPTURED, "an image URL in no WARC, images.http off",
               lambda: codes("images", IMG + "nowhere.jpg")),
    ReasonCase(reasons.IMAGE_CAPTURE_TOO_LARGE, "an image captured over read.max_image_bytes",
               lambda: codes("images", IMG + "big.jpg")),
    ReasonCase(reasons.IMAGE_TOO_FREQUENT, "a logo on 3 pages, images.max_doc_frequency=2",
               lambda: [c for c in codes("images", "") if c == reasons.IMAGE_TOO_FREQUENT]),
    ReasonCase(reasons.IMAGE_DUPLICATE_IN_DOCUMENT, "a photo and its recompressed copy on one page",
               lambda: codes("images", IMG + "p4-recompressed.jpg")),
    ReasonCase(reasons.IMAGE_DOCUMENT_DUPLICATE_SET, "a later page with the same two photos",
               lambda: codes("images", page("set-copy", []).doc_id)),
    ReasonCase(reasons.DEDUP_EXACT_TEXT, "a later copy of a page's text", lambda: codes("dedup", "copy")),
    ReasonCase(reasons.DEDUP_SAME_URL, "an older capture of the same URL", lambda: codes("dedup", "url-old")),
    ReasonCase(reasons.DEDUP_NEAR_DUPLICATE, "a later page one word apart", lambda: codes("dedup", "near-b")),
    ReasonCase(reasons.PAIR_DUPLICATE_IMAGE, "the second rejected page with the same captured image",
               lambda: codes("recycle", "pair-b")),
    ReasonCase(reasons.PAIR_IMAGE_NOT_RETRIEVED, "a recycled image that was never captured",
               lambda: codes("recycle", "pair-lost")),
    ReasonCase(reasons.JUDGE_LOW_SCORE, "a page the judge rates 1 of 5 (scoring.judge.min_score=3)",
               lambda: codes("judge", "judged")),
]
