"""Caption rules for recycled pairs (filters/captions.py)."""

from __future__ import annotations

import pytest

from mmcurate.filters import captions, reasons
from mmcurate.filters.captions import CaptionRules, caption_candidates, check_caption, choose_caption, nearest_sentence
from mmcurate.filters.language import load_language_model
from mmcurate.pipeline.config import RecycleConfig
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.stages.engines.recycled_pairs import caption_rules

RULES = caption_rules(RecycleConfig())


@pytest.mark.parametrize(
    "text, expected",
    [
        ("A Light in the Attic", ""),
        ("蓝色的猫坐在窗台上", ""),
        ("Soumission", ""),
        ("", reasons.CAPTION_MISSING),
        ("https://example.org/cat.jpg", reasons.CAPTION_URL),
        ("www.example.com", reasons.CAPTION_URL),
        ("IMG_1234.JPG", reasons.CAPTION_FILENAME),
        ("DSC01234", reasons.CAPTION_FILENAME),
        ("my cat (2).png", reasons.CAPTION_FILENAME),
        ("20240501_183012", reasons.CAPTION_FILENAME),
        ("Photo", reasons.CAPTION_GENERIC),
        ("click here to view the full size image", reasons.CAPTION_GENERIC),
        ("Olio", reasons.CAPTION_TOO_SHORT),
        ("word " * 60, reasons.CAPTION_TOO_LONG),
    ],
)
def test_caption_rules(text, expected):
    assert check_caption(text, RULES).reason == expected


def test_language_rules_use_the_heuristics_model():
    model = load_language_model()
    rules = CaptionRules(1, 50, 5, 500, frozenset(), languages=frozenset({"en"}), min_language_score=0.0)
    assert check_caption("A red barn in a green field at dawn", rules, model).keep
    assert check_caption("Ein rotes Haus auf einer grünen Wiese", rules, model).reason == reasons.CAPTION_LANGUAGE_NOT_ALLOWED
    strict = CaptionRules(1, 50, 5, 500, frozenset(), min_language_score=0.99)
    assert check_caption("red barn green", strict, model).reason == reasons.CAPTION_LOW_LANGUAGE_SCORE


DOC = Document(
    doc_id="d",
    url="https://site.example/d",
    provenance=Provenance("t.warc"),
    nodes=(
        TextNode("The valley in spring. Sheep on the hill."),
        ImageNode("https://img.example/a.jpg", alt="IMG_0042.jpg", caption="", title="Sheep grazing"),
        ImageNode("https://img.example/b.jpg", alt="", caption="The old mill by the river"),
        TextNode("Next comes the mill. It still turns."),
        ImageNode("https://img.example/c.jpg"),
    ),
)


def test_sources_in_order_of_preference():
    assert caption_candidates(DOC, 1) == [("alt", "IMG_0042.jpg"), ("title", "Sheep grazing"), ("nearest_sentence", "Sheep on the hill.")]
    # alt fails (a file name): the title wins.
    assert choose_caption(caption_candidates(DOC, 1), RULES)[0] == ("title", "Sheep grazing")
    assert choose_caption(caption_candidates(DOC, 2), RULES)[0] == ("figcaption", "The old mill by the river")
    # No own text: the nearest sentence (the last sentence of the block before it).
    assert choose_caption(caption_candidates(DOC, 4), RULES)[0] == ("nearest_sentence", "It still turns.")
    # The block after an image wins a tie of distance.
    assert nearest_sentence(DOC, 2) == "Next comes the mill."
    chosen, verdict = choose_caption(caption_candidates(DOC, 1, ("alt",)), RULES)
    assert chosen is None and verdict.reason == reasons.CAPTION_FILENAME and verdict.detail.startswith("alt:")
    assert choose_caption([], RULES)[1].reason == reasons.CAPTION_MISSING
    assert captions.split_sentences("Hello there. How are you? 我很好。你呢？") == ["Hello there.", "How are you?", "我很好。", "你呢？"]
