"""Which signals the report plots, and against which thresholds of the run's config:
one histogram per signal (kept documents and rejected pages), images per document,
CLIP similarity of kept images and of recycled pairs, and kept documents by language."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import duckdb

from mmcurate.pipeline.report import queries
from mmcurate.pipeline.report.charts import Distribution, bars_svg, histogram_svg
from mmcurate.pipeline.report.manifest_view import config_value, stage_ran, thresholds

HEURISTICS = "heuristics"

# (title, signal key, thresholds as (config path, label, gate), integer-valued).
ThresholdSpec = tuple[str, str, Optional[str]]
SIGNALS: tuple[tuple[str, str, list[ThresholdSpec], bool], ...] = (
    (
        "word count (content.word_count)",
        "content.word_count",
        [
            ("heuristics.min_words", "heuristics.min_words", HEURISTICS),
            ("heuristics.gopher_quality.min_words", "gopher_quality.min_words", "heuristics.gopher_quality.enabled"),
            ("heuristics.gopher_quality.max_words", "gopher_quality.max_words", "heuristics.gopher_quality.enabled"),
            ("heuristics.obelics.min_words", "obelics.min_words", "heuristics.obelics.enabled"),
            ("heuristics.obelics.max_words", "obelics.max_words", "heuristics.obelics.enabled"),
        ],
        True,
    ),
    (
        "language ID score (language.score)",
        "language.score",
        [("heuristics.language.min_score", "language.min_score", HEURISTICS)],
        False,
    ),
    (
        "flagged-word ratio (safety.flagged_words.ratio)",
        "safety.flagged_words.ratio",
        [
            (
                "heuristics.flagged_words.max_document_ratio",
                "flagged_words.max_document_ratio",
                "heuristics.flagged_words.enabled",
            )
        ],
        False,
    ),
    ("quality score (quality_score)", "quality_score", [("quality.min_score", "quality.min_score", "quality")], False),
    ("machine-translation score (mt_score)", "mt_score", [("quality.mt.max_score", "quality.mt.max_score", "quality")], False),
    ("weak-model text score (llm_score)", "llm_score", [("quality.llm.max_score", "quality.llm.max_score", "quality")], False),
)

IMAGE_COUNT_THRESHOLDS: list[ThresholdSpec] = [
    ("heuristics.min_images", "heuristics.min_images", HEURISTICS),
    ("heuristics.obelics.max_images", "obelics.max_images", "heuristics.obelics.enabled"),
    ("images.min_images", "images.min_images", "images"),
    ("images.max_images", "images.max_images", "images"),
]
CLIP_THRESHOLDS: list[ThresholdSpec] = [
    ("scoring.image_min_similarity", "scoring.image_min_similarity", "scoring"),
    ("scoring.share_threshold", "scoring.share_threshold", "scoring"),
]
PAIR_THRESHOLDS: list[ThresholdSpec] = [("scoring.pair_min_similarity", "scoring.pair_min_similarity", "recycle")]


def distributions(con: duckdb.DuckDBPyConnection, views: Sequence[str], manifest: Mapping[str, Any]) -> list[str]:
    """The figures (HTML with inline SVG) of every signal this run measured."""
    figures: list[str] = []
    for i, (title, key, specs, integer) in enumerate(SIGNALS):
        kept = queries.signal_values(con, views, "documents", key)
        rejected = queries.signal_values(con, views, "decisions", key)
        if not kept and not rejected:
            continue
        figures.append(histogram_svg(Distribution(title, kept, rejected, thresholds(manifest, specs), integer=integer), f"dist-{i}"))

    kept_images, rejected_images = queries.images_per_document(con, views)
    if kept_images or rejected_images:
        # A maximum of 0 means "no maximum".
        thr = [(v, l) for v, l in thresholds(manifest, IMAGE_COUNT_THRESHOLDS) if not (l.endswith("max_images") and v == 0)]
        figures.append(
            histogram_svg(Distribution("images per document", kept_images, rejected_images, thr, integer=True), "dist-images")
        )

    # Similarities measured on kept items only: per image of the kept documents, per recycled pair.
    for title, values, specs, unit, plot_id in (
        ("CLIP image-text similarity (per kept image)", queries.clip_scores(con, views), CLIP_THRESHOLDS, "images", "dist-clip"),
        ("CLIP similarity of recycled pairs", queries.pair_similarities(con, views), PAIR_THRESHOLDS, "pairs", "dist-pairs"),
    ):
        if values:
            dist = Distribution(title, values, [], thresholds(manifest, specs), unit=unit)
            figures.append(histogram_svg(dist, plot_id))

    langs = queries.kept_languages(con, views)
    if langs:
        allowed = config_value(manifest, "heuristics.language.allowed") or []
        note = "allowed: " + (", ".join(allowed) if allowed else "any language") if stage_ran(manifest, HEURISTICS) else ""
        figures.append(bars_svg("kept documents by language", langs, "dist-language", note))
    return figures
