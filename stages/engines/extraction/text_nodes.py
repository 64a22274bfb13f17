"""trafilatura's XML body as text nodes in reading order, and each node located in
the page's text (whitespace-insensitive, in order), which gives its DOM position.

Lists give one text node per item (tag ``li``): a page's list items are the unit
that node-level cleanup and image interleaving work on. A table gives one node
(tag ``table``) whose lines are its rows, cells separated by `` | ``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from lxml import etree

from mmcurate.schemas import TextNode
from mmcurate.stages.engines.extraction.html_tree import squash
from mmcurate.stages.engines.extraction.page_index import PageIndex


_HEAD_LEVELS = {f"h{i}" for i in range(1, 7)}
_INLINE_TAGS = frozenset({"hi", "ref", "del", "span", "abbr", "note"})
_CONTEXT_TAGS = frozenset({"blockquote", "li", "pre"})


@dataclass
class TextItem:
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
    if tag != "pre" and "\n" not in text:
        return " ".join(text.split())
    if tag == "pre":
        lines = [line.rstrip() for line in text.split("\n")]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines)
    return "\n".join(s for s in (squash(line) for line in text.split("\n")) if s)


def _inline_text(el: etree._Element) -> str:
    parts = [el.text or ""]
    for child in el:
        if child.tag == "lb":
            parts.append("\n")
        elif child.tag != "graphic":
            parts.append(_inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


class NodeBuilder:
    """Turns trafilatura's XML body into items in reading order."""

    def __init__(self) -> None:
        self.items: list[TextItem] = []

    def text(self, raw: str, tag: str, needle_text: Optional[str] = None) -> None:
        if not raw or raw.isspace():
            return  # nothing once cleaned; about half the calls
        text = _clean_text(raw, tag)
        if text:
            # Without whitespace as str.split sees it (Unicode's, as the page index).
            needle = "".join((needle_text if needle_text is not None else text).split())
            self.items.append(TextItem(node=TextNode(text=text, tag=tag), needle=needle))

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
            cells = [squash(_inline_text(cell)) for cell in row if cell.tag == "cell"]
            line = " | ".join(c for c in cells if c)
            if line:
                rows.append(line)
                if needle is None:
                    needle = next(c for c in cells if c)
        self.text("\n".join(rows), "table", needle)


# How far past the previous block a block's text is looked for, in characters: it
# bounds the cost of blocks that trafilatura rewrote beyond recognition.
_SEARCH_WINDOW = 1_000_000


def locate_text(items: list[TextItem], index: PageIndex) -> None:
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
