"""Decoding and normalising one payload: policies, limits, resize, re-encode, hashes."""

import hashlib
import io

import pytest
from PIL import Image

from imagegen import SVG, animated_gif, encode, jpeg, photo, png_bomb
from mmcurate.filters import reasons
from mmcurate.pipeline.config import ImagesConfig
from mmcurate.stages.imaging import STATUS_OK, STATUS_REJECTED, STATUS_SKIPPED, normalize_image

CONFIG = ImagesConfig()


def test_original_bytes_are_stored_and_measured():
    data = jpeg(3)
    result = normalize_image("u", data, CONFIG)
    assert result.status == STATUS_OK
    assert result.data == data and result.image_id == hashlib.sha256(data).hexdigest()
    assert (result.format, result.width, result.height, len(result.phash)) == ("JPEG", 320, 240, 16)


def test_resize_and_reencode():
    config = ImagesConfig(resize_max_side=160, reencode="WEBP", quality=80)
    result = normalize_image("u", jpeg(3), config)
    assert (result.format, result.width, result.height) == ("WEBP", 160, 120)
    assert Image.open(io.BytesIO(result.data)).format == "WEBP"
    assert result.image_id == hashlib.sha256(result.data).hexdigest()


def test_rgba_png_to_jpeg():
    image = photo(4).convert("RGBA")
    result = normalize_image("u", encode(image, "PNG"), ImagesConfig(reencode="JPEG"))
    assert result.status == STATUS_OK and result.format == "JPEG"


def test_exif_orientation_is_applied():
    image = photo(5, (320, 200))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    result = normalize_image("u", encode(image, "JPEG", exif=exif), CONFIG)
    assert (result.width, result.height) == (200, 320)


@pytest.mark.parametrize(
    "payload, config, status, reason",
    [
        (b"<html>not an image</html>", CONFIG, STATUS_REJECTED, reasons.IMAGE_NOT_AN_IMAGE),
        (jpeg(1)[:300], CONFIG, STATUS_REJECTED, reasons.IMAGE_UNDECODABLE),
        (png_bomb(), CONFIG, STATUS_REJECTED, reasons.IMAGE_DECOMPRESSION_BOMB),
        # Below Pillow's own limit, above ours: refused before any pixel is decoded.
        (png_bomb(5_000, 5_000), ImagesConfig(max_pixels=1_000_000), STATUS_REJECTED, reasons.IMAGE_DECOMPRESSION_BOMB),
        (SVG, CONFIG, STATUS_REJECTED, reasons.IMAGE_SVG),
        (SVG, ImagesConfig(svg="keep_url"), STATUS_SKIPPED, reasons.IMAGE_SVG),
        (animated_gif(), ImagesConfig(animated="reject"), STATUS_REJECTED, reasons.IMAGE_ANIMATED),
        (encode(photo(6), "BMP"), CONFIG, STATUS_REJECTED, reasons.IMAGE_FORMAT_NOT_ALLOWED),
    ],
)
def test_refusals_are_results_not_exceptions(payload, config, status, reason):
    result = normalize_image("u", payload, config)
    assert (result.status, result.reason) == (status, reason)
    assert result.image_id is None and result.data is None


def test_animated_policies():
    data = animated_gif()
    first = normalize_image("u", data, CONFIG)
    assert (first.status, first.format) == (STATUS_OK, "PNG") and first.data != data
    kept = normalize_image("u", data, ImagesConfig(animated="keep"))
    assert (kept.status, kept.format, kept.data) == (STATUS_OK, "GIF", data)
