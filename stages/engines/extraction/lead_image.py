"""The page's lead image, which the document puts before its first text node:

1. the image the page names as its own (``og:image``, JSON-LD ``image``, in any
   rendition) wherever it is on the page -- above the headline, in the article's
   header, in a media column beside the body (an ``<aside>``) -- but not in
   navigation, a footer or a form, and not a picture the body shows after its
   opening paragraph (that one stays in its place);
2. else the first large picture before the extracted text, within
   ``lead_image_max_chars`` of page text before it: declared at least
   ``lead_image_min_size``, or offered in several sizes (``srcset``, ``<picture>``),
   or in a ``<figure>``, or in an element whose class or id names a hero, lead or
   featured image (``div.hero``, ``.post-thumbnail``, ``img.wp-post-image``,
   ``.featured-media``);
3. else the first large picture of the extracted content when only the article's
   header comes before it: headings, and blocks inside a ``<header>`` or in an
   element whose class, id or component name says byline, author, standfirst, dek,
   summary, excerpt, subtitle, date ... (Medium, BBC News, the New York Times, Ghost
   and Substack put the picture under the headline); not a picture after an opening
   paragraph, which is the body's.

Never a logo, a teaser for another page, or an image of a sitewide region (or one
that also appears there)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional, Sequence
from urllib.parse import unquote, urlsplit

from lxml import etree

from mmcurate.filters.url_forms import capture_key
from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.html_tree import http_url, squash, tag_of
from mmcurate.stages.engines.extraction.page_index import ImageRecord
from mmcurate.stages.engines.extraction.regions import in_boilerplate, in_sitewide_region


# An image is page furniture when its URL path, or the class or id of it or of a
# close ancestor, names a logo; when it links to the site's home page; or when its
# alt text is the site's name.
_LOGO_WORDS = re.compile(r"logo|favicon|sprite|masthead|(?<![a-z])brand(?:ing)?(?![a-z])", re.IGNORECASE)
_HOME_PATH = re.compile(r"^/?(?:index\.\w+|home/?)?$", re.IGNORECASE)
_IMAGE_PATH = re.compile(r"\.(?:jpe?g|png|gif|webp|avif|bmp|tiff?)$", re.IGNORECASE)
_ARTICLE_TYPES = re.compile(r"article|posting|report|webpage|recipe|review|story", re.IGNORECASE)
_LOGO_ANCESTORS = 4  # how far up a logo's class or id is looked for
# Class or id names of a hero, lead or featured picture (or of its container).
_LEAD_NAMES = re.compile(
    r"hero|(?:^|[-_])(?:lead|lede)(?:$|[-_])|featured|post-thumbnail|wp-post-image|"
    r"(?:article|story|post|entry|main|top|cover|header)[-_]{0,2}(?:image|img|photo|media|picture|figure)",
    re.IGNORECASE,
)
_LEAD_ANCESTORS = 3  # how far up a lead picture's class or id is looked for
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Names of an article header's parts other than the headline: what may come between
# the headline and a lead picture under it.
_HEADER_NAMES = re.compile(
    r"byline|author|meta|standfirst|(?:^|[-_\s])dek(?:$|[-_\s])|summary|excerpt|subtitle|sub-?head|intro|lede|kicker"
    r"|date|timestamp|header|headline|title|strap|description",
    re.IGNORECASE,
)
_HEADER_LEVELS = 4  # how far up from a text block its header part is looked for
# Regions whose images are never the lead image, even when the page names them.
_NAVIGATION_TAGS = frozenset({"nav", "footer", "form"})
_NAVIGATION_ROLES = frozenset({"navigation", "contentinfo", "search"})


@dataclass
class LeadHints:
    """What the page says its lead image is, and what it says about itself."""

    keys: frozenset[str] = frozenset()  # capture keys of og:image / JSON-LD image URLs
    paths: frozenset[str] = frozenset()  # the same without the query string
    site_names: frozenset[str] = frozenset()
    page_url: str = ""
    # The file names (last path segments, unquoted, lower case) of those URLs, to pass
    # over without working out their URLs the images whose markup holds none of them;
    # None when some URL has no file name.
    file_names: Optional[frozenset[str]] = None


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


def lead_hints(root: etree._Element, base: str, page_url: str) -> LeadHints:
    urls: list[str] = []
    names: set[str] = set()
    for meta in root.iter("meta"):
        prop = (meta.get("property") or meta.get("name") or "").strip().lower()
        content = meta.get("content") or ""
        if prop in ("og:image", "og:image:url", "og:image:secure_url"):
            urls.append(content)
        elif prop in ("og:site_name", "application-name") and content.strip():
            names.add(squash(content).casefold())
    for script in root.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json" or not script.text:
            continue
        try:
            _json_ld_images(json.loads(script.text), urls)
        except ValueError:
            continue
    absolute = [u for u in (http_url(url, base) for url in urls) if u]
    keys = frozenset(capture_key(u) for u in absolute)
    file_names = {unquote(urlsplit(u).path.rsplit("/", 1)[-1]).lower() for u in absolute}
    return LeadHints(
        keys=keys,
        paths=frozenset(k.split("?", 1)[0] for k in keys),
        site_names=frozenset(names),
        page_url=page_url,
        file_names=None if "" in file_names else frozenset(file_names),
    )


def _may_be_named(record: ImageRecord, hints: LeadHints) -> bool:
    """False when no attribute of the image (or of its ``<picture>``'s sources) holds
    the file name of a URL the page names: it cannot be that image."""
    if hints.file_names is None:
        return True
    values = list(record.element.attrib.values())
    picture = next(record.element.iterancestors("picture"), None)
    if picture is not None:
        values.extend(v for source in picture.iter("source") for v in source.attrib.values())
    text = unquote(" ".join(values)).lower()
    return any(name in text for name in hints.file_names)


def _links_elsewhere(anchor: etree._Element, hints: LeadHints) -> bool:
    """Whether a link leads to another page (a teaser), not to the image or this page."""
    href = http_url(anchor.get("href"), hints.page_url)
    if not href:
        return False
    parts = urlsplit(href)
    if _IMAGE_PATH.search(parts.path):
        return False
    page = urlsplit(hints.page_url)
    return (parts.netloc, parts.path) != (page.netloc, page.path)


def is_teaser(record: ImageRecord, hints: LeadHints) -> bool:
    """Whether the image is part of a link card for another page: inside a link that
    leads elsewhere and carries its own text (a headline), as "related stories"
    lists are built. A link around the image alone (to a lightbox or a file page)
    is no teaser."""
    anchor = next(record.element.iterancestors("a"), None)
    return anchor is not None and bool(squash(anchor.text_content())) and _links_elsewhere(anchor, hints)


def _looks_like_logo(record: ImageRecord, hints: LeadHints) -> bool:
    if _LOGO_WORDS.search(urlsplit(record.src).path):
        return True
    alt = record.alt.casefold()
    if "logo" in alt or (alt and alt in hints.site_names):
        return True
    page_host = urlsplit(hints.page_url).netloc
    for depth, el in enumerate((record.element, *record.element.iterancestors())):
        if depth <= _LOGO_ANCESTORS and _LOGO_WORDS.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
            return True
        if tag_of(el) == "a":
            href = http_url(el.get("href"), hints.page_url)
            parts = urlsplit(href) if href else None
            if parts is not None and parts.netloc == page_host and _HOME_PATH.match(parts.path) and not parts.query:
                return True
    return False


def _record_keys(record: ImageRecord) -> list[str]:
    return [capture_key(url) for url in (record.src, *record.candidates)]


def _in_navigation(record: ImageRecord) -> bool:
    for ancestor in record.element.iterancestors():
        if tag_of(ancestor) in _NAVIGATION_TAGS or (ancestor.get("role") or "").lower() in _NAVIGATION_ROLES:
            return True
    return False


def _named(record: ImageRecord, hints: LeadHints) -> bool:
    """Whether the page names this image as its own (any of its renditions, any query)."""
    keys = _record_keys(record)
    return bool(hints.keys.intersection(keys) or hints.paths.intersection(k.split("?", 1)[0] for k in keys))


def _lead_named(record: ImageRecord) -> bool:
    for depth, el in enumerate((record.element, *record.element.iterancestors())):
        if depth > _LEAD_ANCESTORS:
            return False
        if _LEAD_NAMES.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
            return True
    return False


def _large(record: ImageRecord, config: ExtractConfig) -> bool:
    """Declared no smaller than ``lead_image_min_size``, and shown as a picture: declared
    at that size, offered in several sizes, in a figure or picture, or in a hero."""
    sides = [s for s in (record.declared_width, record.declared_height) if s is not None]
    if any(s < config.lead_image_min_size for s in sides):
        return False
    ancestors = record.element.iterancestors()
    return bool(sides or record.candidates or any(tag_of(a) in ("figure", "picture") for a in ancestors) or _lead_named(record))


def _header_like(owner: Optional[etree._Element]) -> bool:
    """Whether a text block belongs to the article's header (see ``_HEADER_NAMES``)."""
    if owner is None:
        return False
    for depth, el in enumerate((owner, *owner.iterancestors())):
        if tag_of(el) == "header":
            return True
        if depth <= _HEADER_LEVELS and _HEADER_NAMES.search(
            " ".join(filter(None, (el.get("class"), el.get("id"), el.get("data-component"), el.get("data-testid"))))
        ):
            return True
    return False


def _links_to_other_page(record: ImageRecord, hints: LeadHints) -> bool:
    return any(tag_of(a) == "a" and _links_elsewhere(a, hints) for a in record.element.iterancestors())


def lead_image(
    images: list[ImageRecord],
    first_order: int,
    first_offset: int,
    hints: LeadHints,
    config: ExtractConfig,
    placed: Sequence[ImageRecord] = (),
    blocks: Sequence[tuple[int, str, etree._Element]] = (),
) -> Optional[ImageRecord]:
    """The page's lead image (see the module doc), or None. ``placed``: the images the
    content already holds; ``blocks``: the (DOM order, tag, owner element) of the
    located text blocks."""
    def under_header(record: ImageRecord) -> bool:
        """Only the article's header (headings, header parts) comes before it."""
        return all(tag in _HEADINGS or _header_like(owner) for order, tag, owner in blocks if order < record.order)

    # 1. The image the page names, wherever it is outside navigation and footers, and
    # not a picture the body shows after its opening (which stays where it is).
    if hints.keys:
        possible = [r for r in images if _may_be_named(r, hints)]
        navigation = {key for r in possible if _in_navigation(r) and r.src for key in _record_keys(r)}
        for record in possible:
            if (
                record.usable
                and _named(record, hints)
                and not _in_navigation(record)
                and not navigation.intersection(_record_keys(record))
                and not _looks_like_logo(record, hints)
                and not _links_to_other_page(record, hints)
            ):
                if any(r is record for r in placed) and record.order > first_order and not under_header(record):
                    break
                return record
    sitewide: list[set[str]] = []  # the keys of the images of sitewide regions, found on first need

    def eligible(record: ImageRecord) -> bool:
        if in_sitewide_region(record.element) or _looks_like_logo(record, hints) or _links_to_other_page(record, hints):
            return False
        if not _large(record, config):
            return False
        if not sitewide:
            sitewide.append({key for r in images if in_sitewide_region(r.element) and r.src for key in _record_keys(r)})
        return not sitewide[0].intersection(_record_keys(record))

    # 2. The first large picture before the text.
    for record in images:
        if record.order >= first_order:
            break
        if first_offset - record.flat_offset > config.lead_image_max_chars or not record.usable:
            continue
        if not in_boilerplate(record.element, None) and eligible(record):
            return record
    # 3. The content's first picture, under the headline and a standfirst or byline.
    for record in sorted(placed, key=lambda r: r.order):
        if record.order < first_order:
            continue
        if record.flat_offset - first_offset > config.lead_image_max_chars:
            break
        if not under_header(record):
            break  # an opening paragraph comes before it: the picture is the body's
        if eligible(record):
            return record
        break
    return None
