"""Stage `quality`: fastText scores, then the implicit-duplicate detectors.

Score first, decide second. Every document entering the stage is scored by the
fastText classifiers of the enabled steps in one batched pass (``RunModel``,
``stages/model_batches.py``, with ``FastTextModelHandler``: the models load once per
worker; torch, which Beam's ``RunInference`` imports, is not loaded for them), so
``quality_score``, ``mt_score`` and ``llm_score`` are on kept documents and on
decision rows alike. Then the rules run in one ParDo, cheapest first:

1. machine translation, page evidence: ``mt.notice``, ``mt.widget`` (markers found
   in the HTML at extraction, ``filters.mt_page``), ``mt.hreflang_fanout``,
   ``mt.url_language_mismatch`` (off by default);
2. weak-model text features: ``llm.template_phrase`` (and the signals
   ``llm.mattr``, ``llm.repeated_trigram_ratio``);
3. the classifiers: ``quality.low_score``, ``mt.high_score``, ``mt.page_and_score``
   (when on: a page that declares machine translation and scores as MT),
   ``llm.high_score``;
4. with ``llm.site`` / ``mt.site``: ``llm.site_high_score``, ``mt.site_high_score``,
   on the mean score of the page's site (``stages/site_scores.py``: compact
   ``((signal, site), score)`` records summed per site by a CombinePerKey, the table
   of sites as a side input of the documents' pass; no document is keyed or grouped).

Then, with ``rewrite.enabled``, semantic near-duplicates among the kept documents:
sentence embeddings (all-MiniLM-L6-v2, ``SentenceEmbeddingModelHandler``), random-
hyperplane LSH as a GroupByKey on band keys, cosine verification inside each bucket,
joined back by doc_id: ``rewrite.near_duplicate`` for the later of two documents at
or above ``rewrite.threshold`` (the earliest capture survives).
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import Any, Iterable, Mapping, Optional, Sequence

import apache_beam as beam
import numpy as np

from mmcurate.filters import llm_text, lsh, machine_translation, mt_combined, rewrites
from mmcurate.filters.quality import QUALITY_SCORE, min_quality, normalize_texts, positive_probabilities, probabilities
from mmcurate.filters.site_scores import SiteSignal
from mmcurate.filters.verdict import DocumentFilter
from mmcurate.stages.config import QualityConfig
from mmcurate.stages.engines.text_classifiers import MT_PREFIX, default_embedding_model, load_text_model, model_paths
from mmcurate.stages.model_batches import BatchModel, RunModel
from mmcurate.stages.site_scores import AggregateSiteScores
from mmcurate.schemas import Document
from mmcurate.stages.results import (
    COUNTER_KEPT,
    ERRORS,
    KEPT,
    REJECTED,
    ApplyDocumentFilters,
    StageCounters,
    StageResult,
    error_decision,
    rejection_decision,
)

log = logging.getLogger(__name__)

STAGE = "quality"

SCORE_SIGNALS = {"quality": QUALITY_SCORE, "llm": llm_text.LLM_SCORE}


class FastTextModels(dict):
    """Loaded fastText models by kind (a dict subclass: Beam's shared model cache
    holds its models by weak reference, which a plain dict does not allow)."""


class FastTextModelHandler:
    """Scores batches of documents with fastText classifiers.

    ``load_model`` runs once per worker; ``run_inference`` normalises each text once
    and yields the document with one probability signal per model: ``quality_score``
    and ``llm_score`` for every document, ``mt_score`` from the MT model of the
    document's language (``mt:LANG``), none when there is no model for it.
    """

    def __init__(self, paths: Mapping[str, str], batch_size: int):
        self._paths = dict(paths)
        self._batch_size = batch_size

    def load_model(self) -> FastTextModels:
        return FastTextModels((kind, load_text_model(path)) for kind, path in self._paths.items())

    def run_inference(self, batch: Sequence[Document], model: FastTextModels, inference_args=None) -> Iterable[Document]:
        texts = normalize_texts([doc.text for doc in batch])
        signals: list[dict[str, float]] = [{} for _ in batch]
        for kind, m in model.items():
            if kind.startswith(MT_PREFIX):
                continue
            for i, value in enumerate(positive_probabilities(m, texts)):
                signals[i][SCORE_SIGNALS[kind]] = value
        by_language: dict[str, list[int]] = {}
        for i, doc in enumerate(batch):
            if doc.language:
                by_language.setdefault(MT_PREFIX + machine_translation.primary_language(doc.language), []).append(i)
        for kind, members in by_language.items():
            if kind in model:
                scores = probabilities(model[kind], [texts[i] for i in members])
                for i, value in zip(members, scores):
                    signals[i][machine_translation.MT_SCORE] = value
        for doc, values in zip(batch, signals):
            yield doc.with_signals(values)

    def batch_elements_kwargs(self) -> Mapping[str, Any]:
        return {"min_batch_size": 1, "max_batch_size": self._batch_size}


def quality_filters(config: QualityConfig) -> list[DocumentFilter]:
    """The stage's rules with thresholds bound from config, cheapest first."""
    filters: list[DocumentFilter] = []
    mt, llm = config.mt, config.llm
    if mt.enabled:
        filters += [
            partial(machine_translation.mt_notice, min_notices=mt.min_notices),
            *([machine_translation.mt_widget] if mt.widget else []),
            partial(machine_translation.mt_hreflang_fanout, max_languages=mt.max_hreflang_languages),
            partial(machine_translation.mt_url_language, reject_mismatch=mt.reject_url_language_mismatch),
        ]
    if llm.enabled:
        filters.append(partial(llm_text.llm_template, min_phrases=llm.min_template_phrases))
    filters.append(partial(min_quality, min_score=config.min_score))
    if mt.enabled:
        filters.append(partial(machine_translation.mt_classifier, max_score=mt.max_score, max_scores=mt.max_scores))
        if mt.page_and_score:
            filters.append(partial(mt_combined.mt_page_and_score, max_score=mt.page_max_score))
    if llm.enabled:
        filters.append(partial(llm_text.llm_classifier, max_score=llm.max_score))
        if llm.site:
            filters.append(partial(llm_text.llm_site, max_score=llm.site_max_score, min_docs=llm.site_min_docs))
    if mt.enabled and mt.site:
        filters.append(partial(mt_combined.mt_site, max_score=mt.site_max_score, min_docs=mt.site_min_docs))
    return filters


def site_signals(config: QualityConfig) -> list[SiteSignal]:
    """The scores the stage averages per site, as config turns them on."""
    signals = []
    if config.llm.enabled and config.llm.site:
        signals.append(llm_text.SITE)
    if config.mt.enabled and config.mt.site:
        signals.append(mt_combined.SITE)
    return signals


# --- rewrites: sentence embeddings, LSH, cosine ------------------------------------


def capture_rank(doc: Document) -> tuple[str, str]:
    """Which of two rewrites survives: the earliest capture (ISO WARC date), then doc_id."""
    date = doc.provenance.date
    valid = len(date) >= 10 and date[:4].isdigit() and date[4] == "-"
    return (date if valid else "~", doc.doc_id)


class SentenceEmbeddingModelHandler:
    """Unit-length sentence embeddings of documents' main text, batched on CPU.

    Loads a local sentence-transformers directory with the Hub switched off, so
    nothing is fetched."""

    def __init__(self, model_path: str, batch_size: int):
        self._path = model_path
        self._batch_size = batch_size

    def load_model(self):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(self._path, device="cpu", local_files_only=True)

    def run_inference(self, batch: Sequence[Document], model, inference_args=None):
        vectors = model.encode(
            [doc.text for doc in batch], batch_size=self._batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        for doc, vector in zip(batch, vectors):
            yield doc.doc_id, capture_rank(doc), vector.astype(np.float32)

    def batch_elements_kwargs(self) -> Mapping[str, Any]:
        return {"min_batch_size": 1, "max_batch_size": self._batch_size}


class _BandKeysFn(beam.DoFn):
    def __init__(self, bands: int, rows: int, seed: int):
        self._bands, self._rows, self._seed = bands, rows, seed
        self._planes: Optional[np.ndarray] = None

    def process(self, element):
        doc_id, rank, vector = element
        if self._planes is None:
            self._planes = rewrites.hyperplanes(len(vector), self._bands, self._rows, self._seed)
        for key in lsh.band_keys(rewrites.sign_bits(vector, self._planes), self._bands, self._rows):
            yield key, (rank, doc_id, vector)


def _best_match(element: tuple[str, Iterable[tuple[float, str]]]) -> tuple[str, tuple[float, str]]:
    doc_id, matches = element
    return doc_id, max(matches, key=lambda m: (m[0], m[1]))


class DecideRewritesFn(beam.DoFn):
    """Joins each kept document with its closest earlier rewrite and decides."""

    def __init__(self, threshold: float):
        self._threshold = threshold

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        _, joined = element
        matches = list(joined["match"])
        for doc in joined["doc"]:
            started = time.perf_counter()
            try:
                similarity, survivor = matches[0] if matches else (0.0, "")
                doc = doc.with_signals({rewrites.REWRITE_SIMILARITY: similarity})
                verdict = rewrites.rewrite_duplicate(doc, threshold=self._threshold, survivor=survivor)
            except Exception as exc:  # one error row, never a crash
                self._counters.inc(COUNTER_KEPT, -1)
                self._counters.error(exc)
                yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
                self._counters.micros(started)
                continue
            if verdict.keep:
                yield doc
            else:
                # The rules step counted this document kept; it leaves here instead.
                self._counters.inc(COUNTER_KEPT, -1)
                self._counters.rejected(verdict.reason)
                yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict))
            self._counters.micros(started)


class DedupRewrites(beam.PTransform):
    """Semantic near-duplicates among ``docs``: a StageResult of the rewrite step."""

    def __init__(self, config, handler: Optional[BatchModel] = None, label: Optional[str] = None):
        super().__init__(label)
        self._config = config
        self._handler = handler

    def expand(self, docs: beam.PCollection) -> StageResult:
        cfg = self._config
        handler = self._handler or SentenceEmbeddingModelHandler(
            cfg.model_path or str(default_embedding_model()), cfg.batch_size
        )
        matches = (
            docs
            | "Embed" >> RunModel(handler)
            | "BandKeys" >> beam.ParDo(_BandKeysFn(cfg.bands, cfg.rows, cfg.seed))
            | "GroupByBand" >> beam.GroupByKey()
            | "CompareInBucket" >> beam.FlatMap(lambda kv: rewrites.rewrite_matches(kv[1]))
            | "GroupByDoc" >> beam.GroupByKey()
            | "BestMatch" >> beam.Map(_best_match)
        )
        keyed = docs | "KeyByDocId" >> beam.Map(lambda d: (d.doc_id, d))
        outputs = (
            {"doc": keyed, "match": matches}
            | "JoinMatches" >> beam.CoGroupByKey()
            | "Decide" >> beam.ParDo(DecideRewritesFn(cfg.threshold)).with_outputs(REJECTED, ERRORS, main=KEPT)
        )
        return StageResult(outputs[KEPT], outputs[REJECTED], outputs[ERRORS])


class ScoreQuality(beam.PTransform):
    """The `quality` stage. ``scorer`` and ``embedder`` replace the model handlers
    (tests pass fakes); by default they load the models named in config."""

    def __init__(
        self,
        config: QualityConfig,
        scorer: Optional[BatchModel] = None,
        embedder: Optional[BatchModel] = None,
        label: Optional[str] = None,
    ):
        super().__init__(label)
        self._config = config
        # Resolve model paths now, so a missing model fails before the pipeline runs.
        self._scorer = scorer or FastTextModelHandler(model_paths(config), config.batch_size)
        self._embedder = embedder

    def expand(self, docs: beam.PCollection) -> StageResult:
        config = self._config
        scored = docs | "Score" >> RunModel(self._scorer)
        signals = site_signals(config)
        if signals:
            scored = scored | "SiteScores" >> AggregateSiteScores(signals)
        result = scored | "Rules" >> ApplyDocumentFilters(STAGE, quality_filters(config))
        if not config.rewrite.enabled:
            return result
        rewrites = result.kept | "Rewrites" >> DedupRewrites(config.rewrite, self._embedder)
        return StageResult(
            rewrites.kept,
            (result.rejected, rewrites.rejected) | "AllRejected" >> beam.Flatten(),
            (result.errors, rewrites.errors) | "AllErrors" >> beam.Flatten(),
        )
