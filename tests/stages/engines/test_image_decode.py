"""Decoding and normalising one payload: policies, limits, resize, re-encode, hashes."""

import hashlib
import io

import pytest
from PIL import Image

from imagegen import SVG, animated_gif, encode, jpeg, photo, png_bomb
from mmcurate.filters import reasons
from mmcurate.pipeline.config import ImagesConfig
from mmcurate.stages.engines.image_decode import normalize_image
from mmcurate.schemas.rows import STATUS_OK, STATUS_REJECTED, STATUS_SKIPPED

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


# -- decode budget: a page of huge images cannot exhaust a worker ----------------------------


def test_a_jpeg_to_be_resized_is_decoded_at_a_reduced_scale():
    from mmcurate.stages.engines.image_decode import decode_budget

    capacity = 123_456_789  # a budget of its own, so its peak is this test's alone
    config = ImagesConfig(resize_max_side=500, decode_budget_bytes=capacity)
    result = normalize_image("u", jpeg(4, (4000, 3000)), config)
    assert (result.status, result.width, result.height) == (STATUS_OK, 500, 375)
    # libjpeg decoded at 1/4 scale (1000 x 750, still covering 500 px): 4 bytes a
    # pixel plus pHash's grey copy, instead of 12 Mpx at full scale.
    assert decode_budget(capacity).peak == 1000 * 750 * 5
    assert decode_budget(capacity).in_use == 0


def test_an_image_larger_than_the_whole_budget_is_refused_before_decoding():
    config = ImagesConfig(decode_budget_bytes=1_000_000)
    result = normalize_image("u", encode(photo(5, (1000, 800)), "PNG"), config)
    assert (result.status, result.reason) == (STATUS_REJECTED, reasons.IMAGE_DECODE_BUDGET)
    assert (result.value, result.threshold) == (1000 * 800 * 5, 1_000_000)
    assert (result.width, result.height) == (1000, 800)  # measured from the header


def test_concurrent_decodes_wait_for_the_budget():
    """Four threads decode four PNGs that each need 40% of the budget: never more
    than two are decoded at once, and all four are stored."""
    import threading

    from mmcurate.stages.engines.image_decode import decode_budget

    payloads = [encode(photo(10 + i, (500, 400)), "PNG") for i in range(4)]
    need = 500 * 400 * 5
    capacity = int(need / 0.4)
    config = ImagesConfig(decode_budget_bytes=capacity)
    results = [None] * 4

    def work(i: int) -> None:
        results[i] = normalize_image(f"u{i}", payloads[i], config)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status for r in results] == [STATUS_OK] * 4
    budget = decode_budget(capacity)
    assert need <= budget.peak <= 2 * need < capacity and budget.in_use == 0


def test_the_budget_makes_a_second_holder_wait_until_the_first_gives_back():
    import threading

    from mmcurate.stages.engines.image_decode import DecodeBudget

    budget = DecodeBudget(10)
    first_in, second_in, release = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with budget.hold(6):
            first_in.set()
            release.wait(5)

    def second() -> None:
        first_in.wait(5)
        with budget.hold(6):
            second_in.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert first_in.wait(5)
    assert not second_in.wait(0.3)  # 6 + 6 > 10: it waits
    release.set()
    assert second_in.wait(5)
    for thread in threads:
        thread.join()
    assert (budget.in_use, budget.peak) == (0, 6)
    with pytest.raises(ValueError):
        with budget.hold(11):
            pass
