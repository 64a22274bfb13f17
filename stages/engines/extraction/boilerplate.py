"""Page furniture inside or around the article, taken out of the page's tree before
anything reads it, by rules on structure: ARIA roles, class and id names, link
targets and link density. Each rule has a name; ``strip_boilerplate`` counts what
each removed (``RULES``), and the extract stage counts those per rule.

- ``toc``: tables of contents (MediaWiki's ``#toc``, Easy Table of Contents, Rank
  Math's and Yoast's blocks, ``role="doc-toc"``, a ``<nav>`` labelled as contents):
  a class or id name with the word "toc" or "table of contents", mostly links;
- ``references``: reference and footnote lists (MediaWiki's ``div.reflist`` /
  ``ol.references``, ``div.footnotes`` of Markdown renderers, ``role="doc-endnotes"``
  or ``doc-bibliography``);
- ``footnote_marks``: the inline citation marks that point into those lists
  (MediaWiki's ``sup.reference`` "[12]", ``role="doc-noteref"``, Markdown's
  ``a.footnote-ref``), when they read as a mark ("[12]", "3", "a", "*"): Sphinx
  writes ``a.reference`` on every cross-reference link, whose words stay;
- ``navbox``: MediaWiki's navigation boxes and category links (``.navbox``,
  ``.vertical-navbox``, ``#catlinks``, ``.authority-control``);
- ``edit_links``: "[edit]" section links (``.mw-editsection``, WordPress's
  ``.edit-link``, a link to ``action=edit``);
- ``jump_links``: "Jump to content" / "Skip to content" links (``.mw-jump-link``,
  ``.skip-link``, ``#jump-to-nav``), short and mostly links;
- ``cookie_bar``: cookie and consent banners (a class or id name that joins cookie,
  consent or GDPR to banner, bar, notice, popup, law ... -- "cookie-law-info-bar",
  "cookieConsent", "gdpr-notice", not "cookie-recipe" -- or a consent platform's own:
  OneTrust, Cookiebot, Complianz, Quantcast, Usercentrics, Didomi, TrustArc,
  Sourcepoint, cookieconsent's ``cc-window``; a dialog labelled as cookie consent),
  at most 300 words;
- ``share_bar``: share and follow bars (Jetpack's ``sharedaddy``, AddToAny,
  ShareThis, Shareaholic, a class or id name with share, sharing or social in it),
  at most 40 words and mostly links or buttons.

A heading left with nothing under it by a removal ("References" over the removed
list, "Contents") goes with it, counted under the same rule. Nothing that holds the
page's headline (``<h1>``), an ``<article>`` or ``<main>`` is ever removed, so a
class on a container of the whole article ("has-toc", "post-sharing-enabled") cannot
take the article with it."""

from __future__ import annotations

import re
from typing import Optional

from lxml import etree

from mmcurate.stages.engines.extraction.html_tree import squash, tag_of
from mmcurate.stages.engines.extraction.page_scan import scan_page

TOC = "toc"
REFERENCES = "references"
FOOTNOTE_MARKS = "footnote_marks"
NAVBOX = "navbox"
EDIT_LINKS = "edit_links"
JUMP_LINKS = "jump_links"
COOKIE_BAR = "cookie_bar"
SHARE_BAR = "share_bar"
RULES = (TOC, REFERENCES, FOOTNOTE_MARKS, NAVBOX, EDIT_LINKS, JUMP_LINKS, COOKIE_BAR, SHARE_BAR)

# Each rule's class or id names (one name at a time, lower case).
_TOC_NAME = re.compile(r"(?:^|[-_])toc(?:$|[-_])|^toc(?:title|number|level|text|list)|table[-_]?of[-_]?contents|^lwptoc")
_REFERENCES_NAME = re.compile(
    r"^(?:mw-)?references(?:[-_](?:wrap|list|columns|small|section))?$|^reference[-_]list$|^reflist|^refbegin"
    r"|^footnotes(?:[-_](?:list|section|container|end-of-document))?$|^footnote[-_]list$|^endnotes$|^bibliography$"
)
_FOOTNOTE_MARK_NAME = re.compile(r"^(?:reference|footnote[-_]ref(?:erence)?|fn[-_]?ref|footnote)$")
# What a footnote mark reads: "[12]", "12", "a", "*", "†" -- not a link's words (Sphinx
# writes class="reference" on every cross-reference link).
_MARK_TEXT = re.compile(r"^\s*\[?\s*(?:\d{1,4}|[a-z]{1,2}|[*†‡§¶]{1,3})\s*\]?\s*$", re.IGNORECASE)
_LIST_TAGS = frozenset({"div", "ol", "ul", "dl", "section", "aside", "table", "details", "footer", "nav"})
_NAVBOX_NAME = re.compile(r"^(?:vertical-)?navbox(?:$|[-_])|^catlinks$|^mw-normal-catlinks$|^authority-control$|^sistersitebox$")
_EDIT_NAME = re.compile(r"^(?:mw-)?editsection$|^edit[-_]section$|^(?:post-)?edit[-_]link$|^editlink$")
_JUMP_NAME = re.compile(
    r"^(?:mw-)?jump(?:[-_]link|[-_]to[-_]nav)?$|(?:^|[-_])skip[-_]?(?:links?|nav(?:igation)?|to[-_]\w+|content|main)(?:$|[-_])"
    r"|^skiplink|^screen-reader-shortcut$"
)
_BANNER = r"(?:banner|bar|notice|law|popup|pop-up|policy|notification|message|box|modal|overlay|dialog|alert|info|accept|wrap|container|warning|disclaimer|prompt|consent)"
_COOKIE_NAME = re.compile(
    rf"(?:cookies?|consent|gdpr)[-_]?{_BANNER}|{_BANNER}[-_]?(?:cookies?|consent|gdpr)|^(?:cookies?|consent|gdpr)$"
    r"|cookiebot|^onetrust|^cmplz|^qc-cmp|^usercentrics|^didomi|^truste|^sp_message|^cc-(?:window|banner)$",
    re.IGNORECASE,
)
_SHARE_NAME = re.compile(r"shar(?:e|ing)|sharedaddy|addtoany|^a2a|shareaholic|sharethis|^ssba|(?:^|[-_])socials?(?:$|[-_])")

_HEADINGS = ("h2", "h3", "h4", "h5", "h6")
_ALL_HEADINGS = ("h1", *_HEADINGS)
_PROTECTED = ("h1", "article", "main")
_NEVER = frozenset({"html", "body", "head", "article", "main", "h1"})

_TOC_MAX_WORDS = 400
_JUMP_MAX_WORDS = 20
_COOKIE_MAX_WORDS = 300
_SHARE_MAX_WORDS = 40
_MOSTLY_LINKS = 0.5  # link text over all text


def _words(el: etree._Element) -> int:
    return len(el.text_content().split())


def link_density(el: etree._Element) -> float:
    """Share of ``el``'s text (whitespace removed) inside links."""
    total = len("".join(el.text_content().split()))
    if not total:
        return 0.0
    linked = sum(len("".join(a.text_content().split())) for a in el.iter("a") if next(a.iterancestors("a"), None) is None)
    return min(1.0, linked / total)


def _controls(el: etree._Element) -> int:
    return sum(1 for _ in el.iter("a", "button"))


_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def _slug(text: str) -> str:
    return _NOT_SLUG.sub("-", text.lower()).strip("-")


def _names(el: etree._Element) -> list[str]:
    """The element's class names and id, lower case; not an id made from the text of its
    own heading (Markdown renderers, Sphinx and table-of-contents plugins write
    ``<h2 id="shared-state-concurrency">``, ``<section id="cookie-policy">``)."""
    names = (el.get("class") or "").lower().split()
    ident = (el.get("id") or "").lower().strip()
    if ident:
        heading = el if tag_of(el) in _ALL_HEADINGS else next(el.iter(*_ALL_HEADINGS), None)
        slug = _slug(ident)
        if heading is None or not slug or slug not in _slug(heading.text_content()):
            names.append(ident)
    return names


def _any(pattern: re.Pattern, names: list[str]) -> bool:
    return any(pattern.search(name) for name in names)


def _rule_of(el: etree._Element) -> Optional[str]:
    """The rule that removes ``el``, or None."""
    tag = tag_of(el)
    if tag in _NEVER or tag in _HEADINGS:
        return None  # a heading is removed only with the section a rule leaves empty
    role = (el.get("role") or "").strip().lower()
    names = _names(el)
    if tag == "a" and "action=edit" in (el.get("href") or ""):
        return EDIT_LINKS
    if (role == "doc-noteref" or (tag in ("sup", "a") and _any(_FOOTNOTE_MARK_NAME, names))) and _MARK_TEXT.match(
        el.text_content()
    ):
        return FOOTNOTE_MARKS
    if role in ("doc-endnotes", "doc-bibliography") or (tag in _LIST_TAGS and _any(_REFERENCES_NAME, names)):
        return REFERENCES
    label = (el.get("aria-label") or "").lower()
    if role == "doc-toc" or (tag == "nav" and "contents" in label) or _any(_TOC_NAME, names):
        if _words(el) <= _TOC_MAX_WORDS and link_density(el) >= _MOSTLY_LINKS:
            return TOC
    if _any(_NAVBOX_NAME, names):
        return NAVBOX
    if _any(_EDIT_NAME, names):
        return EDIT_LINKS
    if _any(_JUMP_NAME, names):
        if _words(el) <= _JUMP_MAX_WORDS and (link_density(el) >= _MOSTLY_LINKS or tag == "a"):
            return JUMP_LINKS
    if _any(_COOKIE_NAME, names) or (role in ("dialog", "alertdialog", "region", "banner") and ("cookie" in label or "consent" in label)):
        if _words(el) <= _COOKIE_MAX_WORDS:
            return COOKIE_BAR
    if _any(_SHARE_NAME, names):
        words = _words(el)
        if words <= _SHARE_MAX_WORDS and (words <= 6 or link_density(el) >= _MOSTLY_LINKS or _controls(el) >= 2):
            return SHARE_BAR
    return None


def _empty(el: etree._Element) -> bool:
    """No text, no link, button or image: nothing to remove (a style holder)."""
    return not el.text_content().strip() and next(el.iter("a", "button", "img", "input"), None) is None


def _protected(el: etree._Element) -> bool:
    return next(el.iterdescendants(*_PROTECTED), None) is not None


def _is_heading_block(el: etree._Element) -> bool:
    """A section heading: ``<h2>``-``<h6>``, or a wrapper that holds one heading and
    no other text (MediaWiki's ``div.mw-heading``)."""
    tag = tag_of(el)
    if tag in _HEADINGS:
        return True
    if tag not in ("div", "header", "span"):
        return False
    headings = [child for child in el if tag_of(child) in _HEADINGS]
    if len(headings) != 1:
        return False
    return squash(el.text_content()) == squash(headings[0].text_content())


def _section_is_empty(heading: etree._Element) -> bool:
    """Whether nothing with text or an image follows ``heading`` before the next
    heading at its level or its parent's end."""
    if squash(heading.tail):
        return False
    for el in heading.itersiblings():
        if not isinstance(el.tag, str):
            continue
        if _is_heading_block(el):
            return True
        if squash(el.text_content()) or next(el.iter("img"), None) is not None or squash(el.tail):
            return False
    return True


def _previous_element(el: etree._Element) -> Optional[etree._Element]:
    prev = el.getprevious()
    while prev is not None and not isinstance(prev.tag, str):
        prev = prev.getprevious()
    return prev


# Any name one of the rules could take: one search per element before the rules'.
_ANY_NAME = re.compile(
    r"toc|contents|refer|reflist|refbegin|footnote|endnote|bibliograph|fn|navbox|catlinks|authority|sistersite|edit"
    r"|jump|skip|screen-reader|cookie|consent|gdpr|onetrust|cybot|cmplz|qc-cmp|usercentrics|didomi|truste|sp_message"
    r"|cc-|shar|addtoany|a2a|ssba|social"
)


_ROLES = frozenset({"doc-noteref", "doc-endnotes", "doc-bibliography", "doc-toc"})


def _may_match(el: etree._Element) -> bool:
    """Whether some rule could take ``el``: one search of its names before the rules'."""
    if _ANY_NAME.search(f"{el.get('class') or ''} {el.get('id') or ''}".lower()):
        return True
    if (el.get("role") or "").strip().lower() in _ROLES or "action=edit" in (el.get("href") or ""):
        return True
    label = (el.get("aria-label") or "").lower()
    return "cookie" in label or (tag_of(el) == "nav" and "contents" in label)


def strip_boilerplate(root: etree._Element, named: Optional[list[etree._Element]] = None) -> dict[str, int]:
    """Removes the page furniture of ``root``'s body in place (the tail text after
    each removed element stays) and returns how many elements each rule removed.
    ``named``: the body's elements with a name, role or label a rule may take, in
    document order (``page_scan.scan_page(root).named``)."""
    counts = dict.fromkeys(RULES, 0)
    chosen: list[tuple[etree._Element, str]] = []
    marked: set[etree._Element] = set()
    for el in scan_page(root).named if named is None else named:
        if not _may_match(el):
            continue
        rule = _rule_of(el)
        if rule is None or _protected(el) or _empty(el):
            continue
        if any(a in marked for a in el.iterancestors()):
            continue  # inside an element already removed
        chosen.append((el, rule))
        marked.add(el)
    # The element before each removed section, or before the wrapper it leaves empty:
    # a heading there may be left with nothing under it.
    before: list[tuple[etree._Element, str]] = []
    for el, rule in chosen:
        prev = _previous_element(el)
        parent = el.getparent()
        el.drop_tree()
        counts[rule] += 1
        if rule not in (TOC, REFERENCES, NAVBOX):
            continue
        if prev is not None:
            before.append((prev, rule))
        elif parent is not None and tag_of(parent) not in _NEVER and not squash(parent.text_content()):
            prev = _previous_element(parent)
            if prev is not None:
                before.append((prev, rule))
    for heading, rule in before:
        if heading.getparent() is not None and _is_heading_block(heading) and _section_is_empty(heading):
            heading.drop_tree()
            counts[rule] += 1
    return counts
