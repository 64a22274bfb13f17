"""Image rules and image-aware document rules: one decision per fixture."""

from functools import partial

import pytest

from docfactory import PROSE
from mmcurate.filters import images as rules
from mmcurate.filters import lsh
from mmcurate.filters import reasons
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode

INFO = rules.ImageInfo(format="JPEG", width=640, height=480)

IMAGE_RULES = [
    partial(rules.pixel_limit, max_pixels=89_478_485),
    partial(rules.allowed_format, formats=("JPEG", "PNG", "WEBP", "GIF")),
    partial(rules.animation_policy, policy="reject"),
    partial(rules.side_bounds, min_side=150, max_side=20_000),
    partial(rules.aspect_ratio, max_ratio=2.0),
]


def first_rejection(info):
    for rule in IMAGE_RULES:
        verdict = rule(info)
        if not verdict.keep:
            return verdict
    return None


@pytest.mark.parametrize(
    "info, reason, value, threshold",
    [
        (rules.ImageInfo("PNG", 100_000, 100_000), reasons.IMAGE_DECOMPRESSION_BOMB, 1e10, 89_478_485),
        (rules.ImageInfo("BMP", 640, 480), reasons.IMAGE_FORMAT_NOT_ALLOWED, None, None),
        (rules.ImageInfo("GIF", 300, 300, frames=12), reasons.IMAGE_ANIMATED, 12, 1),
        (rules.ImageInfo("JPEG", 149, 400), reasons.IMAGE_TOO_SMALL, 149, 150),
        (rules.ImageInfo("JPEG", 20_001, 4_000), reasons.IMAGE_TOO_LARGE, 20_001, 20_000),
        (rules.ImageInfo("JPEG", 601, 300), reasons.IMAGE_ASPECT_RATIO, 601 / 300, 2.0),
        (rules.ImageInfo("JPEG", 150, 301), reasons.IMAGE_ASPECT_RATIO, 301 / 150, 2.0),
    ],
)
def test_image_rules(info, reason, value, threshold):
    verdict = first_rejection(info)
    assert (verdict.reason, verdict.value, verdict.threshold) == (reason, value, threshold)


def test_a_clean_image_is_kept_with_its_measures():
    assert first_rejection(INFO) is None
    assert rules.aspect_ratio(INFO, max_ratio=2.0).signals == {rules.SIGNAL_ASPECT: 640 / 480}
    # exactly 2:1 is within OBELICS' and MMC4's bound
    assert first_rejection(rules.ImageInfo("PNG", 300, 150)) is None


def test_animation_kept_under_the_other_policies():
    info = rules.ImageInfo("GIF", 300, 300, frames=3)
    assert rules.animation_policy(info, policy="first_frame").keep
    assert rules.animation_policy(info, policy="keep").keep


@pytest.mark.parametrize(
    "head, fmt",
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG"),
        (b"\x89PNG\r\n\x1a\n\x00", "PNG"),
        (b"GIF89a\x01\x00", "GIF"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "WEBP"),
        (b"\x00\x00\x00\x1cftypavif", "AVIF"),
        (b"BM6\x00", "BMP"),
        (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg">', "SVG"),
        (b"\xef\xbb\xbf  <svg width='1'>", "SVG"),
        (b"<!DOCTYPE html><html>", ""),
        (b"\x00\x01\x02\x03", ""),
    ],
)
def test_sniff_format(head, fmt):
    assert rules.sniff_format(head) == fmt


def doc_with(images: int, text: str = PROSE) -> Document:
    nodes = [TextNode(text)] + [
        ImageNode(src=f"https://x.example/{i}.jpg", image_id=f"{i:064x}", width=300, height=300, phash="0" * 16)
        for i in range(images)
    ]
    nodes.append(ImageNode(src="https://x.example/failed.jpg"))  # not retrieved: never counted
    return Document(doc_id="d", url="https://x.example/", provenance=Provenance("f.warc"), nodes=tuple(nodes))


COUNT = partial(rules.image_count, min_images=2, max_images=30, no_images="reject")


@pytest.mark.parametrize(
    "doc, rule, reason, value, threshold",
    [
        (doc_with(0), COUNT, reasons.IMAGE_DOCUMENT_NO_IMAGES, 0, 2),
        (doc_with(1), COUNT, reasons.IMAGE_DOCUMENT_TOO_FEW, 1, 2),
        (doc_with(31), COUNT, reasons.IMAGE_DOCUMENT_TOO_MANY, 31, 30),
        (
            doc_with(4, "one two three four five six seven eight"),
            partial(rules.words_per_image, min_words_per_image=5),
            reasons.IMAGE_DOCUMENT_TOO_FEW_WORDS_PER_IMAGE,
            2,
            5,
        ),
        # CJK text counts in words (港口 建 于 十八 世纪), not per space-separated run.
        (
            doc_with(2, "港口建于十八世纪"),
            partial(rules.words_per_image, min_words_per_image=5),
            reasons.IMAGE_DOCUMENT_TOO_FEW_WORDS_PER_IMAGE,
            2.5,
            5,
        ),
    ],
)
def test_document_rules(doc, rule, reason, value, threshold):
    verdict = rule(doc)
    assert (verdict.keep, verdict.reason, verdict.value, verdict.threshold) == (False, reason, value, threshold)


def test_document_rules_keep():
    assert COUNT(doc_with(2)).keep and COUNT(doc_with(2)).signals == {rules.SIGNAL_NUM_IMAGES: 2}
    assert rules.image_count(doc_with(0), min_images=1, max_images=30, no_images="keep_text_only").keep
    assert rules.image_count(doc_with(500), min_images=1, max_images=0, no_images="reject").keep
    assert rules.words_per_image(doc_with(0), min_words_per_image=5).keep


def test_hamming_and_band_keys_obey_the_pigeonhole():
    a = "f0f0f0f0f0f0f0f0"
    assert rules.hamming(a, a) == 0
    assert rules.hamming(a, "f0f0f0f0f0f0f0f1") == 1
    keys = lsh.band_keys(lsh.hex_bits(a), 6)
    assert len(keys) == 6 and len(set(k.split(":")[0] for k in keys)) == 6
    # Flip any 5 bits: at least one band is untouched, so a key is shared.
    value = int(a, 16)
    for bits in ((0, 1, 2, 3, 4), (0, 11, 22, 33, 44), (60, 61, 62, 63, 5), (10, 21, 32, 43, 53)):
        flipped = value
        for bit in bits:
            flipped ^= 1 << bit
        other = f"{flipped:016x}"
        assert rules.hamming(a, other) == 5
        assert set(lsh.band_keys(lsh.hex_bits(other), 6)) & set(keys)
    # k = 0: one band, the whole hash
    assert lsh.band_keys(lsh.hex_bits(a), 1) == ["0:f0f0f0f0f0f0f0f0"]
