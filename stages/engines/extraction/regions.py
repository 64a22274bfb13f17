"""Page regions whose images are not content: navigation, sidebars, forms, headers
and footers (outside an article or main), and the sitewide ones."""

from __future__ import annotations

from typing import Optional

from lxml import etree

from mmcurate.stages.engines.extraction.html_tree import tag_of


# Regions whose images are never recovered.
_BOILERPLATE_TAGS = frozenset({"nav", "aside", "form"})
_SECTION_BOUNDED_TAGS = frozenset({"header", "footer"})  # boilerplate unless inside article/main
_BOILERPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})


def common_ancestor(elements: list[etree._Element]) -> Optional[etree._Element]:
    if not elements:
        return None
    chain = [elements[0], *elements[0].iterancestors()]
    depth_of = {id(el): depth for depth, el in enumerate(chain)}
    best = 0
    seen = set()  # ids of elements walked up from already (``elements`` keeps them alive)
    for el in elements[1:]:
        if id(el) in seen:
            continue
        seen.add(id(el))
        depth = depth_of.get(id(el))
        if depth is None:
            for candidate in el.iterancestors():
                depth = depth_of.get(id(candidate))
                if depth is not None:
                    break
        if depth is not None and depth > best:
            best = depth
    return chain[best]


def in_boilerplate(element: etree._Element, content_root: Optional[etree._Element]) -> bool:
    """Whether ``element`` sits in nav/aside/form/header/footer below ``content_root``
    (header and footer count only when no ancestor is an article or main). One walk
    up the ancestors, which stops at ``content_root`` when what lies above cannot
    change the answer: it runs for every image of every page."""
    sectioned = False
    bounded = False  # a header or footer below content_root
    for ancestor in element.iterancestors():
        tag = ancestor.tag
        if ancestor is content_root:
            # Above this point only an article or main counts (it makes the header
            # or footer part of the content).
            if not bounded or sectioned or tag == "article" or tag == "main":
                return False
            return next(ancestor.iterancestors("article", "main"), None) is None
        if tag == "article" or tag == "main":
            sectioned = True
        elif tag in _BOILERPLATE_TAGS:
            return True
        elif tag in _SECTION_BOUNDED_TAGS:
            bounded = True
        role = ancestor.get("role")
        if role and role.lower() in _BOILERPLATE_ROLES:
            return True
    return bounded and not sectioned


# Elements that hold text rather than contain blocks.
TEXT_BLOCK_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "blockquote", "pre", "td", "th", "caption"}
    | {"figcaption", "a", "span", "b", "i", "em", "strong", "small", "font", "label", "code", "sup", "sub"}
)


def is_descendant(element: etree._Element, ancestor: etree._Element) -> bool:
    return any(a is ancestor for a in element.iterancestors())


# Regions whose images are sitewide: never the lead image, nor an image that also appears there.
_SITEWIDE_TAGS = frozenset({"nav", "aside", "form", "footer"})
_SITEWIDE_ROLES = frozenset({"navigation", "contentinfo", "complementary", "search"})


def in_sitewide_region(element: etree._Element) -> bool:
    for ancestor in element.iterancestors():
        if tag_of(ancestor) in _SITEWIDE_TAGS or (ancestor.get("role") or "").lower() in _SITEWIDE_ROLES:
            return True
    return False
