"""Image rules: pure functions over what decoding measured, and over documents.

Image rules take an ``ImageInfo`` (what the header of a decoded image says) and
return a ``Verdict``; document rules take a ``Document`` whose image nodes carry
retrieval results. Thresholds are keyword arguments bound from ``ImagesConfig``.
The pHash Hamming distance is here too (its band keys are ``filters.lsh``): pure and small.

Defaults and their sources live in ``pipeline.config.ImagesConfig``: OBELICS
(Laurencon et al. 2023, sec. 4) keeps images with both sides in 150-20,000 px and
an aspect ratio of at most 2, and documents with at most 30 images; MMC4 (Zhu et
al. 2023) uses 150 px, aspect ratio 0.5-2 and pHash near-duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from mmcurate.filters import reasons
from mmcurate.filters.text import count_words
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document, ImageNode

# Signals the rules measure.
SIGNAL_WIDTH = "image.width"
SIGNAL_HEIGHT = "image.height"
SIGNAL_ASPECT = "image.aspect_ratio"
SIGNAL_PIXELS = "image.pixels"
SIGNAL_FRAMES = "image.frames"
SIGNAL_NUM_IMAGES = "images.count"
SIGNAL_WORDS_PER_IMAGE = "images.words_per_image"


@dataclass(frozen=True)
class ImageInfo:
    """What an image's header (and its first frame) tells, before any normalisation."""

    format: str  # Pillow's format name (JPEG, PNG, GIF, WEBP, ...), or SVG
    width: int
    height: int
    frames: int = 1


# ---------------------------------------------------------------------------------
# Magic bytes
# ---------------------------------------------------------------------------------

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"\x00\x00\x01\x00", "ICO"),
)


def sniff_format(head: bytes) -> str:
    """The image format the first bytes announce ("" for none we know).

    JPEG, PNG, GIF, WEBP, BMP, TIFF, ICO, AVIF/HEIF by their magic numbers; SVG by
    an ``<svg`` element (after an optional XML declaration, doctype or comments)."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return "AVIF"
        if brand in (b"heic", b"heix", b"mif1", b"msf1", b"hevc"):
            return "HEIF"
    text = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<?xml", b"<svg", b"<!doctype svg", b"<!--")) and b"<svg" in text:
        return "SVG"
    return ""


# ---------------------------------------------------------------------------------
# Image rules, cheapest first
# ---------------------------------------------------------------------------------


def pixel_limit(info: ImageInfo, *, max_pixels: int) -> Verdict:
    """A decompression bomb: more pixels than ``max_pixels`` (checked before decoding)."""
    pixels = info.width * info.height
    if pixels > max_pixels:
        return reject(reasons.IMAGE_DECOMPRESSION_BOMB, pixels, max_pixels, **{SIGNAL_PIXELS: pixels})
    return keep(**{SIGNAL_PIXELS: pixels})


def allowed_format(info: ImageInfo, *, formats: Iterable[str]) -> Verdict:
    if info.format not in formats:
        return reject(reasons.IMAGE_FORMAT_NOT_ALLOWED, None, None, detail=f"format={info.format}")
    return keep()


def animation_policy(info: ImageInfo, *, policy: str) -> Verdict:
    """Multi-frame images are refused when ``policy`` is "reject"."""
    if info.frames > 1 and policy == "reject":
        return reject(reasons.IMAGE_ANIMATED, info.frames, 1, **{SIGNAL_FRAMES: info.frames})
    return keep(**{SIGNAL_FRAMES: info.frames})


def side_bounds(info: ImageInfo, *, min_side: int, max_side: int) -> Verdict:
    signals = {SIGNAL_WIDTH: info.width, SIGNAL_HEIGHT: info.height}
    short, long = min(info.width, info.height), max(info.width, info.height)
    if short < min_side:
        return reject(reasons.IMAGE_TOO_SMALL, short, min_side, **signals)
    if long > max_side:
        return reject(reasons.IMAGE_TOO_LARGE, long, max_side, **signals)
    return keep(**signals)


def aspect_ratio(info: ImageInfo, *, max_ratio: float) -> Verdict:
    """max(w/h, h/w) at most ``max_ratio`` (2 keeps MMC4's 0.5-2 range)."""
    ratio = max(info.width, info.height) / max(1, min(info.width, info.height))
    if ratio > max_ratio:
        return reject(reasons.IMAGE_ASPECT_RATIO, ratio, max_ratio, **{SIGNAL_ASPECT: ratio})
    return keep(**{SIGNAL_ASPECT: ratio})


# ---------------------------------------------------------------------------------
# Document rules after retrieval
# ---------------------------------------------------------------------------------


def retrieved_images(doc: Document) -> list[ImageNode]:
    """Image nodes that hold a retrieved image (an image_id)."""
    return [n for n in doc.image_nodes if n.image_id]


def image_count(doc: Document, *, min_images: int, max_images: int, no_images: str) -> Verdict:
    """Bounds on retrieved images. A document with none is rejected or kept as text
    only (``no_images``); ``max_images`` 0 means no upper bound."""
    n = len(retrieved_images(doc))
    signals = {SIGNAL_NUM_IMAGES: n}
    if n == 0:
        if no_images == "reject":
            return reject(reasons.IMAGE_DOCUMENT_NO_IMAGES, 0, max(1, min_images), **signals)
        return keep(**signals)
    if n < min_images:
        return reject(reasons.IMAGE_DOCUMENT_TOO_FEW, n, min_images, **signals)
    if max_images and n > max_images:
        return reject(reasons.IMAGE_DOCUMENT_TOO_MANY, n, max_images, **signals)
    return keep(**signals)


def words_per_image(doc: Document, *, min_words_per_image: float) -> Verdict:
    """Image-to-text ratio: words of main text per retrieved image (Chinese, Japanese
    and Thai in dictionary words, ``count_words``). Documents without images are not measured."""
    n = len(retrieved_images(doc))
    if n == 0:
        return keep()
    ratio = count_words(doc.text) / n
    signals = {SIGNAL_WORDS_PER_IMAGE: ratio}
    if ratio < min_words_per_image:
        return reject(reasons.IMAGE_DOCUMENT_TOO_FEW_WORDS_PER_IMAGE, ratio, min_words_per_image, **signals)
    return keep(**signals)


# ---------------------------------------------------------------------------------
# Perceptual hashes
# ---------------------------------------------------------------------------------


def hamming(a: str, b: str) -> int:
    """Bits that differ between two hex-encoded hashes of the same length."""
    return bin(int(a, 16) ^ int(b, 16)).count("1")
