"""The links of the images stage: what crosses its shuffles per (document, image
URL), and the decision rows of images repeated in a document, which are written
from the URL's whole result after the document verdicts."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.coders import typecoders
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from mmcurate.filters import reasons
from mmcurate.schemas import Provenance
from mmcurate.schemas.rows import STATUS_OK, STATUS_REJECTED
from mmcurate.stages.engines.image_result import ImageResult, image_decision
from mmcurate.stages.engines.phash_clusters import Cluster
from mmcurate.stages.image_documents import DuplicateRows, Link

URL = "https://news.example/wp-content/uploads/2024/05/harbour-at-dusk-1024x683.jpg"
RESULT = ImageResult(
    url=URL,
    status=STATUS_OK,
    source="warc",
    content_type="image/jpeg",
    image_id="ab" * 32,
    format="JPEG",
    width=1024,
    height=683,
    phash="c3a1f0e0d8c8b0a0",
    num_bytes=85_432,
    provenance=Provenance("crawl-00001.warc.gz", "<urn:uuid:0b7e1c52-1111-4b6a-9d1e-5a0c3f8e2d11>", "2024-05-01T12:00:00Z", 1234, 90_000),
    signals={"image.megapixels": 0.7},
)


def test_a_link_carries_the_verdicts_fields_and_its_cluster_through_the_wire():
    link = Link.of(URL, RESULT, None)
    assert link == (URL, STATUS_OK, RESULT.image_id, 1024, 683, RESULT.phash, None)
    clustered = Link.wire_in(link.wire(), Cluster("aa" * 32, 7))
    assert Link.from_wire(clustered) == link._replace(cluster=Cluster("aa" * 32, 7))
    refused = Link.of(URL, ImageResult(url=URL, status=STATUS_REJECTED, reason=reasons.IMAGE_TOO_SMALL), None)
    assert Link.from_wire(refused.wire()) == refused


def test_beams_default_coder_writes_a_link_field_by_field_not_pickled():
    # What the in-memory runner holds per link in its join buffers.
    coder = typecoders.registry.get_coder(object)
    wire = coder.encode(("u000000000042:r00017", Link.wire_in(Link.of(URL, RESULT, None).wire(), Cluster("aa" * 32, 7))))
    assert b"Link" not in wire and b"Cluster" not in wire and b"ImageResult" not in wire
    assert b"crawl-00001" not in wire  # the provenance stays with the URL's result
    assert coder.decode(wire)[1][6] == ("aa" * 32, 7)


def test_a_repeated_image_row_is_the_urls_result_with_each_documents_value():
    other = "https://news.example/other.jpg"
    requests = [
        (URL, (3, 5, "document a: same as image x (pHash distance 3)")),
        (URL, (0, 5, "document b: same as image y (pHash distance 0)")),
    ]
    results = [(URL, RESULT), (other, ImageResult(url=other, status=STATUS_OK, image_id="cd" * 32))]
    expected = [
        image_decision(RESULT, reasons.IMAGE_DUPLICATE_IN_DOCUMENT, 3, 5, detail="document a: same as image x (pHash distance 3)"),
        image_decision(RESULT, reasons.IMAGE_DUPLICATE_IN_DOCUMENT, 0, 5, detail="document b: same as image y (pHash distance 0)"),
    ]
    assert expected[0].provenance == RESULT.provenance and expected[0].signals == {"image.megapixels": 0.7}
    with TestPipeline() as p:
        rows = (p | "Requests" >> beam.Create(requests), p | "Results" >> beam.Create(results)) | DuplicateRows()
        assert_that(rows, equal_to(expected))
