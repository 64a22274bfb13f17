"""Stage `heuristics`: cheap rules over one document at a time."""

from __future__ import annotations

from functools import partial

import apache_beam as beam

from mmcurate.filters import content
from mmcurate.filters.verdict import DocumentFilter
from mmcurate.pipeline.config import HeuristicsConfig
from mmcurate.stages.common import ApplyDocumentFilters, StageResult

STAGE = "heuristics"


def heuristic_filters(config: HeuristicsConfig) -> list[DocumentFilter]:
    """The stage's filters with thresholds bound from config, cheapest first."""
    filters: list[DocumentFilter] = []
    if config.min_images > 0:
        filters.append(partial(content.min_images, min_images=config.min_images))
    filters.append(content.has_text)
    filters.append(partial(content.min_words, min_words=config.min_words))
    return filters


class ApplyTextHeuristics(beam.PTransform):
    def __init__(self, config: HeuristicsConfig, label: str | None = None):
        super().__init__(label)
        self._config = config

    def expand(self, docs: beam.PCollection) -> StageResult:
        return docs | "Filters" >> ApplyDocumentFilters(STAGE, heuristic_filters(self._config))
