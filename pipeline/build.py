"""Assembles the stages into one Beam pipeline from a ``Config``."""

from __future__ import annotations

import logging
from typing import Optional, Sequence

import apache_beam as beam

from mmcurate.pipeline.config import Config
from mmcurate.runners.options import ScoringOptions
from mmcurate.runners.progress import CountKeptFn
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.heuristics import ApplyTextHeuristics
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.safety import DropUnsafeImages, RedactPersonalData, RejectUnsafePages, has_lists
from mmcurate.stages.write import WriteCorpus


# The model stages are imported only when they run: Beam's RunInference module
# imports torch (about 1.5 s and 600 MB), which a text-only run never needs.
def _score_quality(config: Config) -> beam.PTransform:
    from mmcurate.stages.quality import ScoreQuality

    return ScoreQuality(config.quality)


def _curate_images(config: Config, read) -> beam.PTransform:
    from mmcurate.stages.images import CurateImages

    return CurateImages(config.images, read.images)


def _score_image_text(config: Config, rows, accelerator) -> beam.PTransform:
    from mmcurate.stages.scoring import ScoreImageText

    return ScoreImageText(config.scoring, rows, accelerator=accelerator)


# Filtering stages in funnel order, each a PTransform from documents to a
# StageResult, built from its own config section only.
_FILTER_STAGES = {
    "heuristics": lambda config: ApplyTextHeuristics(config.heuristics),
    "dedup": lambda config: DedupDocuments(config.dedup),
    "quality": _score_quality,
    # Also takes the image payloads the read stage set aside (see _TAKES_READ).
    "images": _curate_images,
    # Also takes the images table's rows (the bytes, joined by image_id) and the
    # accelerator hint of its model transform (see _TAKES_IMAGE_ROWS).
    "scoring": _score_image_text,
}

# Stages built from (config, read result) instead of config alone.
_TAKES_READ = frozenset({"images"})
# Stages built from (config, images-table rows, accelerator hint).
_TAKES_IMAGE_ROWS = frozenset({"scoring"})

log = logging.getLogger(__name__)


def scoring_accelerator(pipeline: beam.Pipeline) -> Optional[str]:
    """The --scoring_accelerator flag (set by the dataflow preset's gpu=), if given."""
    return pipeline.options.view_as(ScoringOptions).scoring_accelerator


def build_pipeline(
    pipeline: beam.Pipeline,
    inputs: Sequence[str],
    output_dir: str,
    config: Config,
    reader: beam.PTransform | None = None,
) -> None:
    """Adds read → extract → enabled filtering stages → write to ``pipeline``.

    ``reader`` replaces ``ReadWarc(inputs)`` as the read stage (e.g. ``ReadWarcIndex``
    for CC-index pointers); it must return a ``ReadResult`` too.
    """
    read = pipeline | "Read" >> (reader if reader is not None else ReadWarc(list(inputs), config.read))
    pages, decisions = read.pages, [read.rejected, read.errors]
    # safety.urls (stages/safety.py): listed pages are rejected before they are parsed,
    # listed images dropped as soon as extraction has found them.
    unsafe_urls = config.safety.urls if has_lists(config.safety.urls) else None
    if unsafe_urls is not None:
        gated = pages | "RejectUnsafeUrls" >> RejectUnsafePages(unsafe_urls)
        pages = gated.kept
        decisions.append(gated.rejected)
    extracted = pages | "Extract" >> ExtractDocuments(config.extract)
    decisions += [extracted.rejected, extracted.errors]
    docs = extracted.kept
    if unsafe_urls is not None and unsafe_urls.images:
        dropped = docs | "DropUnsafeImages" >> DropUnsafeImages(unsafe_urls)
        docs = dropped.kept
        decisions.append(dropped.rejected)
    image_rows = []
    for stage in config.run.stages:
        if stage == "recycle":
            continue  # not a filter of kept documents: built below, from all decisions
        if stage == "scoring" and not config.scoring.active:
            log.warning("stage scoring is off: scoring.checkpoint is not set (and scoring.judge is off)")
            continue
        make = _FILTER_STAGES[stage]
        if stage in _TAKES_READ:
            transform = make(config, read)
        elif stage in _TAKES_IMAGE_ROWS:
            transform = make(config, image_rows[0], scoring_accelerator(pipeline))
        else:
            transform = make(config)
        result = docs | stage.capitalize() >> transform
        docs = result.kept
        decisions += [result.rejected, result.errors]
        if stage == "images":
            image_rows.append(result.images)
    # A pass-through that feeds the live progress line of local runs (runners.progress).
    docs = docs | "CountKept" >> beam.ParDo(CountKeptFn())
    # Every stage has decided: personal data in the kept text is replaced now, so no
    # rule ever measured redacted text and no page's fate depends on it (safety.pii).
    if config.safety.pii.enabled:
        docs = docs | "RedactPersonalData" >> RedactPersonalData(config.safety.pii)
    all_decisions = decisions | "AllDecisions" >> beam.Flatten()
    if not image_rows:
        image_rows.append(pipeline | "NoImageRows" >> beam.Create([]))
    images = image_rows | "AllImageRows" >> beam.Flatten()
    pair_rows = pipeline | "NoPairRows" >> beam.Create([])
    if "recycle" in config.run.stages:
        from mmcurate.stages.recycle import RecyclePairs

        # Every decision is known here; recycling reads them and changes no page's fate.
        recycled = all_decisions | "Recycle" >> RecyclePairs(
            config.recycle,
            config.images,
            config.scoring,
            language_model_path=config.heuristics.language.model_path,
            captured=read.images,
            image_rows=images,
            kept=docs,
            accelerator=scoring_accelerator(pipeline),
            pii=config.safety.pii,
        )
        pair_rows = recycled.pairs
        all_decisions = (all_decisions, recycled.decisions) | "WithPairDecisions" >> beam.Flatten()
    _ = (docs, all_decisions, images, pair_rows) | "Write" >> WriteCorpus(output_dir, config.write)
