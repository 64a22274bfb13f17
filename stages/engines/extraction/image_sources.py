"""What a browser shows for one ``<img>``: the URL it loads (``<picture>`` sources,
``srcset`` and ``sizes``, lazy-loading attributes, ``src``), the other candidates
in order of preference, and the chosen candidate's declared size."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from lxml import etree

from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.html_tree import http_url


_LAZY_ATTRIBUTES = ("data-src", "data-original", "data-lazy-src", "data-url")
_SRCSET_ATTRIBUTES = ("data-srcset", "srcset", "data-lazy-srcset")
_PLACEHOLDER_NAME = re.compile(r"blank|placeholder|spacer|lazy|1x1|pixel\.gif|transparent\.(?:gif|png)", re.IGNORECASE)
_DIMENSION_ATTR = re.compile(r"^\s*(\d+)(?:\.\d+)?\s*(?:px)?\s*$", re.IGNORECASE)
_STYLE_DIMENSION = {
    name: re.compile(rf"(?:^|[;\s]){name}\s*:\s*(\d+)(?:\.\d+)?\s*px\b", re.IGNORECASE) for name in ("width", "height")
}


def _is_placeholder(src: Optional[str]) -> bool:
    if not src or not src.strip():
        return True
    src = src.strip()
    if src.startswith("data:"):
        return True
    name = src.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return bool(_PLACEHOLDER_NAME.search(name))


def parse_srcset(value: str) -> list[tuple[str, str, float]]:
    """Candidates of a ``srcset`` as (url, descriptor kind, value): ``("a.jpg", "w",
    480.0)`` for a width descriptor, ``("b.jpg", "x", 2.0)`` for a density one; a
    candidate without a descriptor is density 1 (HTML, "parse a srcset attribute").
    A candidate with an unreadable descriptor is skipped."""
    candidates: list[tuple[str, str, float]] = []
    pos, n = 0, len(value)
    while pos < n:
        while pos < n and (value[pos].isspace() or value[pos] == ","):
            pos += 1
        start = pos
        while pos < n and not value[pos].isspace():
            pos += 1
        url = value[start:pos]
        descriptor = ""
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            d_start = pos
            while pos < n and value[pos] != ",":
                pos += 1
            descriptor = value[d_start:pos].strip().lower()
        if not url:
            continue
        kind, size = "x", 1.0
        try:
            for token in descriptor.split():
                if token.endswith("w"):
                    kind, size = "w", float(token[:-1])
                elif token.endswith("x"):
                    kind, size = "x", float(token[:-1])
        except ValueError:
            continue
        if size > 0:
            candidates.append((url, kind, size))
    return candidates


# <source media> and `sizes` conditions are judged for a browser window
# `srcset_viewport_width` CSS px wide.
_MEDIA_FEATURE = re.compile(r"\(\s*(min|max)-width\s*:\s*(\d+(?:\.\d+)?)\s*(px|em|rem)\s*\)", re.IGNORECASE)
_LENGTH = re.compile(r"(\d+(?:\.\d+)?)\s*(px|vw|em|rem)\s*$", re.IGNORECASE)
_FONT_PX = 16.0  # 1em in CSS px: browsers' default font size
# Formats a current browser does not decode (Chrome: no JPEG XL, no HEIF).
_UNSUPPORTED_TYPES = frozenset({"image/jxl", "image/heic", "image/heif"})


def _media_matches(media: str, viewport: float) -> bool:
    """Whether a media query holds for a screen ``viewport`` CSS px wide.

    ``min-width``/``max-width`` (px, em) joined by ``and`` are judged; ``all``,
    ``screen`` and an empty query hold; anything else (print, orientation, ``or``,
    ``not``, lists) does not."""
    media = media.strip().lower()
    if media.startswith("only "):
        media = media[5:]
    if not media:
        return True
    for part in (p.strip() for p in re.split(r"\band\b", media)):
        if part in ("all", "screen"):
            continue
        match = _MEDIA_FEATURE.fullmatch(part)
        if match is None:
            return False
        bound, number, unit = match.groups()
        px = float(number) * (1.0 if unit.lower() == "px" else _FONT_PX)
        if (bound.lower() == "min" and viewport < px) or (bound.lower() == "max" and viewport > px):
            return False
    return True


def _source_size(sizes: str, viewport: float, layout_width: Optional[int]) -> float:
    """The slot width in CSS px that ``sizes`` gives (HTML, "parse a sizes
    attribute"): the first entry whose media condition holds, else 100vw. ``auto``,
    and a missing ``sizes`` on an image with a declared width, give that width."""
    if not sizes.strip():
        return float(layout_width) if layout_width else viewport
    for entry in sizes.split(","):
        entry = entry.strip()
        if entry.lower() == "auto":
            return float(layout_width) if layout_width else viewport
        match = _LENGTH.search(entry)
        if match is None:
            continue  # calc() and lengths this reading does not evaluate
        condition = entry[: match.start()].strip()
        if condition and not _media_matches(condition, viewport):
            continue
        number, unit = float(match.group(1)), match.group(2).lower()
        if unit == "vw":
            return number * viewport / 100.0
        return number * (1.0 if unit == "px" else _FONT_PX)
    return viewport


@dataclass(frozen=True)
class _Candidate:
    url: str
    kind: str  # "w" or "x": the descriptor it came with
    density: float  # image pixels per CSS px of the slot
    width: Optional[float]  # image pixels, when known
    height: Optional[float]


def _candidates(
    srcset: str, sizes: str, base: str, viewport: float, width: Optional[int], height: Optional[int]
) -> list[_Candidate]:
    """A srcset's usable candidates with their density and size. A w descriptor is
    the width; the declared width and height give the rest (scaled by density)."""
    parsed = [(url, kind, size) for raw, kind, size in parse_srcset(srcset) if (url := http_url(raw, base))]
    if not parsed:
        return []
    slot = _source_size(sizes, viewport, width) if any(kind == "w" for _, kind, _ in parsed) else 0.0
    out = []
    for url, kind, size in parsed:
        if kind == "w":
            scaled_height = height * size / width if (height and width) else None
            out.append(_Candidate(url, kind, size / slot, size, scaled_height))
        else:
            out.append(_Candidate(url, kind, size, width * size if width else None, height * size if height else None))
    return out


def _choose(candidates: list[_Candidate], density: float) -> tuple[_Candidate, list[_Candidate]]:
    """The candidate a browser at ``density`` device pixels per CSS px loads -- the
    least dense at or above it, else the densest, so never beyond ``density`` when
    the page offers enough -- and the others in order of preference: the denser
    of the rest first up to the chosen one, then those above it, least dense first."""
    ordered = sorted(candidates, key=lambda c: c.density)
    chosen = next((c for c in ordered if c.density >= density - 1e-9), ordered[-1])
    below = [c for c in reversed(ordered) if c is not chosen and c.density <= chosen.density]
    above = [c for c in ordered if c.density > chosen.density]
    return chosen, below + above


@dataclass(frozen=True)
class ImageSource:
    """What a browser shows for one ``<img>``: the chosen URL, the other
    candidates (most preferred first) and the chosen candidate's size."""

    src: str
    candidates: tuple[str, ...] = ()
    width: Optional[int] = None
    height: Optional[int] = None


def _srcset_of(el: etree._Element) -> str:
    """The element's srcset that holds a real candidate (lazy-loading attributes
    first: a lazy loader writes the real set there and a placeholder in srcset)."""
    for attr in _SRCSET_ATTRIBUTES:
        value = el.get(attr)
        if value and any(not _is_placeholder(url) for url, _, _ in parse_srcset(value)):
            return value
    return ""


def _round(value: Optional[float]) -> Optional[int]:
    return int(round(value)) if value is not None else None


def image_source(img: etree._Element, base: str, config: ExtractConfig) -> ImageSource:
    """The URL a browser at ``srcset_density`` in a ``srcset_viewport_width`` window
    loads for ``img`` (``<picture>`` sources, ``srcset`` and ``sizes``, lazy-loading
    attributes, ``src``), the other candidates, and the chosen one's size."""
    width = declared_dimension(img, "width")
    height = declared_dimension(img, "height")
    src = img.get("src")
    plain = http_url(src, base) if not _is_placeholder(src) else ""
    for attr in _LAZY_ATTRIBUTES:
        if plain:
            break
        plain = http_url(img.get(attr), base)
    viewport = float(config.srcset_viewport_width)
    matching: list[list[_Candidate]] = []
    others: list[list[_Candidate]] = []
    # libxml2 does not know <source> is void, so the <img> may sit inside one.
    picture = next(img.iterancestors("picture"), None)
    if picture is not None:
        for source in picture.iter("source"):
            if (source.get("type") or "").strip().lower() in _UNSUPPORTED_TYPES:
                continue
            found = _candidates(_srcset_of(source), source.get("sizes") or "", base, viewport, width, height)
            if found:
                (matching if _media_matches(source.get("media") or "", viewport) else others).append(found)
    own = _candidates(_srcset_of(img), img.get("sizes") or "", base, viewport, width, height)
    if not own and not matching and not others:  # most images: src alone
        return ImageSource(plain or http_url(src, base), (), width, height)
    # HTML: src joins the img's own set as its 1x candidate unless the set has
    # width descriptors or a 1x candidate already.
    if plain and not any(c.kind == "w" or c.density == 1.0 for c in own):
        own.append(_Candidate(plain, "x", 1.0, width, height))
    sets = [*matching, own] if own else matching
    if not sets:
        return ImageSource(plain or http_url(src, base), (), width, height)
    chosen, rest = _choose(sets[0], config.srcset_density)
    ordered = [c.url for c in rest]
    ordered.append(plain)
    for other in (*sets[1:], *others):
        first, later = _choose(other, config.srcset_density)
        ordered.extend(c.url for c in (first, *later))
    seen = {chosen.url, ""}
    fallbacks = []
    for url in ordered:
        if url not in seen:
            seen.add(url)
            fallbacks.append(url)
    return ImageSource(chosen.url, tuple(fallbacks), _round(chosen.width), _round(chosen.height))


def declared_dimension(img: etree._Element, name: str) -> Optional[int]:
    match = _DIMENSION_ATTR.match(img.get(name) or "")
    if match:
        return int(match.group(1))
    match = _STYLE_DIMENSION[name].search(img.get("style") or "")
    if match:
        return int(match.group(1))
    return None
