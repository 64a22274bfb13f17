"""Matching image URLs to WARC captures: SURT capture keys, and srcset candidates
tried in order of preference."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import PROSE
from imagegen import jpeg
from mmcurate.filters import reasons
from mmcurate.pipeline.config import ImagesConfig
from mmcurate.schemas import CapturedImage, Document, ImageNode, Provenance, TextNode
from mmcurate.stages.image_retrieval import RetrieveImages, image_wants
from mmcurate.stages.images import CurateImages
from mmcurate.filters.url_forms import capture_key

WIKI = "https://upload.wikimedia.org/wikipedia/commons/thumb/e/ec"


@pytest.mark.parametrize(
    "page, archive",
    [
        # The page percent-encodes the comma, the crawler's request did not.
        (f"{WIKI}/Mona_Lisa%2C_by_Leonardo_da_Vinci.jpg/220px-Mona_Lisa%2C_by_Leonardo_da_Vinci.jpg",
         f"{WIKI}/Mona_Lisa,_by_Leonardo_da_Vinci.jpg/220px-Mona_Lisa,_by_Leonardo_da_Vinci.jpg"),
        ("http://www.example.com/img/a.jpg", "https://example.com/img/a.jpg"),
        ("https://EXAMPLE.com:443/img/a.jpg?b=2&a=1", "https://example.com/img/a.jpg?a=1&b=2"),
        ("https://example.com/img/caf%C3%A9.jpg", "https://example.com/img/café.jpg"),
        ("https://example.com/img/a.jpg#zoom", "https://example.com/img/a.jpg"),
    ],
)
def test_capture_key_matches_spellings_of_one_url(page, archive):
    assert capture_key(page) == capture_key(archive)


@pytest.mark.parametrize(
    "a, b",
    [
        ("https://example.com/img/a.jpg", "https://example.com/img/b.jpg"),
        ("https://example.com/img/a.jpg?w=200", "https://example.com/img/a.jpg?w=400"),
        ("https://cdn.example.com/a.jpg", "https://img.example.com/a.jpg"),
    ],
)
def test_capture_key_keeps_different_urls_apart(a, b):
    assert capture_key(a) != capture_key(b)


def _doc(doc_id: str, images: list[ImageNode]) -> Document:
    return Document(
        doc_id=doc_id,
        url=f"https://en.wikipedia.example/{doc_id}",
        provenance=Provenance("page.warc.gz", f"<urn:uuid:{doc_id}>", "2024-05-01T00:00:00Z", 0),
        nodes=(TextNode(PROSE), *images),
    )


def _captured(url: str, payload: bytes) -> CapturedImage:
    return CapturedImage(url=url, content_type="image/jpeg", payload=payload, provenance=Provenance("img.warc.gz", f"<urn:{url}>"))


ONE_X, TWO_X = jpeg(11, (220, 330)), jpeg(12, (440, 660))


def test_the_most_preferred_captured_candidate_is_taken():
    thumb = f"{WIKI}/Mona_Lisa%2C_by_Leonardo.jpg/{{w}}px-Mona_Lisa%2C_by_Leonardo.jpg"
    only_1x = ImageNode(src=thumb.format(w=440), candidates=(thumb.format(w=330), thumb.format(w=220)), alt="only 1x")
    other = f"{WIKI}/Other.jpg/{{w}}px-Other.jpg"
    both = ImageNode(src=other.format(w=440), candidates=(other.format(w=220),), alt="both")
    missing = ImageNode(src="https://img.example/none-2x.jpg", candidates=("https://img.example/none-1x.jpg",))
    captured = [
        # The archive holds the 1x file, spelled with a comma.
        _captured(thumb.format(w=220).replace("%2C", ","), ONE_X),
        _captured(other.format(w=220), ONE_X),
        _captured(other.format(w=440), TWO_X),
    ]
    p = TestPipeline()
    wants = p | "Docs" >> beam.Create([_doc("a", [only_1x, both, missing])]) | beam.FlatMap(image_wants)
    results = (wants, p | "Captured" >> beam.Create(captured)) | RetrieveImages(ImagesConfig(min_side=100))
    assert_that(
        results | beam.Map(lambda r: (r.url.rsplit("/", 1)[-1], r.status, r.reason, r.width, r.source_url.rsplit("/", 1)[-1])),
        equal_to(
            [
                ("440px-Mona_Lisa%2C_by_Leonardo.jpg", "ok", "", 220, "220px-Mona_Lisa%2C_by_Leonardo.jpg"),
                ("440px-Other.jpg", "ok", "", 440, ""),
                ("none-2x.jpg", "failed", reasons.IMAGE_NOT_CAPTURED, None, ""),
            ]
        ),
    )
    p.run().wait_until_finish()


def test_document_keeps_the_image_and_the_images_table_names_both_urls():
    thumb = f"{WIKI}/Mona_Lisa%2C_by_Leonardo.jpg/{{w}}px-Mona_Lisa%2C_by_Leonardo.jpg"
    node = ImageNode(src=thumb.format(w=440), candidates=(thumb.format(w=220),), alt="Mona Lisa", declared_width=440)
    captured = [_captured(thumb.format(w=220).replace("%2C", ","), ONE_X)]
    p = TestPipeline()
    docs = p | "Docs" >> beam.Create([_doc("a", [node])])
    result = docs | CurateImages(ImagesConfig(min_side=100), p | "Captured" >> beam.Create(captured))
    assert_that(
        result.kept | beam.Map(lambda d: [(n.src, n.width, n.height) for n in d.image_nodes]),
        equal_to([[(thumb.format(w=440), 220, 330)]]),
        label="kept",
    )
    assert_that(
        result.images | beam.Map(lambda r: (r.status, r.source, sorted(u.rsplit("/", 1)[-1] for u in r.urls))),
        equal_to([("ok", "warc", ["220px-Mona_Lisa%2C_by_Leonardo.jpg", "440px-Mona_Lisa%2C_by_Leonardo.jpg"])]),
        label="rows",
    )
    p.run().wait_until_finish()
