"""Decoding and normalising one image's bytes, whatever their source.

``normalize_image(payload, config)`` checks the magic bytes, reads the header with
Pillow, refuses decompression bombs before decoding, applies the animated and SVG
policies and the image rules of ``filters.images``, then decodes, optionally
resizes and re-encodes, and measures what the images table stores: sha256 of the
stored bytes (the ``image_id``), format, width, height and a 64-bit pHash.

It never raises for bad input: a corrupt, truncated or hostile payload is an
``ImageResult`` whose status and reason say why (``image.not_an_image`` and
``image.undecodable`` are failures, the others a rule's refusal:
``image_result.reason_kind``). Beam-free, so tests and benchmarks call it
directly.

Memory: a JPEG that will be resized is decoded at the smallest DCT scale that still
covers ``resize_max_side`` (``Image.draft``), and resized in place (no copy). Every
decode first takes its decoded size from ``DecodeBudget``, shared by all threads of
the worker process (``images.decode_budget_bytes``): a page of huge images is
decoded a few at a time, never all at once, and one image larger than the whole
budget is refused as ``image.decode_budget``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import threading
import warnings
from functools import partial
from typing import Mapping

import imagehash
from PIL import Image, ImageOps

from mmcurate.filters import images as rules
from mmcurate.filters import reasons
from mmcurate.filters.verdict import Verdict
from mmcurate.stages.config import ImagesConfig
from mmcurate.schemas.rows import STATUS_OK, STATUS_REJECTED, STATUS_SKIPPED
from mmcurate.stages.engines.image_result import ImageResult

_ORIENTATION = 0x0112  # EXIF tag
_EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp", "TIFF": "tif", "ICO": "ico"}


class DecodeBudget:
    """Decoded bytes in flight in one process, shared by its threads: ``hold(n)``
    waits until ``n`` bytes fit under ``capacity``, and gives them back on exit."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.in_use = 0
        self.peak = 0  # the most held at once, for tests and benchmarks
        self._free = threading.Condition()

    @contextlib.contextmanager
    def hold(self, amount: int):
        if amount > self.capacity:
            raise ValueError(f"{amount} bytes can never fit a budget of {self.capacity}")
        with self._free:
            self._free.wait_for(lambda: self.in_use + amount <= self.capacity)
            self.in_use += amount
            self.peak = max(self.peak, self.in_use)
        try:
            yield
        finally:
            with self._free:
                self.in_use -= amount
                self._free.notify_all()


_BUDGETS: dict[int, DecodeBudget] = {}
_BUDGETS_LOCK = threading.Lock()


def decode_budget(capacity: int) -> DecodeBudget:
    """The process-wide budget of this capacity (one per worker process)."""
    with _BUDGETS_LOCK:
        budget = _BUDGETS.get(capacity)
        if budget is None:
            budget = _BUDGETS[capacity] = DecodeBudget(capacity)
        return budget


def decoded_bytes(image: Image.Image) -> int:
    """What decoding ``image`` at its (draft) size costs: Pillow keeps 1 byte a pixel
    for 1/L/P and 4 for the other modes, plus the 1-byte grey copy pHash makes."""
    width, height = image.size
    per_pixel = 1 if image.mode in ("1", "L", "P") else 4
    return width * height * (per_pixel + 1)


def extension(fmt: str) -> str:
    return _EXTENSIONS.get(fmt, fmt.lower() or "bin")


def _refused(url: str, verdict: Verdict, signals: Mapping[str, float], **extra) -> ImageResult:
    return ImageResult(
        url=url,
        status=STATUS_REJECTED,
        reason=verdict.reason,
        value=verdict.value,
        threshold=verdict.threshold,
        detail=verdict.detail,
        signals=dict(signals),
        **extra,
    )


def _undecodable(url: str, exc: Exception, **fields) -> ImageResult:
    """A payload Pillow could not decode (its header, or its pixel data): a failure."""
    detail = f"{type(exc).__name__}: {exc}"[:200]
    return ImageResult(url=url, status=STATUS_REJECTED, reason=reasons.IMAGE_UNDECODABLE, detail=detail, **fields)


def _encode(image: Image.Image, fmt: str, quality: int) -> bytes:
    if fmt == "JPEG" and image.mode not in ("RGB", "L", "CMYK"):
        image = image.convert("RGBA") if image.mode in ("P", "LA", "PA") else image
        if image.mode == "RGBA":
            background = Image.new("RGB", image.size, (255, 255, 255))
            background.paste(image, mask=image.getchannel("A"))
            image = background
        else:
            image = image.convert("RGB")
    buffer = io.BytesIO()
    options = {"quality": quality} if fmt in ("JPEG", "WEBP") else {}
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def normalize_image(url: str, payload: bytes, config: ImagesConfig, **extra) -> ImageResult:
    """Decode, validate and normalise ``payload``; ``extra`` fills source,
    content_type and provenance of the result."""
    signals: dict[str, float] = {}
    fmt = rules.sniff_format(payload[:1024])
    if not fmt:
        return ImageResult(
            url=url,
            status=STATUS_REJECTED,
            reason=reasons.IMAGE_NOT_AN_IMAGE,
            detail=f"first bytes {payload[:12]!r}",
            num_bytes=len(payload),
            **extra,
        )
    if fmt == "SVG":
        if config.svg == "keep_url":
            return ImageResult(url=url, status=STATUS_SKIPPED, reason=reasons.IMAGE_SVG, format="SVG", **extra)
        return ImageResult(url=url, status=STATUS_REJECTED, reason=reasons.IMAGE_SVG, format="SVG", **extra)
    try:
        with warnings.catch_warnings():
            # Our own pixel limit decides below; Pillow's warning would only be noise.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(payload))
            info = rules.ImageInfo(
                format=image.format or fmt,
                width=image.width,
                height=image.height,
                frames=getattr(image, "n_frames", 1),
            )
    except Image.DecompressionBombError as exc:
        return ImageResult(url=url, status=STATUS_REJECTED, reason=reasons.IMAGE_DECOMPRESSION_BOMB, detail=str(exc)[:200], **extra)
    except Exception as exc:  # Pillow raises many types for a bad header
        return _undecodable(url, exc, format=fmt, num_bytes=len(payload), **extra)
    checks = (
        partial(rules.pixel_limit, max_pixels=config.max_pixels),
        partial(rules.allowed_format, formats=config.formats),
        partial(rules.animation_policy, policy=config.animated),
        partial(rules.side_bounds, min_side=config.min_side, max_side=config.max_side),
        partial(rules.aspect_ratio, max_ratio=config.max_aspect_ratio),
    )
    measured = dict(format=info.format, width=info.width, height=info.height, num_bytes=len(payload))
    for check in checks:
        verdict = check(info)
        signals.update(verdict.signals)
        if not verdict.keep:
            return _refused(url, verdict, signals, **measured, **extra)
    resize_to = config.resize_max_side
    if resize_to and info.format == "JPEG" and max(info.width, info.height) > resize_to:
        # libjpeg decodes at 1/2, 1/4 or 1/8 scale, never below the box asked for.
        image.draft(image.mode, (resize_to, resize_to))
    need = decoded_bytes(image)
    budget = decode_budget(config.decode_budget_bytes)
    if need > budget.capacity:
        return ImageResult(
            url=url,
            status=STATUS_REJECTED,
            reason=reasons.IMAGE_DECODE_BUDGET,
            value=float(need),
            threshold=float(budget.capacity),
            detail=f"decoding needs {need} bytes; images.decode_budget_bytes={budget.capacity}",
            signals=signals,
            **measured,
            **extra,
        )
    with budget.hold(need):
        return _decode(url, payload, image, info, config, signals, measured, extra)


def _decode(url, payload, image, info, config, signals, measured, extra) -> ImageResult:
    """Decode, orient, resize, re-encode and hash (holding the decode budget)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image.seek(0)
            image.load()
            # EXIF orientation applied, so stored pixels look as the page showed them.
            rotated = image.getexif().get(_ORIENTATION, 1) not in (None, 1)
            oriented = ImageOps.exif_transpose(image) if rotated else image
            stored_format = info.format
            data = payload
            resize = config.resize_max_side and max(oriented.size) > config.resize_max_side
            first_frame = info.frames > 1 and config.animated == "first_frame"
            if resize or first_frame or config.reencode != "original" or rotated:
                if config.reencode != "original":
                    stored_format = config.reencode
                elif first_frame or stored_format not in ("JPEG", "PNG", "WEBP"):
                    stored_format = "PNG"
                if resize:
                    # In place: the full-size pixels are not needed afterwards.
                    oriented.thumbnail((config.resize_max_side, config.resize_max_side), Image.Resampling.LANCZOS)
                data = _encode(oriented, stored_format, config.quality)
            phash = str(imagehash.phash(oriented))
            width, height = oriented.size
    except Exception as exc:  # truncated or corrupt pixel data
        return _undecodable(url, exc, signals=signals, **measured, **extra)
    return ImageResult(
        url=url,
        status=STATUS_OK,
        image_id=hashlib.sha256(data).hexdigest(),
        format=stored_format,
        width=width,
        height=height,
        phash=phash,
        num_bytes=len(data),
        data=data,
        signals=signals,
        **extra,
    )
