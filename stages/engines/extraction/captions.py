"""Image captions as real sites write them, found on the page's tree before anything
else reads it, and taken out of the tree so that a caption is the image node's and
never also a line of body text.

An image's caption is, in this order:

1. the text of the elements its ``aria-describedby`` or ``aria-labelledby`` names
   (on the ``<img>`` or on the ``<figure>``, link or ``<picture>`` around it);
2. the ``<figcaption>`` of the ``<figure>`` it is in (HTML's own caption, and
   MediaWiki's current thumbnails, ``figure[typeof~="mw:File"]``); every image of a
   figure shares it, and a gallery's caption goes to those of its figures that have
   none of their own;
3. an element whose class names a caption -- MediaWiki's older ``div.thumbcaption``
   and gallery ``div.gallerytext``, WordPress's ``.wp-caption-text`` (and
   ``dd.wp-caption-dd``), Blogger's ``td.tr-caption``, Squarespace's, Drupal's and
   news sites' ``.caption``, ``.image-caption``, ``.media-caption``,
   ``.photo-caption``, ``.figure-caption``, ``.img_caption`` ... -- beside exactly
   one image in a container at most ``_CAPTION_LEVELS`` levels up (a gallery's
   captions go each to its own image; a caption beside two images goes to none), or
   in the image-only block right before (else after) the caption's block when that
   container holds several (mdBook's ``<p><img></p><p><span class="caption">``);
4. a short ``<em>``, ``<i>``, ``<small>`` or ``<cite>`` right after the image in a
   container that holds nothing else (``<p><img><br><em>The
   harbour in 1905.</em></p>``, as older blogs and news sites write it).

A photo credit is not a caption: an element whose class names a credit, copyright,
photographer, attribution or byline is neither taken as a caption nor read into one,
and neither are screen-reader-only labels ("Image caption"). A caption element that
holds an image, a video or a heading is a container, not a caption."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from lxml import etree

from mmcurate.stages.engines.extraction.html_tree import IMAGE_TAGS, shown_images, squash, tag_of
from mmcurate.stages.engines.extraction.page_scan import PageScan, attached, scan_page

# Class names of caption elements: any name holding "caption" (caption,
# wp-caption-text, media-caption__text, thumbcaption, img_caption), MediaWiki's
# gallery text, Blogger's and others' legends.
_CAPTION_CLASS = re.compile(r"caption|gallerytext|(?:^|[-_])legend(?:$|[-_])", re.IGNORECASE)
# Class names of what is not a caption: credits and bylines. (A container named
# after its caption, "wp-caption", "has-caption", "captioned-image-container", holds
# the image and is passed over because of that.)
_NOT_CAPTION_CLASS = re.compile(r"credit|copyright|photographer|attribution|byline", re.IGNORECASE)
# Screen-reader-only labels ("Image caption", "Image copyright"): Bootstrap's
# sr-only / visually-hidden, WordPress's screen-reader-text, BBC's off-screen.
_SCREEN_READER_ONLY = re.compile(r"(?:^|\s)(?:sr-only|visually-hidden|screen-reader-text|off-screen|offscreen)(?:\s|$)")
_NOT_INSIDE = frozenset({"img", "amp-img", "video", "iframe", "object", "embed", "audio", "h1", "h2", "h3", "h4", "h5", "h6"})
_CAPTION_LEVELS = 3  # how far up from a classed caption its image is looked for
_MAX_CAPTION_CHARS = 2000  # longer than any caption: a mis-named container
# Not <span>: pasted rich text wraps whole paragraphs in spans, an image beside them.
_INLINE_CAPTION_TAGS = frozenset({"em", "i", "small", "cite"})
_INLINE_CAPTION_CHARS = 300
_INLINE_CAPTION_CONTAINERS = frozenset({"p", "div", "center", "td", "li", "dd"})
_WRAPPERS = frozenset({"a", "picture", "span"})  # around an image and nothing else


@dataclass
class Captions:
    """Each captioned ``<img>``'s caption, and the elements taken out of the tree."""

    by_image: dict[etree._Element, str] = field(default_factory=dict)
    removed: int = 0


def _class_names(el: etree._Element) -> list[str]:
    return (el.get("class") or "").split()


def _is_credit(el: etree._Element) -> bool:
    return any(_NOT_CAPTION_CLASS.search(name) for name in _class_names(el))


def caption_text(el: etree._Element) -> str:
    """Text of ``el`` with its elements' texts kept apart (spans do not run into each
    other), without screen-reader-only labels and photo credits inside it."""
    parts: list[str] = []

    def walk(node: etree._Element, top: bool) -> None:
        cls = node.get("class") or ""
        if not top and (_SCREEN_READER_ONLY.search(cls) or _is_credit(node)):
            return
        parts.append(node.text or "")
        for child in node:
            if isinstance(child.tag, str):
                walk(child, False)
            parts.append(child.tail or "")
            parts.append(" ")

    walk(el, True)
    return squash(" ".join(parts))


def _holds_media_or_heading(el: etree._Element) -> bool:
    return any(tag_of(d) in _NOT_INSIDE for d in el.iterdescendants())


def _images_outside(container: etree._Element, caption: etree._Element, shown: set[etree._Element]) -> list[etree._Element]:
    return [img for img in container.iter(*IMAGE_TAGS) if img in shown and not any(a is caption for a in img.iterancestors())]


def _other_media(container: etree._Element, caption: etree._Element) -> bool:
    return any(
        not any(a is caption for a in el.iterancestors()) for el in container.iter("video", "iframe", "object", "embed", "audio")
    )


def _captioned_figure(img: etree._Element) -> Optional[etree._Element]:
    """The nearest figure around ``img`` that has a figcaption of its own."""
    for figure in img.iterancestors("figure"):
        if any(next(c.iterancestors("figure"), None) is figure for c in figure.iter("figcaption")):
            return figure
    return None


def _figure_images(figure: etree._Element, shown: set[etree._Element]) -> list[etree._Element]:
    """The images whose captioned figure is ``figure``: its own, and those of the
    figures inside it without a caption of their own (a gallery's)."""
    return [img for img in figure.iter(*IMAGE_TAGS) if img in shown and _captioned_figure(img) is figure]


def _image_block(el: Optional[etree._Element], shown: set[etree._Element]) -> Optional[etree._Element]:
    """The one image of ``el`` when ``el`` is a block around that image and no text (not
    the image itself: a caption after two images side by side names neither)."""
    if el is None or not isinstance(el.tag, str) or el.tag in IMAGE_TAGS or squash(el.text_content()):
        return None
    images = [img for img in el.iter(*IMAGE_TAGS) if img in shown]
    return images[0] if len(images) == 1 else None


def _sibling(el: etree._Element, forward: bool) -> Optional[etree._Element]:
    sibling = el.getnext() if forward else el.getprevious()
    while sibling is not None and not isinstance(sibling.tag, str):
        sibling = sibling.getnext() if forward else sibling.getprevious()
    return sibling


def _classed_owner(caption: etree._Element, shown: set[etree._Element]) -> Optional[etree._Element]:
    """The one image beside a classed caption element: in its container at most
    ``_CAPTION_LEVELS`` levels up, or, when that container holds several, in the block
    right before (else right after) the caption's own block, holding that image and no
    text (``<p><img></p><p><span class="caption">``, as mdBook writes figures). None
    when the caption belongs to another medium (a video's caption)."""
    container, block = caption, caption
    for _ in range(_CAPTION_LEVELS):
        block, container = container, container.getparent()
        if container is None or tag_of(container) in ("body", "html"):
            return None
        images = _images_outside(container, caption, shown)
        other = _other_media(container, caption)
        if images or other:
            if len(images) == 1 and not other:
                return images[0]
            if other:
                return None
            before = _image_block(_sibling(block, False), shown)
            return before if before is not None else _image_block(_sibling(block, True), shown)
        if tag_of(container) in ("main", "article"):
            return None
    return None


def _box(img: etree._Element) -> etree._Element:
    """The image with the wrappers around it that hold nothing else (a link, a
    ``<picture>`` with its sources, a span)."""
    box = img
    while True:
        parent = box.getparent()
        if parent is None or tag_of(parent) not in _WRAPPERS or squash(parent.text) or squash(box.tail):
            return box
        if any(child is not box and tag_of(child) not in ("source", "noscript") for child in parent):
            return box
        box = parent


def _inline_caption(img: etree._Element) -> Optional[etree._Element]:
    """A short inline element right after the image (``<br>`` between them at most) in
    a container that holds nothing else."""
    box = _box(img)
    container = box.getparent()
    if container is None or tag_of(container) not in _INLINE_CAPTION_CONTAINERS or squash(container.text):
        return None
    children = list(container)
    rest = [child for child in children if child is not box and tag_of(child) != "br"]
    if len(rest) != 1:
        return None
    after = rest[0]
    if children.index(after) < children.index(box) or any(squash(child.tail) for child in children):
        return None
    if tag_of(after) not in _INLINE_CAPTION_TAGS or _is_credit(after) or _holds_media_or_heading(after):
        return None
    text = caption_text(after)
    return after if text and len(text) <= _INLINE_CAPTION_CHARS else None


def _referenced(img: etree._Element, ids: dict[str, etree._Element]) -> list[etree._Element]:
    """The elements ``aria-describedby`` / ``aria-labelledby`` name, on the image, on
    the wrappers that hold only it, or on its figure."""
    box = _box(img)
    holders = [img]
    while holders[-1] is not box:
        holders.append(holders[-1].getparent())
    figure = next(img.iterancestors("figure"), None)
    if figure is not None:
        holders.append(figure)
    for holder in holders:
        found = []
        for attr in ("aria-describedby", "aria-labelledby"):
            for ref in (holder.get(attr) or "").split():
                el = ids.get(ref)
                if el is None or el is img or tag_of(el) in _NOT_INSIDE or tag_of(el) in ("body", "html"):
                    continue
                if any(a is el for a in img.iterancestors()) or _holds_media_or_heading(el):
                    continue
                found.append(el)
        if found:
            return found
    return []


def find_captions(root: etree._Element, scan: Optional[PageScan] = None) -> Captions:
    """Every image's caption (see the module doc), with the caption elements taken
    out of ``root`` (their tails kept). ``scan``: ``page_scan.scan_page(root)``, taken
    before elements were removed from the tree (those are passed over)."""
    out = Captions()
    images = shown_images(root)
    if not images:
        return out
    shown = set(images)
    scan = scan_page(root) if scan is None else scan
    by_image = out.by_image
    taken: list[etree._Element] = []
    if any(attached(el, root) for el in scan.described):
        ids = {name: el for name, el in scan.ids.items() if attached(el, root)}
        for img in images:
            refs = _referenced(img, ids)
            text = squash(" ".join(caption_text(el) for el in refs))
            if text and len(text) <= _MAX_CAPTION_CHARS:
                by_image[img] = text
                taken.extend(refs)
    for caption in scan.captions:
        if tag_of(caption) != "figcaption" and not any(_CAPTION_CLASS.search(n) for n in _class_names(caption)):
            continue  # "legend" inside a longer word
        if not attached(caption, root):
            continue
        if _is_credit(caption) or _holds_media_or_heading(caption):
            continue
        if any(a is t for t in taken for a in caption.iterancestors()):
            continue  # inside a caption already taken
        text = caption_text(caption)
        if not text or len(text) > _MAX_CAPTION_CHARS:
            continue
        figure = next(caption.iterancestors("figure"), None) if tag_of(caption) == "figcaption" else None
        owners = _figure_images(figure, shown) if figure is not None else []
        if not owners:
            owner = _classed_owner(caption, shown)
            owners = [owner] if owner is not None else []
        if not owners:
            continue  # no image beside it: some other caption (a video's, a quote's)
        for img in owners:
            by_image.setdefault(img, text)
        taken.append(caption)
    for img in images:
        if img not in by_image:
            caption = _inline_caption(img)
            if caption is not None:
                by_image[img] = caption_text(caption)
                taken.append(caption)
    for el in taken:
        if el.getparent() is not None and not any(a is t for t in taken for a in el.iterancestors()):
            el.drop_tree()
            out.removed += 1
    return out
