"""The minimum a page needs to be an interleaved document: text and images.

Defaults (config `heuristics`): at least 50 words, as Gopher's lower bound
(Rae et al. 2021, "Scaling Language Models", appendix A), and at least one image,
since an interleaved image-text document without images is a text document.
"""

from __future__ import annotations

from mmcurate.filters import reasons
from mmcurate.filters.text import TextView, view_of
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

# The one word-count signal of a document's main text (word units, ``text.word_units``):
# the Gopher and OBELICS word bounds record their count under it too.
WORD_COUNT = "content.word_count"
TEXT_NODES = "content.text_nodes"
IMAGE_COUNT = "content.image_count"


def not_empty(doc: Document) -> Verdict:
    """Reject a page from which nothing was extracted: no word and no image. Checked
    before node cleanup and the image minimum, so an empty page is not reported as a
    page without images."""
    if not doc.image_nodes and not any(n.text.strip() for n in doc.text_nodes):
        return reject(reasons.CONTENT_EMPTY, 0, 1, **{WORD_COUNT: 0.0, IMAGE_COUNT: 0.0})
    return keep()


def has_text(doc: Document) -> Verdict:
    """Reject a document whose main text is empty."""
    nodes = sum(1 for n in doc.text_nodes if n.text.strip())
    if nodes == 0:
        return reject(reasons.CONTENT_NO_TEXT, 0, 1, **{TEXT_NODES: 0.0})
    return keep(**{TEXT_NODES: float(nodes)})


def min_words(doc: Document, *, min_words: int, view: TextView | None = None) -> Verdict:
    """Reject a document with fewer than ``min_words`` word units in its main text."""
    words = view_of(doc, view).word_count
    if words < min_words:
        return reject(reasons.CONTENT_TOO_FEW_WORDS, words, min_words, **{WORD_COUNT: float(words)})
    return keep(**{WORD_COUNT: float(words)})


def min_images(doc: Document, *, min_images: int) -> Verdict:
    """Reject a document with fewer than ``min_images`` images."""
    images = len(doc.image_nodes)
    if images < min_images:
        return reject(reasons.CONTENT_TOO_FEW_IMAGES, images, min_images, **{IMAGE_COUNT: float(images)})
    return keep(**{IMAGE_COUNT: float(images)})
