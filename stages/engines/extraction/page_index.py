"""One walk of the page in document order: its text with whitespace removed, where
each piece of it sits (position and owner element), and its images, each at its
place (``ImageRecord``)."""

from __future__ import annotations

import itertools
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Mapping, Optional

from lxml import etree

from mmcurate.schemas import ImageNode
from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.html_tree import noscript_images, squash
from mmcurate.stages.engines.extraction.image_sources import ImageSource, declared_dimension, image_source


# Subtrees whose text is not page content and whose images are not shown.
_SKIP_SUBTREES = frozenset({"head", "script", "style", "noscript", "template", "svg", "math", "iframe", "object"})


class ImageRecord:
    """One ``<img>`` of the page at its place in document order. What it shows (URL,
    candidates, size) is worked out on first use: most images of a page (menus,
    sidebars, footers) are never looked at."""

    __slots__ = ("element", "order", "flat_offset", "caption", "_base", "_config", "_source")

    def __init__(
        self, element: etree._Element, order: int, flat_offset: int, base: str, config: ExtractConfig, caption: str = ""
    ):
        self.element = element
        self.order = order  # position among the walk's events (document order)
        self.flat_offset = flat_offset  # page text (whitespace removed) before the image
        self.caption = caption  # found before the walk (captions.find_captions)
        self._base = base
        self._config = config
        self._source: Optional[ImageSource] = None

    @property
    def source(self) -> "ImageSource":
        if self._source is None:
            self._source = image_source(self.element, self._base, self._config)
        return self._source

    @property
    def usable(self) -> bool:
        """An http(s) URL, and not a declared 1x1 pixel."""
        if not self.source.src:
            return False
        width = declared_dimension(self.element, "width")
        height = declared_dimension(self.element, "height")
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
        return squash(self.element.get("alt"))

    def node(self) -> ImageNode:
        source = self.source
        return ImageNode(
            src=source.src,
            candidates=source.candidates,
            alt=self.alt,
            caption=self.caption,
            title=squash(self.element.get("title")),
            declared_width=source.width,
            declared_height=source.height,
        )


@dataclass
class PageIndex:
    """The page's text with whitespace removed, and where each piece of it sits."""

    flat: str = ""
    piece_starts: list[int] = field(default_factory=list)
    piece_orders: list[int] = field(default_factory=list)
    piece_owners: list[etree._Element] = field(default_factory=list)
    images: list[ImageRecord] = field(default_factory=list)

    def locate(self, flat_offset: int) -> int:
        """Index of the text piece that holds ``flat_offset`` (the last that starts at
        or before it; the first piece starts at 0)."""
        return max(0, bisect_right(self.piece_starts, flat_offset) - 1)


def index_page(
    root: etree._Element, base: str, config: ExtractConfig, captions: Optional[Mapping[etree._Element, str]] = None
) -> PageIndex:
    """Walks the page once in document order: its text pieces (whitespace removed),
    each with its position and owner element, and its images (with their
    ``captions``, found and taken out of the tree before).

    The walk is ``root.iter()`` (a third of the cost of ``etree.iterwalk``'s start and
    end events) with the chain of open elements kept here: an element's end, and its
    tail, come when the walk reaches an element that is not inside it. Orders count
    start and end events as ``iterwalk`` would; the elements inside a skipped subtree
    have none. ``root`` is a document's root from ``parse_html``, whose parser drops
    comments and processing instructions: the walk reads every node's text as the
    page's, and the root's own tail is not walked."""
    index = PageIndex()
    captions = captions or {}
    # Each text piece's order, owner and text (parallel lists: no tuple per piece for
    # the garbage collector to count).
    orders, owners, texts = index.piece_orders, index.piece_owners, []
    images = index.images
    image_pieces: list[int] = []  # pieces before each image
    skip = _SKIP_SUBTREES
    order = 0
    # The chain of open elements, below a stand-in for what holds the root. The page
    # is parsed without comments and processing instructions, and libxml2 writes tag
    # names in lower case. A text or tail that is not all whitespace (most tails are
    # the whitespace between tags) is a piece of the page's text.
    open_elements: list[Optional[etree._Element]] = [None]
    skip_to: Optional[etree._Element] = None  # the last element inside a skipped subtree
    for el in itertools.chain(root.iter(), (None,)):  # None: the end, where every element ends
        if el is not None:
            if skip_to is not None:
                if el is skip_to:
                    skip_to = None
                continue
            parent = el.getparent() if el is not root else None
        else:
            parent = None
        top = open_elements[-1]
        while top is not parent:  # the ends of the elements that el is not inside
            open_elements.pop()
            order += 1
            text = top.tail
            top = open_elements[-1]
            if text and not text.isspace() and top is not None:
                orders.append(order)
                owners.append(top)
                texts.append(text)
        if el is None:
            break
        order += 1
        open_elements.append(el)
        tag = el.tag
        if tag in skip:
            last = el
            while len(last):
                last = last[-1]
            if last is not el:
                skip_to = last
            if tag == "noscript":
                for img in noscript_images(el):  # the page's only copy of a picture
                    images.append(ImageRecord(img, order, 0, base, config, captions.get(img, "")))
                    image_pieces.append(len(texts))
            continue
        if tag == "img" or tag == "amp-img":
            images.append(ImageRecord(el, order, 0, base, config, captions.get(el, "")))
            image_pieces.append(len(texts))
            continue
        text = el.text
        if text and not text.isspace():
            orders.append(order)
            owners.append(el)
            texts.append(text)
    chunks = ["".join(text.split()) for text in texts]
    starts = list(itertools.accumulate(map(len, chunks), initial=0))
    for record, before in zip(images, image_pieces):
        record.flat_offset = starts[before]
    starts.pop()  # the end of the last piece
    index.piece_starts = starts
    index.flat = "".join(chunks)
    return index
