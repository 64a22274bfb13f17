"""Reason codes of one image's decoding and validation (``stages.engines.image_decode.normalize_image``,
which every retrieval path calls) and of the images stage's document rules
(``stages.image_documents.document_filters``)."""

from __future__ import annotations

import dataclasses

from docfactory import PROSE, make_doc
from imagegen import SVG, animated_gif, encode, jpeg, photo, png_bomb
from mmcurate.filters import reasons
from mmcurate.schemas import ImageNode
from mmcurate.stages.config import ImagesConfig
from mmcurate.stages.engines.image_decode import normalize_image
from mmcurate.stages.image_documents import document_filters
from reason_cases import ReasonCase

DEFAULTS = ImagesConfig()

PAYLOADS = [
    ("an HTML page served as an image", b"<html>not an image</html>", DEFAULTS, reasons.IMAGE_NOT_AN_IMAGE),
    ("a JPEG cut after 300 bytes", jpeg(1)[:300], DEFAULTS, reasons.IMAGE_UNDECODABLE),
    ("a 65535 x 65535 PNG of a few bytes", png_bomb(), DEFAULTS, reasons.IMAGE_DECOMPRESSION_BOMB),
    ("a 1000 x 800 PNG over a 1 MB decode budget", encode(photo(5, (1000, 800)), "PNG"),
     ImagesConfig(decode_budget_bytes=1_000_000), reasons.IMAGE_DECODE_BUDGET),
    ("an SVG drawing", SVG, DEFAULTS, reasons.IMAGE_SVG),
    ("an animated GIF under images.animated=reject", animated_gif(), ImagesConfig(animated="reject"), reasons.IMAGE_ANIMATED),
    ("a BMP photo", encode(photo(6), "BMP"), DEFAULTS, reasons.IMAGE_FORMAT_NOT_ALLOWED),
    ("a 100 x 80 JPEG", jpeg(2, (100, 80)), DEFAULTS, reasons.IMAGE_TOO_SMALL),
    ("a 1200 x 900 JPEG over images.max_side=1000", jpeg(3, (1200, 900)), ImagesConfig(max_side=1000), reasons.IMAGE_TOO_LARGE),
    ("a 600 x 200 banner", jpeg(4, (600, 200)), DEFAULTS, reasons.IMAGE_ASPECT_RATIO),
]


def decoded(payload: bytes, config: ImagesConfig) -> list[str]:
    result = normalize_image("https://img.example/x", payload, config)
    return [result.reason] if result.reason else []


def retrieved(doc_id: str, images: int, words: str = PROSE):
    """A document whose ``images`` image nodes were all retrieved (they carry an id)."""
    doc = make_doc(doc_id, words, images=images)
    nodes = tuple(
        dataclasses.replace(n, image_id=f"{i:064x}") if isinstance(n, ImageNode) else n for i, n in enumerate(doc.nodes)
    )
    return dataclasses.replace(doc, nodes=nodes)


def document_rules(doc, config: ImagesConfig) -> list[str]:
    """The images stage's document rules, every one that rejects ``doc``."""
    return [v.reason for v in (f(doc) for f in document_filters(config)) if not v.keep]


DOCUMENTS = [
    ("no image retrieved", retrieved("i1", 0), DEFAULTS, reasons.IMAGE_DOCUMENT_NO_IMAGES),
    ("1 image retrieved, images.min_images=2", retrieved("i2", 1), ImagesConfig(min_images=2), reasons.IMAGE_DOCUMENT_TOO_FEW),
    ("31 images retrieved", retrieved("i3", 31), DEFAULTS, reasons.IMAGE_DOCUMENT_TOO_MANY),
    ("3 images for 12 words, images.min_words_per_image=10", retrieved("i4", 3, "Twelve words of text go with the three pictures on this page."),
     ImagesConfig(min_words_per_image=10), reasons.IMAGE_DOCUMENT_TOO_FEW_WORDS_PER_IMAGE),
]

CASES = [ReasonCase(code, what, lambda p=p, c=c: decoded(p, c)) for what, p, c, code in PAYLOADS] + [
    ReasonCase(code, what, lambda d=d, c=c: document_rules(d, c)) for what, d, c, code in DOCUMENTS
]
