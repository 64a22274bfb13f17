"""Images for the image-stage tests, generated with Pillow (deterministic by seed)."""

from __future__ import annotations

import io
import random
import struct
import zlib

from PIL import Image, ImageDraw, ImageFilter


def photo(seed: int, size: tuple[int, int] = (320, 240)) -> Image.Image:
    """A deterministic 'photo': a gradient with random ellipses and rectangles."""
    rng = random.Random(seed)
    w, h = size
    image = Image.new("RGB", size)
    top = tuple(rng.randrange(256) for _ in range(3))
    bottom = tuple(rng.randrange(256) for _ in range(3))
    draw = ImageDraw.Draw(image)
    for y in range(h):
        t = y / max(1, h - 1)
        draw.line([(0, y), (w, y)], fill=tuple(int(a + (b - a) * t) for a, b in zip(top, bottom)))
    for _ in range(12):
        x0, y0 = rng.randrange(w), rng.randrange(h)
        x1, y1 = x0 + rng.randrange(20, w // 2), y0 + rng.randrange(20, h // 2)
        colour = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([x0, y0, x1, y1], fill=colour)
    return image


def encode(image: Image.Image, fmt: str = "JPEG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def jpeg(seed: int, size: tuple[int, int] = (320, 240), quality: int = 90) -> bytes:
    return encode(photo(seed, size), "JPEG", quality=quality)


# Near-duplicates of an image, as the web makes them.
def resized(image: Image.Image, factor: float = 0.6) -> Image.Image:
    return image.resize((int(image.width * factor), int(image.height * factor)), Image.Resampling.LANCZOS)


def recompressed(image: Image.Image, quality: int = 40) -> Image.Image:
    return Image.open(io.BytesIO(encode(image, "JPEG", quality=quality)))


def grayscale(image: Image.Image) -> Image.Image:
    return image.convert("L").convert("RGB")


def blurred(image: Image.Image, radius: float = 1.5) -> Image.Image:
    return image.filter(ImageFilter.GaussianBlur(radius))


def cropped(image: Image.Image, fraction: float = 0.03) -> Image.Image:
    dx, dy = int(image.width * fraction), int(image.height * fraction)
    return image.crop((dx, dy, image.width - dx, image.height - dy))


def animated_gif(size: tuple[int, int] = (200, 200), frames: int = 3) -> bytes:
    images = [Image.new("RGB", size, (40 * i, 80, 120)) for i in range(frames)]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=100, loop=0)
    return buffer.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bomb(width: int = 65_535, height: int = 65_535) -> bytes:
    """A tiny PNG whose header claims ``width`` x ``height`` pixels (4.3 Gpx by default)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit greyscale
    idat = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="300" height="300"><rect width="300" height="300"/></svg>'
