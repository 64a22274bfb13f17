"""``ScorePairs``: the scoring stage's check of image-text pairs (the recycle
stage's candidates), with the same CLIP model, the same NSFW check as documents'
images, and ``scoring.pair_min_similarity``.

Input: pairs, any frozen dataclass with ``data`` (image bytes), ``caption`` and a
``similarity`` field. Output: ``PairScores``: the kept pairs with ``similarity``
set, and ``(pair, Verdict)`` for each refused one (``clip.pair_low_similarity``,
``image.nsfw``, or ``pair.image_not_retrieved`` when the image would not decode);
the caller writes its own rows for them (the recycle stage's pair decisions).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, NamedTuple, Optional

import apache_beam as beam

from mmcurate.filters import reasons
from mmcurate.filters.clip import pair_verdict
from mmcurate.filters.nsfw import image_verdict as nsfw_image_verdict
from mmcurate.filters.verdict import reject
from mmcurate.stages.config import ScoringConfig
from mmcurate.stages.results import KEPT, REJECTED
from mmcurate.stages.scoring.model_handler import PAIR, accelerator_hint, clip_inference


class PairScores(NamedTuple):
    kept: beam.PCollection  # pairs with their similarity
    rejected: beam.PCollection  # (pair, Verdict)


class ThresholdPairsFn(beam.DoFn):
    """CLIP results ``(PAIR, pair, similarity or None, error, NSFW score or None)``
    -> pairs at or above the pair threshold; ``(pair, Verdict)`` on ``rejected``."""

    def __init__(self, min_similarity: float, nsfw_threshold: Optional[float] = None):
        self._min = min_similarity
        self._nsfw = nsfw_threshold

    def process(self, element: tuple) -> Iterable:
        _, pair, similarity, error, unsafe = element
        if similarity is None:
            verdict = reject(reasons.PAIR_IMAGE_NOT_RETRIEVED, None, None, detail=f"scoring: {error}")
            yield beam.pvalue.TaggedOutput(REJECTED, (pair, verdict))
            return
        if unsafe is not None and self._nsfw is not None:  # scoring.nsfw, as for documents' images
            verdict = nsfw_image_verdict(unsafe, threshold=self._nsfw)
            if not verdict.keep:
                yield beam.pvalue.TaggedOutput(REJECTED, (pair, verdict))
                return
        pair = dataclasses.replace(pair, similarity=similarity)
        verdict = pair_verdict(similarity, min_similarity=self._min)
        yield pair if verdict.keep else beam.pvalue.TaggedOutput(REJECTED, (pair, verdict))


class ScorePairs(beam.PTransform):
    """``pairs | ScorePairs(config.scoring)`` -> ``PairScores``. ``loader`` replaces
    the CLIP loader (tests pass a fake encoder); ``accelerator`` replaces
    ``scoring.accelerator`` (the --scoring_accelerator flag). The model files are
    checked where the workers load them (``ScoreImageText`` checks them at
    construction, before any run)."""

    def __init__(self, config: ScoringConfig, *, loader: Any = None, accelerator: Optional[str] = None, label=None):
        super().__init__(label)
        self._config = config
        self._loader = loader
        self._accelerator = accelerator_hint(config, accelerator)

    def expand(self, pairs: beam.PCollection) -> PairScores:
        nsfw = self._config.nsfw
        scored = (
            pairs
            | "TagPairs" >> beam.Map(lambda pair: (PAIR, pair))
            | "Spread" >> beam.Reshuffle()
            | "Embed" >> clip_inference(self._config, self._loader, self._accelerator)
            | "Threshold"
            >> beam.ParDo(
                ThresholdPairsFn(self._config.pair_min_similarity, nsfw.threshold if nsfw.enabled else None)
            ).with_outputs(REJECTED, main=KEPT)
        )
        return PairScores(scored[KEPT], scored[REJECTED])
