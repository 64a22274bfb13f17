"""Builds small Documents for filter and stage tests."""

from __future__ import annotations

from mmcurate.schemas import Document, ImageNode, Provenance, TextNode


def make_doc(
    doc_id: str,
    paragraphs: list[str] | str = (),
    images: int = 0,
    date: str = "2024-05-01T00:00:00Z",
    url: str | None = None,
) -> Document:
    """A document with the given paragraphs, then ``images`` image nodes."""
    if isinstance(paragraphs, str):
        paragraphs = [paragraphs]
    nodes: list = [TextNode(text=p) for p in paragraphs]
    nodes += [ImageNode(src=f"https://example.org/{doc_id}/{i}.jpg", alt=f"image {i}") for i in range(images)]
    return Document(
        doc_id=doc_id,
        url=url or f"https://example.org/{doc_id}",
        provenance=Provenance(warc_file="test.warc.gz", record_id=f"<urn:uuid:{doc_id}>", date=date, offset=0),
        nodes=tuple(nodes),
    )


PROSE = (
    "The harbour at the end of the valley was built in the eighteenth century, when the town "
    "still traded salt and timber with the cities along the coast. Fishing boats leave before "
    "dawn and return in the early afternoon, and the market on the quay sells what they bring "
    "back until the last crates are empty. Visitors who walk up the old road to the lighthouse "
    "can see the whole bay, the islands to the north and, on clear days, the mountains inland."
)
