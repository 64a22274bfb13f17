"""Assembles the stages into one Beam pipeline from a ``Config``."""

from __future__ import annotations

from typing import Sequence

import apache_beam as beam

from mmcurate.pipeline.config import Config
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.heuristics import ApplyTextHeuristics
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.write import WriteCorpus

# Filtering stages in funnel order, each a PTransform from documents to a
# StageResult, built from its own config section only.
_FILTER_STAGES = {
    "heuristics": lambda config: ApplyTextHeuristics(config.heuristics),
    "dedup": lambda config: DedupDocuments(config.dedup),
}


def build_pipeline(pipeline: beam.Pipeline, inputs: Sequence[str], output_dir: str, config: Config) -> None:
    """Adds read → extract → enabled filtering stages → write to ``pipeline``."""
    read = pipeline | "Read" >> ReadWarc(list(inputs), config.read)
    extracted = read.pages | "Extract" >> ExtractDocuments(config.extract)
    decisions = [read.rejected, read.errors, extracted.rejected, extracted.errors]
    docs = extracted.kept
    for stage in config.run.stages:
        result = docs | stage.capitalize() >> _FILTER_STAGES[stage](config)
        docs = result.kept
        decisions += [result.rejected, result.errors]
    all_decisions = decisions | "AllDecisions" >> beam.Flatten()
    _ = (docs, all_decisions) | "Write" >> WriteCorpus(output_dir, config.write)
