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
import logging
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional
from urllib.parse import urljoin, urlsplit

from lxml import etree
from lxml import html as lxml_html

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import ImageNode, Node, TextNode

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
    tag = el.tag
    return tag.lower() if isinstance(tag, str) else ""


@dataclass
class _ImageRecord:
    """One ``<img>`` of the page as the DOM declares it."""

    element: etree._Element
    src: str
    alt: str
    caption: str
    title: str
    declared_width: Optional[int]
    declared_height: Optional[int]
    order: int  # position among the walk's events (document order)
    flat_offset: int  # page text (whitespace removed) before the image

    def node(self) -> ImageNode:
        return ImageNode(
            src=self.src,
            alt=self.alt,
            caption=self.caption,
            title=self.title,
            declared_width=self.declared_width,
            declared_height=self.declared_height,
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


def _parse_html(html: str) -> Optional[lxml_html.HtmlElement]:
    data = html.replace("\x00", "").encode("utf-8", "replace")
    if not data.strip():
        return None
    parser = lxml_html.HTMLParser(encoding="utf-8", remove_comments=False)
    try:
        root = lxml_html.document_fromstring(data, parser=parser)
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


def parse_srcset(value: str) -> list[tuple[str, float]]:
    """Candidates of a ``srcset`` as (url, size): width for ``w``, density x 1e-6 otherwise.

    Width descriptors rank above density descriptors; a candidate without a
    descriptor is density 1.
    """
    candidates: list[tuple[str, float]] = []
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
        size = 1e-6
        for token in descriptor.split():
            try:
                if token.endswith("w"):
                    size = float(token[:-1])
                elif token.endswith("x"):
                    size = float(token[:-1]) * 1e-6
            except ValueError:
                continue
        candidates.append((url, size))
    return candidates


def _largest_candidate(srcsets: list[str], base: str) -> str:
    best_url, best_size = "", -1.0
    for srcset in srcsets:
        for candidate, size in parse_srcset(srcset):
            url = _http_url(candidate, base)
            if url and size > best_size:
                best_url, best_size = url, size
    return best_url


def _resolve_image_url(img: etree._Element, base: str) -> str:
    src = img.get("src")
    if not _is_placeholder(src):
        return _http_url(src, base)
    for attr in _LAZY_ATTRIBUTES:
        url = _http_url(img.get(attr), base)
        if url:
            return url
    srcsets = [img.get(attr) for attr in _SRCSET_ATTRIBUTES if img.get(attr)]
    # libxml2 does not know <source> is void, so the <img> may sit inside one.
    picture = next((a for a in img.iterancestors() if _tag(a) == "picture"), None)
    if picture is not None:
        for source in picture.iter("source"):
            srcsets.extend(v for v in (source.get("srcset"), source.get("data-srcset")) if v)
    # A src whose name only looks like a placeholder is still the best we have.
    return _largest_candidate(srcsets, base) or _http_url(src, base)


def _declared_dimension(img: etree._Element, name: str) -> Optional[int]:
    match = _DIMENSION_ATTR.match(img.get(name) or "")
    if match:
        return int(match.group(1))
    match = _STYLE_DIMENSION[name].search(img.get("style") or "")
    if match:
        return int(match.group(1))
    return None


def _caption(img: etree._Element) -> str:
    for ancestor in img.iterancestors():
        if _tag(ancestor) == "figure":
            for caption in ancestor.iter("figcaption"):
                return _squash(caption.text_content())
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


def _index_page(root: etree._Element, base: str) -> _PageIndex:
    """Walks the page once in document order: text pieces and normalised images.

    Images without a usable URL, and declared 1x1 pixels, are removed from the tree
    (their tail text stays) so that trafilatura sees the same images as we do.
    """
    index = _PageIndex()
    chunks: list[str] = []
    offset = 0
    order = 0
    unusable: list[etree._Element] = []

    def add_text(text: Optional[str], owner: etree._Element) -> None:
        nonlocal offset
        if not text:
            return
        squeezed = _WHITESPACE.sub("", text)
        if not squeezed:
            return
        index.piece_starts.append(offset)
        index.piece_orders.append(order)
        index.piece_owners.append(owner)
        chunks.append(squeezed)
        offset += len(squeezed)

    walker = etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    for event, el in walker:
        order += 1
        if event in ("comment", "pi"):
            parent = el.getparent()
            add_text(el.tail, parent if parent is not None else el)
            continue
        tag = _tag(el)
        if event == "start":
            if tag in _SKIP_SUBTREES:
                walker.skip_subtree()
                continue
            if tag == "img":
                record = _image_record(el, base, order, offset)
                if record is None:
                    unusable.append(el)
                else:
                    index.images.append(record)
            else:
                add_text(el.text, el)
        else:
            parent = el.getparent()
            if parent is not None:
                add_text(el.tail, parent)
    index.flat = "".join(chunks)
    for el in unusable:
        el.drop_tree()
    return index


def _image_record(img: etree._Element, base: str, order: int, offset: int) -> Optional[_ImageRecord]:
    src = _resolve_image_url(img, base)
    width = _declared_dimension(img, "width")
    height = _declared_dimension(img, "height")
    if not src or (width is not None and height is not None and width <= 1 and height <= 1):
        return None
    # What trafilatura reads: the resolved URL in src and nothing lazy to prefer over it.
    lazy = {*_LAZY_ATTRIBUTES, *_SRCSET_ATTRIBUTES}
    for attr in [a for a in img.attrib if a in lazy or a.startswith("data-src")]:
        del img.attrib[attr]
    img.set("src", src)
    return _ImageRecord(
        element=img,
        src=src,
        alt=_squash(img.get("alt")),
        caption=_caption(img),
        title=_squash(img.get("title")),
        declared_width=width,
        declared_height=height,
        order=order,
        flat_offset=offset,
    )


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
    """A node in trafilatura's order, with what locating it in the page needs."""

    node: Optional[Node]
    needle: str = ""  # text to look for in the page (whitespace removed)
    graphic_src: str = ""
    graphic_alt: str = ""
    graphic_title: str = ""
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

    def graphic(self, el: etree._Element) -> None:
        src = el.get("src") or ""
        if src:
            self.items.append(
                _Item(node=None, graphic_src=src, graphic_alt=_squash(el.get("alt")), graphic_title=_squash(el.get("title")))
            )

    def block(self, el: etree._Element, tag: str) -> None:
        """Inline content of ``el`` as ``tag`` nodes, split around nested blocks and images."""
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
        if tag == "graphic":
            self.graphic(el)
        elif tag == "p":
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
            graphics = list(row.iter("graphic"))
            if graphics:
                self.text("\n".join(rows), "table", needle)
                rows, needle = [], None
                for graphic in graphics:
                    self.graphic(graphic)
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
        if item.node is None or not item.needle or not index.piece_starts:
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


def _match_graphics(items: list[_Item], index: _PageIndex) -> set[int]:
    """Matches kept images to DOM records by URL; returns the ids of the records used."""
    by_src: dict[str, list[_ImageRecord]] = {}
    for record in index.images:
        by_src.setdefault(record.src, []).append(record)
    used: set[int] = set()
    for item in items:
        if item.node is not None:
            continue
        candidates = [r for r in by_src.get(item.graphic_src, ()) if id(r) not in used]
        if candidates:
            record = candidates[0]
            used.add(id(record))
            item.node = record.node()
            item.order = item.end_order = record.order
            item.owner = item.end_owner = record.element
        else:
            item.node = ImageNode(src=item.graphic_src, alt=item.graphic_alt, title=item.graphic_title)
    return used


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


def _images_to_recover(items: list[_Item], index: _PageIndex, used: set[int], config: ExtractConfig) -> list[_ImageRecord]:
    dropped = [r for r in index.images if id(r) not in used]
    if not dropped:
        return []
    located = [item for item in items if isinstance(item.node, TextNode) and item.order is not None]
    if not any(isinstance(item.node, TextNode) for item in items):
        return [r for r in dropped if not _in_boilerplate(r.element, None)]
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
    recovered = []
    for record in dropped:
        if first_order <= record.order <= last_order:
            inside = True
        elif record.order < first_order:
            inside = first_offset - record.flat_offset <= config.recover_lead_chars and _is_descendant(
                record.element, content_root
            )
        else:
            inside = record.flat_offset - last_end <= config.recover_trail_chars and _is_descendant(
                record.element, content_root
            )
        if inside and not _in_boilerplate(record.element, content_root):
            recovered.append(record)
    return recovered


def _merge(items: list[_Item], recovered: list[_ImageRecord]) -> list[Node]:
    """trafilatura's nodes with recovered images inserted by DOM position."""
    pending = sorted(recovered, key=lambda r: r.order)
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
        include_images=True,
        include_formatting=False,
        include_links=False,
        deduplicate=False,
        with_metadata=config.with_metadata,
        output_format="xml",
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
    index = _index_page(root, base)
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
    used = _match_graphics(items, index)
    _locate_text(items, index)
    recovered = _images_to_recover(items, index, used, config) if config.recover_images else []
    nodes = _merge(items, recovered)
    return Extraction(nodes=tuple(nodes), title=title, hreflang=_hreflang(root, base), metadata=metadata)
