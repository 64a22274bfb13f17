"""The `images` stage in Beam: WARC-captured retrieval with no HTTP, corpus-wide
dedup (exact, pHash near-duplicates, frequency, image sets) and document rules."""

from __future__ import annotations

import hashlib
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beam_checks import assert_outputs
from docfactory import PROSE
from imagegen import SVG, animated_gif, encode, jpeg, photo, recompressed, resized
from mmcurate.filters import reasons
from mmcurate.pipeline.config import ExtractConfig, ImagesConfig, ReadConfig
from mmcurate.schemas import CapturedImage, Document, ImageNode, Provenance, TextNode
from mmcurate.schemas.arrow_rows import records_to_table
from mmcurate.schemas.tables import IMAGES, IMAGES_SCHEMA
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.engines.image_result import ImageResult, image_key
from mmcurate.stages.images import CurateImages
from mmcurate.stages.read import ReadWarc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "warc"
BOOKS = str(FIXTURES / "books.toscrape.warc")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def doc(doc_id: str, urls: list[str], date: str = "2024-05-01T00:00:00Z") -> Document:
    nodes = [TextNode(PROSE)] + [ImageNode(src=u, alt=f"alt {i}") for i, u in enumerate(urls)]
    return Document(
        doc_id=doc_id,
        url=f"https://site.example/{doc_id}",
        provenance=Provenance("test.warc.gz", f"<urn:uuid:{doc_id}>", date, 0),
        nodes=tuple(nodes),
    )


def captured(url: str, payload: bytes, content_type: str = "image/jpeg") -> CapturedImage:
    return CapturedImage(url=url, content_type=content_type, payload=payload, provenance=Provenance("img.warc.gz", f"<urn:{url}>"))


def counter(result, name: str) -> int:
    found = result.metrics().query(MetricsFilter().with_namespace("images").with_name(name))["counters"]
    return sum(c.committed or 0 for c in found)


def test_captured_images_come_from_the_warc_with_no_http_request():
    """books.toscrape.warc: one page, 20 covers captured in the same file. Its own
    URLs plus a hand-made document that spells them differently (host case, default
    port, percent-encoded unreserved characters) all resolve to the captures."""
    config = ImagesConfig(http=True, allowed_networks=("127.0.0.1/32",), min_side=90, no_images="keep_text_only")
    variant_url = "HTTP://Books.ToScrape.COM:80/%6Dedia/cache/2c/da/2cdad67c44b002e7ead0cc35693c0e8b.jpg"
    variant = doc("variant", [variant_url])
    p = TestPipeline()
    read = p | ReadWarc([BOOKS], ReadConfig())
    extracted = read.pages | ExtractDocuments(ExtractConfig(timeout_seconds=0))
    docs = (extracted.kept, p | "Variant" >> beam.Create([variant])) | beam.Flatten()
    result = docs | CurateImages(config, read.images)
    assert_that(
        result.kept | beam.Map(lambda d: (d.doc_id == "variant", len(d.image_nodes), all(n.image_id for n in d.image_nodes))),
        equal_to([(False, 20, True), (True, 1, True)]),
        label="kept",
    )
    assert_that(
        result.images | beam.Map(lambda r: (r.status, r.source, r.format, len(r.urls))),
        # Extraction makes URLs canonical; the hand-made spelling is kept as given and
        # names the same image: one row, both URLs.
        equal_to([("ok", "warc", "JPEG", 1)] * 19 + [("ok", "warc", "JPEG", 2)]),
        label="rows",
    )
    # The stored bytes are the captured payload: image_id is its sha256.
    assert_that(
        result.images
        | "Ids" >> beam.Map(lambda r: (r.image_id == sha(r.bytes), r.urls[0].endswith(".jpg"), r.provenance.warc_file == BOOKS)),
        equal_to([(True, True, True)] * 20),
        label="ids",
    )
    assert_that(
        result.kept
        | beam.Filter(lambda d: d.doc_id == "variant")
        | beam.Map(lambda d: (d.image_nodes[0].src.startswith("HTTP://"), d.image_nodes[0].width, d.image_nodes[0].height)),
        equal_to([(True, 125, 155)]),
        label="variant",
    )
    assert_that(result.rejected, equal_to([]), label="rejected")
    outcome = p.run()
    outcome.wait_until_finish()
    assert counter(outcome, "http.requests") == 0
    assert counter(outcome, "image.source.warc") == 21  # 20 covers, and the variant spelling of one
    assert counter(outcome, "image.captured_unused") == 0


# -- corpus-wide dedup and document rules on generated images -----------------------

P = {i: photo(i) for i in range(1, 10)}
BYTES = {f"p{i}": encode(img, "JPEG", quality=90) for i, img in P.items()}
BYTES["p1-resized"] = encode(resized(P[1], 0.8), "JPEG", quality=90)
BYTES["p4-recompressed"] = encode(recompressed(P[4], 40), "JPEG", quality=90)
BYTES["logo"] = jpeg(99, (200, 200))
BYTES["small"] = jpeg(50, (100, 100))
BYTES["wide"] = jpeg(51, (600, 200))
BYTES["svg"] = SVG
BYTES["anim"] = animated_gif()


def url(name: str) -> str:
    return f"https://img.example/{name}.jpg"


CAPTURED = [captured(url(name), data) for name, data in BYTES.items()] + [
    captured("https://mirror.example/p2-copy.jpg", BYTES["p2"]),
    captured("https://nobody.example/unused.jpg", BYTES["p9"]),
]

DOCS = [
    doc("a", [url("p1"), url("p2")], date="2024-01-01T00:00:00Z"),
    doc("b", [url("p1-resized"), url("p3")], date="2024-02-01T00:00:00Z"),
    doc("c", [url("p4"), url("p4-recompressed")]),
    doc("exact", ["https://mirror.example/p2-copy.jpg", url("anim")]),
    *[doc(f"logo{i}", [url("logo"), url(f"p{4 + i}")]) for i in range(1, 5)],
    doc("set-first", [url("p9"), url("p3")], date="2024-01-01T00:00:00Z"),
    doc("set-copy", [url("p3"), url("p9")], date="2024-03-01T00:00:00Z"),
    doc("uncaptured", ["https://elsewhere.example/x.jpg"]),
    doc("refused", [url("small"), url("wide"), url("svg")]),
    doc("data", ["data:image/png;base64,iVBORw0KGgo=", url("p2")]),
]

DEDUP_CONFIG = ImagesConfig(max_doc_frequency=3)


def test_dedup_and_document_rules_on_generated_images():
    p = TestPipeline()
    result = p | "Docs" >> beam.Create(DOCS) | CurateImages(DEDUP_CONFIG, p | "Captured" >> beam.Create(CAPTURED))
    checks = {}
    checks["kept"] = (
        result.kept | beam.Map(lambda d: (d.doc_id, tuple(n.src.rsplit("/", 1)[1] for n in d.image_nodes))),
        [
                ("a", ("p1.jpg", "p2.jpg")),
                ("b", ("p1-resized.jpg", "p3.jpg")),  # near-duplicate of a's p1, another document: kept
                ("c", ("p4.jpg",)),
                ("exact", ("p2-copy.jpg", "anim.jpg")),
                ("logo1", ("p5.jpg",)),
                ("logo2", ("p6.jpg",)),
                ("logo3", ("p7.jpg",)),
                ("logo4", ("p8.jpg",)),
                ("set-first", ("p9.jpg", "p3.jpg")),
                ("data", ("p2.jpg",)),
        ],
    )
    page_rows = result.rejected | "Pages" >> beam.Filter(lambda r: r.subject == "page")
    checks["pages"] = (
        page_rows | "PageReasons" >> beam.Map(lambda r: (r.doc_id, r.stage, r.reason, r.detail)),
        [
                ("set-copy", "images", reasons.IMAGE_DOCUMENT_DUPLICATE_SET, "survivor=set-first"),
                ("uncaptured", "images", reasons.IMAGE_DOCUMENT_NO_IMAGES, ""),
                ("refused", "images", reasons.IMAGE_DOCUMENT_NO_IMAGES, ""),
        ],
    )
    checks["page-errors"] = (result.errors | "PageErrors" >> beam.Filter(lambda r: r.subject == "page"), [])
    # Images not retrieved are failures (errors); refused images are rejections, and so
    # is an image in no WARC while images.http is off (the settings decided).
    image_rows = (result.rejected, result.errors) | "Decisions" >> beam.Flatten() | "Images" >> beam.Filter(lambda r: r.subject == "image")
    checks["image-decisions"] = (
        image_rows
        | "ImageReasons" >> beam.Map(lambda r: (r.kind, r.reason, r.doc_id if not r.url else r.url.rsplit("/", 1)[1][:12])),
        [
                ("rejected", reasons.IMAGE_NOT_CAPTURED, "x.jpg"),
                ("rejected", reasons.IMAGE_TOO_SMALL, "small.jpg"),
                ("rejected", reasons.IMAGE_ASPECT_RATIO, "wide.jpg"),
                ("rejected", reasons.IMAGE_SVG, "svg.jpg"),
                ("error", reasons.IMAGE_UNSUPPORTED_SCHEME, "png;base64,i"),
                ("rejected", reasons.IMAGE_DUPLICATE_IN_DOCUMENT, "p4-recompres"),
                ("rejected", reasons.IMAGE_TOO_FREQUENT, sha(BYTES["logo"])),
        ],
    )
    checks["in-document"] = (
        image_rows
        | "Dup" >> beam.Filter(lambda r: r.reason == reasons.IMAGE_DUPLICATE_IN_DOCUMENT)
        | beam.Map(lambda r: (r.value <= 5, r.threshold, "document c" in r.detail)),
        [(True, 5.0, True)],
    )
    rows = result.images | "Rows" >> beam.Map(
        lambda r: (
            tuple(u.rsplit("/", 1)[1] for u in r.urls),
            r.status,
            r.reason,
            r.doc_frequency,
            r.duplicate_of is not None,
            r.bytes is not None,
        )
    )
    # Of two near-duplicates, the one with the larger image_id names the other.
    def merged(name: str, other: str) -> bool:
        return sha(BYTES[name]) > sha(BYTES[other])

    expected_rows = [
        (("p1.jpg",), "ok", "", 2, merged("p1", "p1-resized"), True),
        (("p1-resized.jpg",), "ok", "", 2, merged("p1-resized", "p1"), True),
        (("p2.jpg", "p2-copy.jpg"), "ok", "", 3, False, True),  # exact: one row, both URLs
        (("p3.jpg",), "ok", "", 3, False, True),
        (("p4.jpg",), "ok", "", 1, merged("p4", "p4-recompressed"), True),
        (("p4-recompressed.jpg",), "ok", "", 1, merged("p4-recompressed", "p4"), True),
        (("p5.jpg",), "ok", "", 1, False, True),
        (("p6.jpg",), "ok", "", 1, False, True),
        (("p7.jpg",), "ok", "", 1, False, True),
        (("p8.jpg",), "ok", "", 1, False, True),
        (("p9.jpg",), "ok", "", 2, False, True),
        (("anim.jpg",), "ok", "", 1, False, True),
        (("logo.jpg",), "rejected", reasons.IMAGE_TOO_FREQUENT, 4, False, False),
        (("x.jpg",), "failed", reasons.IMAGE_NOT_CAPTURED, None, False, False),
        (("small.jpg",), "rejected", reasons.IMAGE_TOO_SMALL, None, False, False),
        (("wide.jpg",), "rejected", reasons.IMAGE_ASPECT_RATIO, None, False, False),
        (("svg.jpg",), "rejected", reasons.IMAGE_SVG, None, False, False),
        (("png;base64,iVBORw0KGgo=",), "failed", reasons.IMAGE_UNSUPPORTED_SCHEME, None, False, False),
    ]
    checks["rows"] = (rows, expected_rows)
    # Every row fits the images table's schema.
    checks["schema"] = (
        result.images | "Fits" >> beam.combiners.ToList() | beam.Map(lambda rs: records_to_table(rs, IMAGES).num_rows),
        [len(expected_rows)],
    )
    checks["animated"] = (
        result.kept
        | "FirstFrame" >> beam.Filter(lambda d: d.doc_id == "exact")
        | beam.Map(lambda d: (d.image_nodes[1].width, d.image_nodes[1].height, len(d.image_nodes[1].phash))),
        [(200, 200, 16)],
    )
    assert_outputs(checks)
    outcome = p.run()
    outcome.wait_until_finish()
    assert counter(outcome, "kept") == 10
    assert counter(outcome, f"rejected.{reasons.IMAGE_DOCUMENT_NO_IMAGES}") == 2
    assert counter(outcome, "image.captured_unused") == 1
    # Image counters equal the image rows: failures under image.errors, rejections under image.reason.
    assert counter(outcome, f"image.reason.{reasons.IMAGE_NOT_CAPTURED}") == 1
    assert counter(outcome, f"image.errors.{reasons.IMAGE_UNSUPPORTED_SCHEME}") == 1
    assert counter(outcome, f"image.reason.{reasons.IMAGE_TOO_SMALL}") == 1
    assert counter(outcome, f"image.errors.{reasons.IMAGE_NOT_CAPTURED}") == 0


def test_switches_off_near_duplicates_frequency_and_image_sets():
    config = ImagesConfig(max_doc_frequency=0, phash_max_distance=-1, dedup_image_sets=False)
    p = TestPipeline()
    result = p | "Docs" >> beam.Create(DOCS) | CurateImages(config, p | "Captured" >> beam.Create(CAPTURED))
    assert_that(
        result.kept | beam.Map(lambda d: (d.doc_id, len(d.image_nodes))),
        equal_to(
            [("a", 2), ("b", 2), ("c", 2), ("exact", 2), ("set-first", 2), ("set-copy", 2), ("data", 1)]
            + [(f"logo{i}", 2) for i in range(1, 5)]
        ),
    )
    p.run().wait_until_finish()


def test_image_decision_key_and_schema():
    result = ImageResult(url="https://x.example/a.jpg", status="failed", reason=reasons.IMAGE_NOT_CAPTURED)
    assert len(image_key(result)) == 32
    assert IMAGES_SCHEMA.field("bytes").type == pa.binary()


def test_store_path_writes_each_image_once(tmp_path):
    import pytest

    from mmcurate.pipeline.config import ConfigError, config_from_mapping

    with pytest.raises(ConfigError, match="image_dir"):
        config_from_mapping({"images": {"store": "path"}})
    config = ImagesConfig(store="path", image_dir=str(tmp_path / "img"))
    docs = [doc("a", [url("p1"), url("p2")]), doc("exact", ["https://mirror.example/p2-copy.jpg"])]
    p = TestPipeline()
    result = p | "Docs" >> beam.Create(docs) | CurateImages(config, p | "Captured" >> beam.Create(CAPTURED))
    assert_that(result.images | beam.Map(lambda r: (r.bytes, r.path.endswith(r.image_id + ".jpg"))), equal_to([(None, True)] * 2))
    p.run().wait_until_finish()
    stored = sorted(f.name for f in (tmp_path / "img").rglob("*.jpg"))
    assert stored == sorted(f"{sha(BYTES[n])}.jpg" for n in ("p1", "p2"))
    assert (tmp_path / "img" / sha(BYTES["p1"])[:2] / f"{sha(BYTES['p1'])}.jpg").read_bytes() == BYTES["p1"]


def test_a_capture_over_max_image_bytes_is_named_not_reported_uncaptured(tmp_path):
    """An image that *is* in the WARC but over read.max_image_bytes fails as
    image.capture_too_large with its size and the limit; one truly absent stays
    image.not_captured."""
    from warcbuild import WarcBuilder

    big = jpeg(7, (1600, 1200))
    small = jpeg(8, (400, 300))
    limit = len(big) - 1
    path = tmp_path / "big.warc.gz"
    with WarcBuilder.open(path) as warc:
        warc.image("https://img.example/big.jpg", big)
        warc.image("https://img.example/small.jpg", small)
    docs = [doc("d", ["https://img.example/big.jpg", "https://img.example/small.jpg", "https://img.example/absent.jpg"])]
    p = TestPipeline()
    read = p | ReadWarc([str(path)], ReadConfig(max_image_bytes=limit))
    result = p | beam.Create(docs) | CurateImages(ImagesConfig(), read.images)
    assert_that(
        (result.rejected, result.errors)
        | beam.Flatten()
        | beam.Filter(lambda r: r.subject == "image")
        | beam.Map(lambda r: (r.url.rsplit("/", 1)[1], r.kind, r.reason, r.value, r.threshold, r.provenance.warc_file == str(path))),
        equal_to(
            [
                ("big.jpg", "rejected", reasons.IMAGE_CAPTURE_TOO_LARGE, float(len(big)), float(limit), True),
                ("absent.jpg", "rejected", reasons.IMAGE_NOT_CAPTURED, None, None, False),
            ]
        ),
        label="image-rows",
    )
    assert_that(
        result.kept | beam.Map(lambda d: [n.src.rsplit("/", 1)[1] for n in d.image_nodes]),
        equal_to([["small.jpg"]]),
        label="kept",
    )
    p.run().wait_until_finish()
