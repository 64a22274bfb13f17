"""Assembles the stages into one Beam pipeline from a ``Config``."""

from __future__ import annotations

from typing import Sequence

import apache_beam as beam

from mmcurate.pipeline.config import Config
from mmcurate.runners.progress import CountKeptFn
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.heuristics import ApplyTextHeuristics
from mmcurate.stages.images import CurateImages
from mmcurate.stages.quality import ScoreQuality
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.write import WriteCorpus

# Filtering stages in funnel order, each a PTransform from documents to a
# StageResult, built from its own config section only.
_FILTER_STAGES = {
    "heuristics": lambda config: ApplyTextHeuristics(config.heuristics),
    "dedup": lambda config: DedupDocuments(config.dedup),
    "quality": lambda config: ScoreQuality(config.quality),
    # Also takes the image payloads the read stage set aside (see _TAKES_READ).
    "images": lambda config, read: CurateImages(config.images, read.images),
}

# Stages built from (config, read result) instead of config alone.
_TAKES_READ = frozenset({"images"})


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
    extracted = read.pages | "Extract" >> ExtractDocuments(config.extract)
    decisions = [read.rejected, read.errors, extracted.rejected, extracted.errors]
    docs = extracted.kept
    image_rows = []
    for stage in config.run.stages:
        make = _FILTER_STAGES[stage]
        transform = make(config, read) if stage in _TAKES_READ else make(config)
        result = docs | stage.capitalize() >> transform
        docs = result.kept
        decisions += [result.rejected, result.errors]
        if stage == "images":
            image_rows.append(result.images)
    # A pass-through that feeds the live progress line of local runs (runners.progress).
    docs = docs | "CountKept" >> beam.ParDo(CountKeptFn())
    all_decisions = decisions | "AllDecisions" >> beam.Flatten()
    if not image_rows:
        image_rows.append(pipeline | "NoImageRows" >> beam.Create([]))
    images = image_rows | "AllImageRows" >> beam.Flatten()
    _ = (docs, all_decisions, images) | "Write" >> WriteCorpus(output_dir, config.write)
