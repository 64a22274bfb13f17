"""One walk of the parsed page that finds what the boilerplate rules and the caption
search look at: elements whose class or id holds one of their words, elements with
an ARIA role, label or description, links to an edit action, ``<figcaption>``s, and
the page's ids. One walk in Python costs a third of the XPath searches it replaces
(each ``//*[...]`` is its own walk in libxml2)."""

from __future__ import annotations

import itertools
from bisect import bisect_right
from dataclasses import dataclass, field

from lxml import etree

# Words of the boilerplate rules' and the caption search's class and id names
# (boilerplate._ANY_NAME, captions._CAPTION_CLASS), looked for in lower case.
_WORDS = (
    "toc", "contents", "refer", "reflist", "refbegin", "footnote", "endnote", "bibliograph", "fn", "navbox",
    "catlinks", "authority", "sistersite", "edit", "jump", "skip", "screen-reader", "cookie", "consent", "gdpr",
    "onetrust", "cybot", "cmplz", "qc-cmp", "usercentrics", "didomi", "truste", "sp_message", "cc-", "shar",
    "addtoany", "a2a", "ssba", "social",
)  # fmt: skip
_CAPTION_WORDS = ("caption", "gallerytext", "legend")
_LABELS = frozenset({"role", "aria-label", "aria-describedby", "aria-labelledby"})


@dataclass
class PageScan:
    """What one walk of the page found, each list in document order."""

    named: list[etree._Element] = field(default_factory=list)  # in <body>: class/id word, role, label, edit link
    captions: list[etree._Element] = field(default_factory=list)  # <figcaption>, caption-like class
    described: list[etree._Element] = field(default_factory=list)  # aria-describedby / aria-labelledby
    ids: dict[str, etree._Element] = field(default_factory=dict)


def _lines_with(text: str, starts: list[int], words: tuple[str, ...]) -> set[int]:
    """Indices of the lines of ``text`` (starting at ``starts``) that hold one of
    ``words``: ``str.find`` for each word, a scan in C, where one regular expression
    of alternatives tries every one at every position."""
    found: set[int] = set()
    for word in words:
        at = text.find(word)
        while at >= 0:
            line = bisect_right(starts, at) - 1
            found.add(line)
            # on to the next line: one hit a line is enough
            at = text.find(word, starts[line + 1]) if line + 1 < len(starts) else -1
    return found


def scan_page(root: etree._Element) -> PageScan:
    """The walk (see the module doc). The class and id values are searched as one
    string, one regular-expression pass in C instead of one call per element."""
    scan = PageScan()
    ids = scan.ids
    in_body = False
    elements: list[etree._Element] = []  # in <body>, with a class, id, role or label
    values: list[str] = []  # their class and id, one line each
    labelled: list[bool] = []  # a role, label or edit link of their own
    for el in root.iter():
        tag = el.tag
        if not isinstance(tag, str):
            continue
        keys = el.keys()
        if not keys:
            if tag == "figcaption" and in_body:
                elements.append(el)
                values.append("")
                labelled.append(False)
            elif tag == "body":
                in_body = True
            continue
        ident = el.get("id")
        if ident:
            ids.setdefault(ident, el)
        if not in_body:
            in_body = tag == "body"
            continue
        cls = el.get("class")
        label = not _LABELS.isdisjoint(keys) or (tag == "a" and "action=edit" in (el.get("href") or ""))
        if cls or ident or label or tag == "figcaption":
            elements.append(el)
            values.append(f"{cls or ''} {ident or ''}".replace("\n", " "))
            labelled.append(label)
            if "aria-describedby" in keys or "aria-labelledby" in keys:
                scan.described.append(el)
    if not elements:
        return scan
    text = "\n".join(values).lower()
    starts = list(itertools.accumulate((len(v) + 1 for v in values[:-1]), initial=0))
    worded = _lines_with(text, starts, _WORDS)
    captioned = _lines_with(text, starts, _CAPTION_WORDS)
    for i, el in enumerate(elements):
        if i in worded or labelled[i]:
            scan.named.append(el)
        if el.tag == "figcaption" or i in captioned:
            scan.captions.append(el)
    return scan


def attached(el: etree._Element, root: etree._Element) -> bool:
    """Whether ``el`` is still in ``root``'s tree (not inside a removed subtree)."""
    top = el
    for top in el.iterancestors():
        pass
    return top is root
