"""Settings of the recycle stage: image-text pairs from rejected documents.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mmcurate.stages.config.base import Section as _Section


class RecycleConfig(_Section):
    """Stage `recycle`: rejected documents (and optionally kept ones) as image-text pairs."""

    # Caption sources in order of preference: the first that passes the caption rules wins.
    caption_sources: tuple[Literal["alt", "figcaption", "title", "nearest_sentence"], ...] = (
        "alt",
        "figcaption",
        "title",
        "nearest_sentence",
    )
    # Caption length. LAION-400M drops alt texts shorter than 5 characters
    # (Schuhmann et al. 2021, sec. 2.2); one word is enough for mmcurate (a title
    # or a name; DataComp's basic filter asks English captions for more than two
    # words: Gadre et al. 2023, sec. 3.4). CLIP reads at most 77 tokens (~50 words):
    # longer texts are not captions but paragraphs. Words by count_words (CJK by
    # characters).
    min_words: int = Field(default=1, ge=1)
    # Longest caption in words (see min_words).
    max_words: int = Field(default=50, ge=1)
    # Shortest caption in characters (LAION-400M: 5).
    min_chars: int = Field(default=5, ge=1)
    # Longest caption in characters.
    max_chars: int = Field(default=500, ge=1)
    # Captions that are nothing but these words (case-insensitive) are generic.
    generic_words: tuple[str, ...] = (
        "image",
        "images",
        "photo",
        "photos",
        "picture",
        "pictures",
        "img",
        "pic",
        "thumbnail",
        "banner",
        "logo",
        "icon",
        "untitled",
        "placeholder",
        "figure",
        "screenshot",
        "click",
        "here",
        "view",
        "larger",
        "full",
        "size",
        "more",
        "read",
        "a",
        "an",
        "the",
        "of",
        "and",
        "to",
    )
    # Caption language by the heuristics stage's fastText model: codes to keep (empty:
    # any) and the minimum probability of the top language (0: no check).
    languages: tuple[str, ...] = ()
    # Minimum probability of the caption's top language (0: no check).
    min_language_score: float = Field(default=0.0, ge=0, le=1)
    # Kept documents emit pairs too (marked source_kept = true).
    from_kept: bool = False
    # Pairs store the image bytes (img2dataset style) or only the image_id (the
    # images table holds the bytes).
    store_bytes: bool = False
