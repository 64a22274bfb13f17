"""The page as an lxml tree: parsing, and what is read straight off the tree (tag
names, http(s) URLs resolved against ``<base href>``, the title, ``hreflang``
alternates)."""

from __future__ import annotations

import threading
from typing import Optional
from urllib.parse import urljoin, urlsplit

from lxml import etree
from lxml import html as lxml_html


def squash(text: Optional[str]) -> str:
    """Whitespace collapsed to single spaces, stripped."""
    return " ".join(text.split()) if text else ""


def tag_of(el: etree._Element) -> str:
    """The element's tag name ("" for comments and the like). libxml2's HTML parser
    writes tag names in lower case."""
    tag = el.tag
    return tag if isinstance(tag, str) else ""


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


def parse_html(html: str) -> Optional[lxml_html.HtmlElement]:
    data = html.replace("\x00", "").encode("utf-8", "replace")
    if not data.strip():
        return None
    try:
        root = lxml_html.document_fromstring(data, parser=_html_parser())
    except etree.ParserError:
        return None
    return root


def http_url(value: Optional[str], base: str) -> str:
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


# Elements that show a picture: HTML's <img> and AMP's <amp-img>.
IMAGE_TAGS = ("img", "amp-img")


def noscript_images(noscript: etree._Element) -> list[etree._Element]:
    """The ``<img>``s of a ``<noscript>`` that the page shows only there: when no image
    sits beside it in its parent (a script loads the picture into an empty
    placeholder, and the ``<noscript>`` copy is the only ``<img>`` of it). Not those
    beside a lazy-loaded ``<img>`` or inside an ``<amp-img>``: copies of an image the
    page shows already."""
    inner = list(noscript.iter("img"))
    parent = noscript.getparent()
    if not inner or parent is None or parent.tag in IMAGE_TAGS:
        return []
    for el in parent.iter(*IMAGE_TAGS):
        if not any(a is noscript for a in el.iterancestors()):
            return []
    return inner


def shown_images(root: etree._Element) -> list[etree._Element]:
    """The page's images in document order: its ``<img>`` and ``<amp-img>`` elements,
    those inside a ``<noscript>`` only as ``noscript_images`` says."""
    out = []
    copies: dict[etree._Element, list[etree._Element]] = {}
    for el in root.iter(*IMAGE_TAGS):
        noscript = next(el.iterancestors("noscript"), None)
        if noscript is not None:
            shown = copies.get(noscript)
            if shown is None:
                shown = copies[noscript] = noscript_images(noscript)
            if not any(el is s for s in shown):
                continue
        out.append(el)
    return out


def document_base(root: etree._Element, url: str) -> str:
    for base in root.iter("base"):
        href = base.get("href")
        if href:
            resolved = http_url(href, url)
            if resolved:
                return resolved
    return url


def page_title(root: etree._Element) -> str:
    for title in root.iter("title"):
        text = squash(title.text_content())
        if text:
            return text
    return ""


def hreflang_links(root: etree._Element, base: str) -> tuple[tuple[str, str], ...]:
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for link in root.iter("link"):
        lang = link.get("hreflang")
        if not lang:  # most links: stylesheets, icons, preloads
            continue
        lang = lang.strip()
        if not lang or "alternate" not in (link.get("rel") or "").lower().split():
            continue
        href = http_url(link.get("href"), base)
        if href and (lang, href) not in seen:
            seen.add((lang, href))
            out.append((lang, href))
    return tuple(out)
