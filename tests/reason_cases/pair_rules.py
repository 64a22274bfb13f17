"""Reason codes decided on one image, caption or document by a stage's own rule
function: recycling's caption step (``stages.engines.recycled_pairs.document_candidates`` with
``caption_rules``), CLIP's image, document and pair rules and the NSFW rules with
``ScoringConfig`` thresholds, and the extract stage's unsafe-image step
(``stages.safety.drop_unsafe_images``). Similarities and NSFW scores are the
figures the stage's models give an image; the models themselves are tested in
tests/stages/scoring/test_score_image_text.py and test_nsfw.py."""

from __future__ import annotations

from functools import lru_cache

from docfactory import PROSE, make_doc
from mmcurate.filters import clip, nsfw, reasons
from mmcurate.filters.language import load_language_model
from mmcurate.filters import unsafe_urls
from mmcurate.filters.unsafe_urls import UrlBlocklist
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.stages.config import RecycleConfig, ScoringConfig
from mmcurate.stages.engines.recycled_pairs import caption_rules, document_candidates
from mmcurate.stages.safety import drop_unsafe_images
from reason_cases import ReasonCase, rejected_by

RECYCLE = RecycleConfig(languages=("en",), min_language_score=0.5)
SCORING = ScoringConfig(min_mean_similarity=0.2, min_share_above=0.5)


@lru_cache(maxsize=None)
def language_model():
    return load_language_model()


def captioned(alt: str, text: str = "") -> Document:
    """A page whose one image has ``alt`` as its alt text (and ``text`` around it)."""
    nodes = ((TextNode(text),) if text else ()) + (ImageNode("https://img.example/pic.jpg", alt=alt),)
    return Document("cap", "https://example.org/cap", Provenance("t.warc.gz"), nodes=nodes)


def caption_codes(doc: Document, sources=("alt",)) -> list[str]:
    """The recycle stage's caption step: the codes of the images it turned away."""
    rules = caption_rules(RECYCLE)
    found = document_candidates(doc, rules, sources, language_model())
    return [verdict.reason for ok, item in found if not ok for _, verdict in [item]]


CAPTIONS = [
    ("an image with no alt, caption, title or text", captioned(""), reasons.CAPTION_MISSING),
    ("alt text 'Cat'", captioned("Cat"), reasons.CAPTION_TOO_SHORT),
    ("alt text of 60 words", captioned(" ".join(PROSE.split()[:60])), reasons.CAPTION_TOO_LONG),
    ("alt text 'IMG_2041.jpg'", captioned("IMG_2041.jpg"), reasons.CAPTION_FILENAME),
    ("alt text 'https://example.org/pic'", captioned("https://example.org/pic"), reasons.CAPTION_URL),
    ("alt text 'image photo'", captioned("image photo"), reasons.CAPTION_GENERIC),
    ("a German alt text", captioned("Ein alter Leuchtturm an der Küste im Abendlicht"), reasons.CAPTION_LANGUAGE_NOT_ALLOWED),
    ("alt text of no language", captioned("qzx vbn kk ok fjord xq"), reasons.CAPTION_LOW_LANGUAGE_SCORE),
]


def clip_document(similarities: list[float], images_left: int) -> list[str]:
    """CLIP's document rules on a page whose images scored ``similarities`` and
    ``images_left`` of them were kept."""
    doc = make_doc("clip", PROSE, images=images_left).with_signals(
        clip.aggregates(similarities, share_threshold=SCORING.share_threshold)
    )
    verdict = clip.document_rules(
        doc, min_mean=SCORING.min_mean_similarity, min_share_above=SCORING.min_share_above,
        no_images=SCORING.no_images, had_images=bool(similarities),
    )
    return rejected_by(verdict)


BLOCKLIST = UrlBlocklist.parse(["adult.example"], ["/porn/"], prefix_entries=["gallery.example.org/nsfw/"])


def unsafe_images(src: str) -> list[str]:
    doc = make_doc("unsafe", PROSE)
    doc = Document(doc.doc_id, doc.url, doc.provenance, nodes=doc.nodes + (ImageNode(src),))
    _, dropped = drop_unsafe_images(doc, BLOCKLIST)
    return [verdict.reason for _, verdict in dropped]


NSFW = SCORING.nsfw

CASES = [ReasonCase(code, what, lambda d=d: caption_codes(d)) for what, d, code in CAPTIONS] + [
    ReasonCase(reasons.CLIP_IMAGE_LOW_SIMILARITY, "an image at similarity 0.05",
               lambda: rejected_by(clip.image_verdict(0.05, min_similarity=SCORING.image_min_similarity))),
    ReasonCase(reasons.CLIP_NO_IMAGES_LEFT, "a page whose only image CLIP removed", lambda: clip_document([0.05], 0)),
    ReasonCase(reasons.CLIP_LOW_MEAN_SIMILARITY, "a page whose images average 0.17", lambda: clip_document([0.16, 0.18], 2)),
    ReasonCase(reasons.CLIP_LOW_SHARE_ABOVE, "a page with 1 of 3 images above 0.28", lambda: clip_document([0.30, 0.20, 0.21], 3)),
    ReasonCase(reasons.CLIP_PAIR_LOW_SIMILARITY, "a pair at similarity 0.1",
               lambda: rejected_by(clip.pair_verdict(0.1, min_similarity=SCORING.pair_min_similarity))),
    ReasonCase(reasons.IMAGE_NSFW, "an image with NSFW score 0.9", lambda: rejected_by(nsfw.image_verdict(0.9, threshold=NSFW.threshold))),
    ReasonCase(reasons.SAFETY_NSFW_IMAGES, "a page with one NSFW image",
               lambda: rejected_by(nsfw.document_verdict(1, min_images=NSFW.reject_document_min_images))),
    ReasonCase(reasons.IMAGE_BLOCKLISTED_DOMAIN, "an image on cdn.adult.example",
               lambda: unsafe_images("https://cdn.adult.example/a.jpg")),
    ReasonCase(reasons.IMAGE_BLOCKLISTED_SUBSTRING, "an image under /porn/",
               lambda: unsafe_images("https://img.example/porn/a.jpg")),
    ReasonCase(reasons.IMAGE_BLOCKLISTED_PREFIX, "an image under the listed URL prefix gallery.example.org/nsfw/",
               lambda: unsafe_images("https://www.gallery.example.org/NSFW/a.jpg")),
    ReasonCase(reasons.URL_BLOCKLISTED_PREFIX, "a page under the listed URL prefix gallery.example.org/nsfw/",
               lambda: rejected_by(unsafe_urls.page_url("http://gallery.example.org/nsfw/12", blocklist=BLOCKLIST))),
]
