"""Main-content extraction behind one small interface.

An extractor is a callable ``(html, url, config) -> Extraction``: the page's main
content as nodes in reading order (text blocks and images), its title, its
``hreflang`` alternates and a few page facts. ``load_extractor`` resolves the name
in ``ExtractConfig.extractor``: ``"trafilatura"`` or a dotted path
``"package.module:callable"``, so a faster extractor can replace this one without
touching the stage.

``extract_trafilatura`` takes the text from trafilatura (its XML tree) and does its
own DOM work for images, because trafilatura's image support has gaps: it reads
neither ``srcset`` nor ``<picture>``, keeps only URLs ending in an image
extension, and drops images that sit outside the blocks it keeps (a product grid's
covers, a hero image before the first paragraph). So, on a parsed copy of the page:

1. Before trafilatura, every ``<img>`` is normalised: its URL is resolved against
   ``<base href>`` and the page URL; a missing or placeholder ``src`` (``data:``
   URIs, 1x1 gifs, "blank"/"placeholder"/"spacer"/"lazy" names) is replaced by the
   first usable lazy-load attribute or the largest ``srcset`` / ``<picture>``
   candidate. Images with no usable http(s) URL and declared 1x1 pixels are
   removed. Each image's alt, ``<figcaption>``, title and declared size are
   recorded with its position in document order.
2. trafilatura extracts the main content. Each text block it returns is located
   in the page's text (whitespace-insensitive, in order), which gives its DOM
   position; each image it kept is matched to its DOM record by URL.
3. With ``recover_images``, images trafilatura dropped are put back at their DOM
   position when they lie in the main content: between the first and last located
   text block, or within ``recover_lead_chars`` / ``recover_trail_chars`` of
   unextracted text before the first / after the last block inside the blocks'
   common ancestor. Images inside nav, aside, form, header or footer are never
   recovered (header and footer only when they are not part of an article or
   main), unless the main content itself sits inside that element. When
   trafilatura keeps no text at all, every image outside those regions is
   recovered, so a page with pictures and little text keeps its pictures.

Lists give one text node per item (tag ``li``): a page's list items are the unit
that node-level cleanup and image interleaving work on. A table gives one node
(tag ``table``) whose lines are its rows, cells separated by `` | ``.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional
from urllib.parse import urljoin, urlsplit

from lxml import etree
from lxml import html as lxml_html

from mmcurate.stages.config import ExtractConfig
from mmcurate.schemas import ImageNode, Node, TextNode
from mmcurate.filters.url_forms import capture_key

log = logging.getLogger(__name__)

TRAFILATURA = "trafilatura"


@dataclass(frozen=True)
class Extraction:
    """What an extractor returns for one page."""

    nodes: tuple[Node, ...] = ()
    title: str = ""
    # (language, absolute URL) pairs from <link rel="alternate" hreflang=...>.
    hreflang: tuple[tuple[str, str], ...] = ()
    # Page facts found on the way (html_lang, author, date, sitename, ...).
    metadata: Mapping[str, str] = field(default_factory=dict)


Extractor = Callable[[str, str, ExtractConfig], Extraction]


def load_extractor(name: str) -> Extractor:
    """The extractor named ``"trafilatura"`` or by a dotted path ``"pkg.module:callable"``."""
    if name == TRAFILATURA:
        return extract_trafilatura
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"extractor {name!r}: expected {TRAFILATURA!r} or a dotted path 'package.module:callable'")
    module = importlib.import_module(module_name)
    target: object = module
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"extractor {name!r} is not callable")
    return target


# ---------------------------------------------------------------------------
# Page parsing and image normalisation

# Subtrees whose text is not page content and whose images are not shown.
_SKIP_SUBTREES = frozenset({"head", "script", "style", "noscript", "template", "svg", "math", "iframe", "object"})
# Regions whose images are never recovered.
_BOILERPLATE_TAGS = frozenset({"nav", "aside", "form"})
_SECTION_BOUNDED_TAGS = frozenset({"header", "footer"})  # boilerplate unless inside article/main
_BOILERPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_LAZY_ATTRIBUTES = ("data-src", "data-original", "data-lazy-src", "data-url")
_SRCSET_ATTRIBUTES = ("data-srcset", "srcset", "data-lazy-srcset")
_PLACEHOLDER_NAME = re.compile(r"blank|placeholder|spacer|lazy|1x1|pixel\.gif|transparent\.(?:gif|png)", re.IGNORECASE)
_DIMENSION_ATTR = re.compile(r"^\s*(\d+)(?:\.\d+)?\s*(?:px)?\s*$", re.IGNORECASE)
_STYLE_DIMENSION = {
    name: re.compile(rf"(?:^|[;\s]){name}\s*:\s*(\d+)(?:\.\d+)?\s*px\b", re.IGNORECASE) for name in ("width", "height")
}
_WHITESPACE = re.compile(r"\s+")


def _squash(text: Optional[str]) -> str:
    """Whitespace collapsed to single spaces, stripped."""
    return " ".join(text.split()) if text else ""


def _tag(el: etree._Element) -> str:
    """The element's tag name ("" for comments and the like). libxml2's HTML parser
    writes tag names in lower case."""
    tag = el.tag
    return tag if isinstance(tag, str) else ""


class _ImageRecord:
    """One ``<img>`` of the page at its place in document order. What it shows (URL,
    candidates, size) is worked out on first use: most images of a page (menus,
    sidebars, footers) are never looked at."""

    __slots__ = ("element", "order", "flat_offset", "_base", "_config", "_source")

    def __init__(self, element: etree._Element, order: int, flat_offset: int, base: str, config: ExtractConfig):
        self.element = element
        self.order = order  # position among the walk's events (document order)
        self.flat_offset = flat_offset  # page text (whitespace removed) before the image
        self._base = base
        self._config = config
        self._source: Optional[_ImageSource] = None

    @property
    def source(self) -> "_ImageSource":
        if self._source is None:
            self._source = _image_source(self.element, self._base, self._config)
        return self._source

    @property
    def usable(self) -> bool:
        """An http(s) URL, and not a declared 1x1 pixel."""
        if not self.source.src:
            return False
        width = _declared_dimension(self.element, "width")
        height = _declared_dimension(self.element, "height")
        return not (width is not None and height is not None and width <= 1 and height <= 1)

    @property
    def src(self) -> str:
        return self.source.src

    @property
    def candidates(self) -> tuple[str, ...]:
        return self.source.candidates

    @property
    def declared_width(self) -> Optional[int]:
        return self.source.width

    @property
    def declared_height(self) -> Optional[int]:
        return self.source.height

    @property
    def alt(self) -> str:
        return _squash(self.element.get("alt"))

    def node(self) -> ImageNode:
        source = self.source
        return ImageNode(
            src=source.src,
            candidates=source.candidates,
            alt=self.alt,
            caption=_caption(self.element),
            title=_squash(self.element.get("title")),
            declared_width=source.width,
            declared_height=source.height,
        )


@dataclass
class _PageIndex:
    """The page's text with whitespace removed, and where each piece of it sits."""

    flat: str = ""
    piece_starts: list[int] = field(default_factory=list)
    piece_orders: list[int] = field(default_factory=list)
    piece_owners: list[etree._Element] = field(default_factory=list)
    images: list[_ImageRecord] = field(default_factory=list)

    def locate(self, flat_offset: int) -> int:
        """Index of the text piece that holds ``flat_offset``."""
        lo, hi = 0, len(self.piece_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.piece_starts[mid] <= flat_offset:
                lo = mid
            else:
                hi = mid - 1
        return lo


_PARSERS = threading.local()


def _html_parser() -> etree.HTMLParser:
    """An HTML parser (one per thread: lxml parsers are not thread-safe) that drops
    comments and processing instructions -- React's ``<!-- -->`` markers split text
    nodes, and trafilatura loses the text after them -- and gives every element
    lxml.html's ``HtmlElement`` class through a lookup done in C. lxml.html's own
    parser looks each element's class up in Python (a ``<form>`` becomes a
    ``FormElement``), which cost 12% of extraction; nothing here or in trafilatura
    uses those subclasses."""
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
        parser.set_element_class_lookup(
            etree.ElementDefaultClassLookup(
                element=lxml_html.HtmlElement,
                comment=lxml_html.HtmlComment,
                pi=lxml_html.HtmlProcessingInstruction,
                entity=lxml_html.HtmlEntity,
            )
        )
        _PARSERS.parser = parser
    return parser


def _parse_html(html: str) -> Optional[lxml_html.HtmlElement]:
    data = html.replace("\x00", "").encode("utf-8", "replace")
    if not data.strip():
        return None
    try:
        root = lxml_html.document_fromstring(data, parser=_html_parser())
    except etree.ParserError:
        return None
    return root


def _http_url(value: Optional[str], base: str) -> str:
    """``value`` resolved against ``base`` when it is an http(s) URL, else ""."""
    if not value:
        return ""
    value = value.strip()
    if not value or value.startswith(("data:", "javascript:", "about:", "blob:")):
        return ""
    try:
        absolute = urljoin(base, value)
        parts = urlsplit(absolute)
    except ValueError:
        return ""
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ""
    return absolute


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
    parsed = [(url, kind, size) for raw, kind, size in parse_srcset(srcset) if (url := _http_url(raw, base))]
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
class _ImageSource:
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


def _image_source(img: etree._Element, base: str, config: ExtractConfig) -> _ImageSource:
    """The URL a browser at ``srcset_density`` in a ``srcset_viewport_width`` window
    loads for ``img`` (``<picture>`` sources, ``srcset`` and ``sizes``, lazy-loading
    attributes, ``src``), the other candidates, and the chosen one's size."""
    width = _declared_dimension(img, "width")
    height = _declared_dimension(img, "height")
    src = img.get("src")
    plain = _http_url(src, base) if not _is_placeholder(src) else ""
    for attr in _LAZY_ATTRIBUTES:
        if plain:
            break
        plain = _http_url(img.get(attr), base)
    viewport = float(config.srcset_viewport_width)
    matching: list[list[_Candidate]] = []
    others: list[list[_Candidate]] = []
    # libxml2 does not know <source> is void, so the <img> may sit inside one.
    picture = next((a for a in img.iterancestors() if _tag(a) == "picture"), None)
    if picture is not None:
        for source in picture.iter("source"):
            if (source.get("type") or "").strip().lower() in _UNSUPPORTED_TYPES:
                continue
            found = _candidates(_srcset_of(source), source.get("sizes") or "", base, viewport, width, height)
            if found:
                (matching if _media_matches(source.get("media") or "", viewport) else others).append(found)
    own = _candidates(_srcset_of(img), img.get("sizes") or "", base, viewport, width, height)
    # HTML: src joins the img's own set as its 1x candidate unless the set has
    # width descriptors or a 1x candidate already.
    if plain and not any(c.kind == "w" or c.density == 1.0 for c in own):
        own.append(_Candidate(plain, "x", 1.0, width, height))
    sets = [*matching, own] if own else matching
    if not sets:
        return _ImageSource(plain or _http_url(src, base), (), width, height)
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
    return _ImageSource(chosen.url, tuple(fallbacks), _round(chosen.width), _round(chosen.height))


def _declared_dimension(img: etree._Element, name: str) -> Optional[int]:
    match = _DIMENSION_ATTR.match(img.get(name) or "")
    if match:
        return int(match.group(1))
    match = _STYLE_DIMENSION[name].search(img.get("style") or "")
    if match:
        return int(match.group(1))
    return None


# Screen-reader-only labels ("Image caption", "Image copyright"): Bootstrap's
# sr-only / visually-hidden, WordPress's screen-reader-text, BBC's off-screen.
_SCREEN_READER_ONLY = re.compile(r"(?:^|\s)(?:sr-only|visually-hidden|screen-reader-text|off-screen|offscreen)(?:\s|$)")


def _visible_text(el: etree._Element) -> str:
    """Text of ``el`` with its elements' texts kept apart (spans do not run into
    each other) and screen-reader-only labels left out."""
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        if _SCREEN_READER_ONLY.search(node.get("class") or ""):
            return
        parts.append(node.text or "")
        for child in node:
            if isinstance(child.tag, str):
                walk(child)
            parts.append(child.tail or "")
            parts.append(" ")

    walk(el)
    return _squash(" ".join(parts))


def _caption(img: etree._Element) -> str:
    for ancestor in img.iterancestors():
        if _tag(ancestor) == "figure":
            for caption in ancestor.iter("figcaption"):
                return _visible_text(caption)
            return ""
    return ""


def _document_base(root: etree._Element, url: str) -> str:
    for base in root.iter("base"):
        href = base.get("href")
        if href:
            resolved = _http_url(href, url)
            if resolved:
                return resolved
    return url


def _index_page(root: etree._Element, base: str, config: ExtractConfig) -> _PageIndex:
    """Walks the page once in document order: its text pieces (whitespace removed),
    each with its position and owner element, and its images."""
    index = _PageIndex()
    chunks: list[str] = []
    starts, orders, owners = index.piece_starts, index.piece_orders, index.piece_owners
    images = index.images
    skip = _SKIP_SUBTREES
    offset = 0
    order = 0
    # The page is parsed without comments and processing instructions, and libxml2
    # writes tag names in lower case.
    walker = etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        order += 1
        if event == "start":
            tag = el.tag
            if tag in skip:
                walker.skip_subtree()
                continue
            if tag == "img":
                images.append(_ImageRecord(el, order, offset, base, config))
                continue
            text = el.text
            owner = el
        else:
            text = el.tail
            owner = el.getparent()
            if owner is None:
                continue
        if text:
            squeezed = "".join(text.split())
            if squeezed:
                starts.append(offset)
                orders.append(order)
                owners.append(owner)
                chunks.append(squeezed)
                offset += len(squeezed)
    index.flat = "".join(chunks)
    return index


def _title(root: etree._Element) -> str:
    for title in root.iter("title"):
        text = _squash(title.text_content())
        if text:
            return text
    return ""


def _hreflang(root: etree._Element, base: str) -> tuple[tuple[str, str], ...]:
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for link in root.iter("link"):
        lang = (link.get("hreflang") or "").strip()
        rel = (link.get("rel") or "").lower().split()
        if not lang or "alternate" not in rel:
            continue
        href = _http_url(link.get("href"), base)
        if href and (lang, href) not in seen:
            seen.add((lang, href))
            out.append((lang, href))
    return tuple(out)


# ---------------------------------------------------------------------------
# trafilatura's tree to nodes

_HEAD_LEVELS = {f"h{i}" for i in range(1, 7)}
_INLINE_TAGS = frozenset({"hi", "ref", "del", "span", "abbr", "note"})
_CONTEXT_TAGS = frozenset({"blockquote", "li", "pre"})


@dataclass
class _Item:
    """A text node in trafilatura's order, with what locating it in the page needs."""

    node: TextNode
    needle: str = ""  # text to look for in the page (whitespace removed)
    order: Optional[int] = None  # DOM position of its start once located
    end_order: Optional[int] = None  # DOM position of its end
    owner: Optional[etree._Element] = None  # the elements holding its start and end
    end_owner: Optional[etree._Element] = None
    start_offset: int = -1  # where its text starts and ends in the page text
    end_offset: int = -1


def _clean_text(text: str, tag: str) -> str:
    if tag == "pre":
        lines = [line.rstrip() for line in text.split("\n")]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines)
    return "\n".join(s for s in (_squash(line) for line in text.split("\n")) if s)


def _inline_text(el: etree._Element) -> str:
    parts = [el.text or ""]
    for child in el:
        if child.tag == "lb":
            parts.append("\n")
        elif child.tag != "graphic":
            parts.append(_inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


class _NodeBuilder:
    """Turns trafilatura's XML body into items in reading order."""

    def __init__(self) -> None:
        self.items: list[_Item] = []

    def text(self, raw: str, tag: str, needle_text: Optional[str] = None) -> None:
        text = _clean_text(raw, tag)
        if text:
            needle = _WHITESPACE.sub("", needle_text if needle_text is not None else text)
            self.items.append(_Item(node=TextNode(text=text, tag=tag), needle=needle))

    def block(self, el: etree._Element, tag: str) -> None:
        """Inline content of ``el`` as ``tag`` nodes, split around nested blocks."""
        buffer = [el.text or ""]
        for child in el:
            child_tag = child.tag
            if child_tag == "lb":
                buffer.append("\n")
            elif child_tag in _INLINE_TAGS or not isinstance(child_tag, str):
                buffer.append(_inline_text(child) if isinstance(child_tag, str) else "")
            else:
                self.text("".join(buffer), tag)
                buffer = []
                self.dispatch(child, tag)
            buffer.append(child.tail or "")
        self.text("".join(buffer), tag)

    def dispatch(self, el: etree._Element, context: str) -> None:
        tag = el.tag
        if tag == "p":
            self.block(el, context if context in _CONTEXT_TAGS else "p")
        elif tag == "head":
            rend = (el.get("rend") or "").lower()
            self.block(el, rend if rend in _HEAD_LEVELS else "h2")
        elif tag == "item":
            self.block(el, "li")
        elif tag == "quote":
            self.block(el, "blockquote")
        elif tag == "code":
            self.block(el, "pre")
        elif tag == "table":
            self.table(el)
        elif tag == "list":
            self.block(el, "li")
        else:
            self.block(el, context)

    def table(self, el: etree._Element) -> None:
        rows: list[str] = []
        needle: Optional[str] = None
        for row in el.iter("row"):
            cells = [_squash(_inline_text(cell)) for cell in row if cell.tag == "cell"]
            line = " | ".join(c for c in cells if c)
            if line:
                rows.append(line)
                if needle is None:
                    needle = next(c for c in cells if c)
        self.text("\n".join(rows), "table", needle)


# ---------------------------------------------------------------------------
# Locating trafilatura's output in the page and recovering images


# How far past the previous block a block's text is looked for, in characters: it
# bounds the cost of blocks that trafilatura rewrote beyond recognition.
_SEARCH_WINDOW = 1_000_000


def _locate_text(items: list[_Item], index: _PageIndex) -> None:
    """Finds each text block in the page text, in order: its prefix, then a shorter one."""
    cursor = 0
    for item in items:
        if not item.needle or not index.piece_starts:
            continue
        found = -1
        for length in (64, 16):
            needle = item.needle[:length]
            found = index.flat.find(needle, cursor, cursor + _SEARCH_WINDOW + len(needle))
            if found >= 0:
                break
        if found < 0:
            continue
        end = found + min(len(item.needle), len(index.flat) - found)
        if not index.flat.startswith(item.needle, found):
            end = found + len(needle)
        start_piece, end_piece = index.locate(found), index.locate(end - 1)
        item.order, item.end_order = index.piece_orders[start_piece], index.piece_orders[end_piece]
        item.owner, item.end_owner = index.piece_owners[start_piece], index.piece_owners[end_piece]
        item.start_offset, item.end_offset = found, end
        cursor = max(cursor, item.end_offset)


def _common_ancestor(elements: list[etree._Element]) -> Optional[etree._Element]:
    if not elements:
        return None
    chain = [elements[0], *elements[0].iterancestors()]
    depth_of = {id(el): depth for depth, el in enumerate(chain)}
    best = 0
    for el in elements[1:]:
        for candidate in (el, *el.iterancestors()):
            depth = depth_of.get(id(candidate))
            if depth is not None:
                best = max(best, depth)
                break
    return chain[best]


def _in_boilerplate(element: etree._Element, content_root: Optional[etree._Element]) -> bool:
    """Whether ``element`` sits in nav/aside/form/header/footer below ``content_root``."""
    ancestors = list(element.iterancestors())
    stop = len(ancestors)
    if content_root is not None:
        for i, ancestor in enumerate(ancestors):
            if ancestor is content_root:
                stop = i
                break
    sectioned = any(_tag(a) in ("article", "main") for a in ancestors)
    for ancestor in ancestors[:stop]:
        tag = _tag(ancestor)
        if tag in _BOILERPLATE_TAGS:
            return True
        if tag in _SECTION_BOUNDED_TAGS and not sectioned:
            return True
        if (ancestor.get("role") or "").lower() in _BOILERPLATE_ROLES:
            return True
    return False


# Elements that hold text rather than contain blocks.
_TEXT_BLOCK_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "blockquote", "pre", "td", "th", "caption"}
    | {"figcaption", "a", "span", "b", "i", "em", "strong", "small", "font", "label", "code", "sup", "sub"}
)


def _is_descendant(element: etree._Element, ancestor: etree._Element) -> bool:
    return any(a is ancestor for a in element.iterancestors())


def _place_images(items: list[_Item], index: _PageIndex, config: ExtractConfig, lead: "_LeadHints") -> list[_ImageRecord]:
    """The page's images that belong to the main content (see the module docstring)."""
    images = index.images
    if not images:
        return []
    located = [item for item in items if item.order is not None]
    if not items:
        return [r for r in images if not _in_boilerplate(r.element, None) and r.usable]
    if not located:
        return []
    first_order = min(item.order for item in located)
    last_order = max(item.end_order for item in located)
    first_offset = min(item.start_offset for item in located)
    last_end = max(item.end_offset for item in located)
    content_root = _common_ancestor([el for item in located for el in (item.owner, item.end_owner)])
    # A single block's own element is no container: its images sit beside it.
    while _tag(content_root) in _TEXT_BLOCK_TAGS and content_root.getparent() is not None:
        content_root = content_root.getparent()
    placed = []
    for record in images:
        if first_order <= record.order <= last_order:
            inside = True
        elif not config.recover_images:
            inside = False
        elif record.order < first_order:
            inside = first_offset - record.flat_offset <= config.recover_lead_chars and _is_descendant(
                record.element, content_root
            )
        else:
            inside = record.flat_offset - last_end <= config.recover_trail_chars and _is_descendant(
                record.element, content_root
            )
        if inside and not _in_boilerplate(record.element, content_root) and record.usable and not _is_teaser(record, lead):
            placed.append(record)
    if config.recover_images and config.lead_image and not any(r.order < first_order for r in placed):
        record = _lead_image(images, first_order, first_offset, lead, config)
        if record is not None:
            placed.append(record)
    return placed


# ---------------------------------------------------------------------------
# The lead image

# An image is page furniture when its URL path, or the class or id of it or of a
# close ancestor, names a logo; when it links to the site's home page; or when its
# alt text is the site's name.
_LOGO_WORDS = re.compile(r"logo|favicon|sprite|masthead|(?<![a-z])brand(?:ing)?(?![a-z])", re.IGNORECASE)
_HOME_PATH = re.compile(r"^/?(?:index\.\w+|home/?)?$", re.IGNORECASE)
_IMAGE_PATH = re.compile(r"\.(?:jpe?g|png|gif|webp|avif|bmp|tiff?)$", re.IGNORECASE)
_ARTICLE_TYPES = re.compile(r"article|posting|report|webpage|recipe|review|story", re.IGNORECASE)
# Regions whose images are sitewide: never the lead image, nor an image that also appears there.
_SITEWIDE_TAGS = frozenset({"nav", "aside", "form", "footer"})
_SITEWIDE_ROLES = frozenset({"navigation", "contentinfo", "complementary", "search"})
_LOGO_ANCESTORS = 4  # how far up a logo's class or id is looked for


@dataclass
class _LeadHints:
    """What the page says its lead image is, and what it says about itself."""

    keys: frozenset[str] = frozenset()  # capture keys of og:image / JSON-LD image URLs
    paths: frozenset[str] = frozenset()  # the same without the query string
    site_names: frozenset[str] = frozenset()
    page_url: str = ""


def _json_ld_images(value: object, out: list[str], depth: int = 0) -> None:
    """``image`` URLs of article-like JSON-LD objects (not of organisations, people
    or the site, whose images are logos and portraits)."""
    if depth > 6:
        return
    if isinstance(value, list):
        for item in value:
            _json_ld_images(item, out, depth + 1)
        return
    if not isinstance(value, dict):
        return
    types = value.get("@type") or ""
    types = " ".join(types) if isinstance(types, list) else str(types)
    if _ARTICLE_TYPES.search(types) or not types:
        image = value.get("image")
        for item in image if isinstance(image, list) else [image]:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict):
                url = item.get("url") or item.get("contentUrl")
                if isinstance(url, str):
                    out.append(url)
    for key in ("@graph", "mainEntity", "mainEntityOfPage"):
        if key in value:
            _json_ld_images(value[key], out, depth + 1)


def _lead_hints(root: etree._Element, base: str, page_url: str) -> _LeadHints:
    urls: list[str] = []
    names: set[str] = set()
    for meta in root.iter("meta"):
        prop = (meta.get("property") or meta.get("name") or "").strip().lower()
        content = meta.get("content") or ""
        if prop in ("og:image", "og:image:url", "og:image:secure_url"):
            urls.append(content)
        elif prop in ("og:site_name", "application-name") and content.strip():
            names.add(_squash(content).casefold())
    for script in root.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json" or not script.text:
            continue
        try:
            _json_ld_images(json.loads(script.text), urls)
        except ValueError:
            continue
    absolute = [u for u in (_http_url(url, base) for url in urls) if u]
    keys = frozenset(capture_key(u) for u in absolute)
    return _LeadHints(
        keys=keys, paths=frozenset(k.split("?", 1)[0] for k in keys), site_names=frozenset(names), page_url=page_url
    )


def _links_elsewhere(anchor: etree._Element, hints: _LeadHints) -> bool:
    """Whether a link leads to another page (a teaser), not to the image or this page."""
    href = _http_url(anchor.get("href"), hints.page_url)
    if not href:
        return False
    parts = urlsplit(href)
    if _IMAGE_PATH.search(parts.path):
        return False
    page = urlsplit(hints.page_url)
    return (parts.netloc, parts.path) != (page.netloc, page.path)


def _is_teaser(record: _ImageRecord, hints: _LeadHints) -> bool:
    """Whether the image is part of a link card for another page: inside a link that
    leads elsewhere and carries its own text (a headline), as "related stories"
    lists are built. A link around the image alone (to a lightbox or a file page)
    is no teaser."""
    for ancestor in record.element.iterancestors():
        if _tag(ancestor) == "a":
            return bool(_squash(ancestor.text_content())) and _links_elsewhere(ancestor, hints)
    return False


def _looks_like_logo(record: _ImageRecord, hints: _LeadHints) -> bool:
    if _LOGO_WORDS.search(urlsplit(record.src).path):
        return True
    alt = record.alt.casefold()
    if "logo" in alt or (alt and alt in hints.site_names):
        return True
    page_host = urlsplit(hints.page_url).netloc
    for depth, el in enumerate((record.element, *record.element.iterancestors())):
        if depth <= _LOGO_ANCESTORS and _LOGO_WORDS.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
            return True
        if _tag(el) == "a":
            href = _http_url(el.get("href"), hints.page_url)
            parts = urlsplit(href) if href else None
            if parts is not None and parts.netloc == page_host and _HOME_PATH.match(parts.path) and not parts.query:
                return True
    return False


def _in_sitewide_region(element: etree._Element) -> bool:
    for ancestor in element.iterancestors():
        if _tag(ancestor) in _SITEWIDE_TAGS or (ancestor.get("role") or "").lower() in _SITEWIDE_ROLES:
            return True
    return False


def _record_keys(record: _ImageRecord) -> list[str]:
    return [capture_key(url) for url in (record.src, *record.candidates)]


def _lead_image(
    images: list[_ImageRecord], first_order: int, first_offset: int, hints: _LeadHints, config: ExtractConfig
) -> Optional[_ImageRecord]:
    """The page's lead image when it sits before the extracted text (a header or hero
    image outside the block trafilatura keeps): within ``lead_image_max_chars`` of
    page text before the first extracted block, the image the page names as its own
    (``og:image``, JSON-LD ``image``) or else the first large figure; never a logo,
    an image in navigation, sidebars, forms or footers, or one that also appears there."""
    before = [
        r for r in images if r.order < first_order and first_offset - r.flat_offset <= config.lead_image_max_chars and r.usable
    ]
    if not before:
        return None
    sitewide = {key for r in images if _in_sitewide_region(r.element) and r.src for key in _record_keys(r)}
    eligible = [
        r
        for r in before
        if not _in_sitewide_region(r.element)
        and not _looks_like_logo(r, hints)
        and not sitewide.intersection(_record_keys(r))
    ]
    if hints.keys:
        for record in eligible:
            keys = _record_keys(record)
            if hints.keys.intersection(keys) or hints.paths.intersection(k.split("?", 1)[0] for k in keys):
                return record
    minimum = config.lead_image_min_size
    for record in eligible:
        sides = [s for s in (record.declared_width, record.declared_height) if s is not None]
        if any(s < minimum for s in sides) or _in_boilerplate(record.element, None):
            continue
        ancestors = list(record.element.iterancestors())
        if any(_tag(a) == "a" and _links_elsewhere(a, hints) for a in ancestors):
            continue  # a teaser for another page
        if sides or record.candidates or any(_tag(a) in ("figure", "picture") for a in ancestors):
            return record
    return None


def _merge(items: list[_Item], images: list[_ImageRecord]) -> list[Node]:
    """trafilatura's text nodes with the images inserted by DOM position."""
    pending = sorted(images, key=lambda r: r.order)
    nodes: list[Node] = []
    at = 0
    for item in items:
        if item.order is not None:
            while at < len(pending) and pending[at].order < item.order:
                nodes.append(pending[at].node())
                at += 1
        nodes.append(item.node)
    nodes.extend(record.node() for record in pending[at:])
    return nodes


# ---------------------------------------------------------------------------
# The extractor

_METADATA_FIELDS = ("author", "date", "sitename", "description", "hostname", "categories", "tags", "license")
_quieted = False


def _quiet_trafilatura() -> None:
    """trafilatura logs a warning per page it finds nothing in; that is not news here."""
    global _quieted
    if not _quieted:
        logging.getLogger("trafilatura").setLevel(logging.ERROR)
        _quieted = True


def _trafilatura_document(root: etree._Element, url: str, config: ExtractConfig):
    import trafilatura

    _quiet_trafilatura()
    return trafilatura.bare_extraction(
        root,
        url=url or None,
        favor_precision=config.mode == "precision",
        favor_recall=config.mode == "recall",
        include_comments=False,
        include_tables=config.include_tables,
        # Text only: with images on, trafilatura also keeps figure captions and photo
        # credits as text lines and keeps lists of image teasers (related stories),
        # whose lines repeat. Images come from the DOM (_place_images); a caption is
        # the image node's, not a text line.
        include_images=False,
        include_formatting=False,
        include_links=False,
        deduplicate=False,
        with_metadata=config.with_metadata,
        output_format="xml",
        fast=not config.fallback,
    )


def _metadata_of(document: object) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for name in _METADATA_FIELDS:
        value = getattr(document, name, None)
        if isinstance(value, (list, tuple)):
            value = ";".join(str(v) for v in value if v)
        if value:
            metadata[name] = _squash(str(value))
    return metadata


def extract_trafilatura(html: str, url: str, config: ExtractConfig) -> Extraction:
    """Main content of ``html`` (fetched from ``url``) by trafilatura, images completed from the DOM."""
    root = _parse_html(html)
    if root is None:
        return Extraction()
    base = _document_base(root, url)
    index = _index_page(root, base, config)
    lead = _lead_hints(root, base, url) if index.images and config.recover_images and config.lead_image else _LeadHints(page_url=url)
    metadata: dict[str, str] = {}
    html_lang = _squash(root.get("lang"))
    if html_lang:
        metadata["html_lang"] = html_lang
    title = _title(root)

    document = _trafilatura_document(root, url, config)
    builder = _NodeBuilder()
    if document is not None and document.body is not None:
        builder.block(document.body, "p")
        metadata.update(_metadata_of(document))
        if not title and document.title:
            title = _squash(document.title)
    items = builder.items
    _locate_text(items, index)
    nodes = _merge(items, _place_images(items, index, config, lead))
    return Extraction(nodes=tuple(nodes), title=title, hreflang=_hreflang(root, base), metadata=metadata)
