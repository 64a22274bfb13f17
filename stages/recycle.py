"""Stage `recycle`: documents the funnel rejected, turned into image-text pairs.

Recycling never changes a page's fate: it reads the rejection decisions (each
carries its ``Decision.document``) and writes a second product, the pairs table.
Cheapest checks first:

1. ``CandidatesFn``: for every image of a document rejected after extraction (and,
   with ``recycle.from_kept``, of kept documents), the caption is the first of alt
   text, ``<figcaption>``, title and the nearest sentence that passes the caption
   rules (``filters.captions``: length, not a file name or URL, not generic words,
   language with the heuristics stage's fastText model). Failing images are pair
   decision rows (subject ``pair``) and go no further.
2. One candidate per canonical image URL (GroupByKey on the URL).
3. Images: a URL the images stage already handled is taken from its rows (the
   images table), bytes and verdict alike: an image retrieved for a document that
   a later stage rejected is reused, and no URL is fetched twice. The other URLs
   go through the images stage's own retrieval and validation (``retrieve``, the
   one retrieval transform: WARC captures first, matched by SURT capture key;
   HTTP when ``images.http``), so the same rules and limits apply.
4. Image dedup as for documents: exact (sha256) and pHash near-duplicates
   (``near_duplicates``, the images stage's clustering); one pair per distinct
   image, the best caption source winning.
5. With a CLIP model, the scoring stage's pair check (``score``: similarity by the
   same ``ClipModelHandler``, the NSFW check, pairs below
   ``scoring.pair_min_similarity`` dropped as ``clip.pair_low_similarity``).

Outputs: rows of the pairs table (``schemas.rows.PairRow``) and pair decision rows.
Counters (namespace ``recycle``): ``documents`` (source documents read),
``candidates`` (images considered), ``pairs`` (written),
``pair.rejected.<reason>``, ``caption.source.<source>``.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, NamedTuple, Optional

import apache_beam as beam

from mmcurate.filters import reasons
from mmcurate.filters.language import load_language_model
from mmcurate.schemas import Decision
from mmcurate.schemas.rows import STATUS_OK, PairRow
from mmcurate.stages.config import RecycleConfig
from mmcurate.stages.engines.recycled_pairs import (
    STAGE,
    Pair,
    caption_rules,
    document_candidates,
    pair_decision,
    pair_row,
    recyclable,
    with_image,
)
from mmcurate.stages.results import StageCounters
from mmcurate.stages.scoring.images_table import image_payload

log = logging.getLogger(__name__)

DECISIONS = "decisions"
NEED = "need"


class CandidatesFn(beam.DoFn):
    """Rejection decisions (or kept documents) -> candidate pairs; failed captions
    to the ``decisions`` tag."""

    def __init__(self, config: RecycleConfig, language_model_path: str = "", kept: bool = False):
        self._config = config
        self._model_path = language_model_path
        self._kept = kept

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)
        self._rules = caption_rules(self._config)
        self._model = load_language_model(self._model_path) if self._rules.needs_language else None

    def process(self, element: Any) -> Iterable:
        if self._kept:
            doc, stage, reason = element, "", ""
        else:
            doc, stage, reason = element.document, element.stage, element.reason
        self._counters.inc("documents")
        for ok, item in document_candidates(
            doc, self._rules, self._config.caption_sources, self._model, stage=stage, reason=reason, kept=self._kept
        ):
            self._counters.inc("candidates")
            if ok:
                yield item
                continue
            url, verdict = item
            self._counters.inc(f"pair.rejected.{verdict.reason}")
            probe = Pair(url=url, caption="", caption_source="", doc_id=doc.doc_id, doc_url=doc.url, provenance=doc.provenance)
            yield beam.pvalue.TaggedOutput(
                DECISIONS, pair_decision(probe, verdict.reason, verdict.value, verdict.threshold, verdict.detail)
            )


class _CountingFn(beam.DoFn):
    """Base of the recycle DoFns that count rejected pairs."""

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def _decision(self, pair: Pair, reason: str, value=None, threshold=None, detail: str = "") -> Decision:
        self._counters.inc(f"pair.rejected.{reason}")
        return pair_decision(pair, reason, value, threshold, detail)

    def _reject(self, pair: Pair, reason: str, value=None, threshold=None, detail: str = ""):
        return beam.pvalue.TaggedOutput(DECISIONS, self._decision(pair, reason, value, threshold, detail))


class BestPerKeyFn(_CountingFn):
    """One pair per key (URL, or near-duplicate cluster): the best ranked; the
    others are ``pair.duplicate_image`` rows."""

    def process(self, element: tuple[str, Iterable[Pair]]) -> Iterable:
        key, pairs = element
        pairs = sorted(pairs, key=Pair.rank)
        yield pairs[0]
        for other in pairs[1:]:
            yield self._reject(other, reasons.PAIR_DUPLICATE_IMAGE, detail=f"same image as {pairs[0].doc_id} ({key[:64]})")


class ReuseImagesFn(_CountingFn):
    """A URL's pair joined with the images stage's row for it: reused (bytes and
    verdict), or sent on to retrieval (``need``) when the images stage never saw it."""

    def process(self, element: tuple[str, dict]) -> Iterable:
        url, joined = element
        rows = list(joined["row"])
        for pair in joined["pair"]:
            if not rows:
                yield beam.pvalue.TaggedOutput(NEED, (url, pair))
                continue
            retrieved = [r for r in rows if r.retrieved]
            if not retrieved:
                row = rows[0]
                yield self._reject(pair, reasons.PAIR_IMAGE_NOT_RETRIEVED, detail=f"images: {row.reason or row.status}")
                continue
            row = retrieved[0]
            data = image_payload(row)
            if data is None:
                yield self._reject(pair, reasons.PAIR_IMAGE_NOT_RETRIEVED, detail="images: no bytes stored")
                continue
            self._counters.inc("images.reused")
            yield with_image(pair, row, data)


class AttachResultsFn(_CountingFn):
    """A URL's pair joined with its retrieval result."""

    def process(self, element: tuple[str, dict]) -> Iterable:
        _, joined = element
        results = list(joined["result"])
        for pair in joined["pair"]:
            result = results[0] if results else None
            if result is None or result.status != STATUS_OK:
                why = result.reason if result is not None else "no result"
                yield self._reject(pair, reasons.PAIR_IMAGE_NOT_RETRIEVED, detail=f"retrieval: {why}")
                continue
            yield with_image(pair, result, result.data)


class RefusedPairsFn(_CountingFn):
    """``(pair, Verdict)`` refused by the pair scorer -> pair decision rows."""

    def process(self, element: tuple[Pair, Any]) -> Iterable[Decision]:
        pair, verdict = element
        yield self._decision(pair, verdict.reason, verdict.value, verdict.threshold, verdict.detail)


class PairRowsFn(beam.DoFn):
    """Pairs -> rows of the pairs table, counted."""

    def __init__(self, store_bytes: bool):
        self._store_bytes = store_bytes

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, pair: Pair) -> Iterable[PairRow]:
        self._counters.inc("pairs")
        self._counters.inc(f"caption.source.{pair.caption_source}")
        yield pair_row(pair, self._store_bytes)


def _by_cluster(element: tuple[str, dict]) -> Iterable[tuple[str, Pair]]:
    image_id, joined = element
    reps = list(joined["rep"])
    for pair in joined["pair"]:
        yield (reps[0] if reps else image_id), pair


class RecycleResult(NamedTuple):
    pairs: beam.PCollection  # PairRow rows of the pairs table
    decisions: beam.PCollection  # Decision rows, subject "pair"


class RecyclePairs(beam.PTransform):
    """The `recycle` stage: ``decisions | RecyclePairs(config.recycle, ...)`` ->
    ``RecycleResult``. It takes its own section and the parts the pipeline built:

    - ``retrieve``: the one image retrieval transform (the images stage's,
      ``(wants, captured) -> ImageResult``), for URLs the images stage never saw;
    - ``near_duplicates``: ``(image_id, phash) -> (image_id, representative)``, the
      images stage's pHash clustering;
    - ``score``: the scoring stage's pair check (``stages.scoring.pair_scores.ScorePairs``),
      or None when no CLIP model runs;
    - ``redact_captions``: replaces personal data in the captions of the pairs written,
      after every pair rule has decided (``safety.pii``), or None;
    - ``language_model_path``: the fastText language model of the caption rules.

    ``decisions`` are all page decisions of the run; ``captured`` the read stage's
    image payloads; ``image_rows`` the images table's rows (reused by URL); ``kept``
    the kept documents (used with ``recycle.from_kept``)."""

    def __init__(
        self,
        config: RecycleConfig,
        *,
        retrieve: beam.PTransform,
        near_duplicates: beam.PTransform,
        score: Optional[beam.PTransform] = None,
        redact_captions: Optional[beam.PTransform] = None,
        language_model_path: str = "",
        captured: Optional[beam.PCollection] = None,
        image_rows: Optional[beam.PCollection] = None,
        kept: Optional[beam.PCollection] = None,
        label: Optional[str] = None,
    ):
        super().__init__(label)
        self._config = config
        self._retrieve = retrieve
        self._near_duplicates = near_duplicates
        self._score = score
        self._redact = redact_captions
        self._model_path = language_model_path
        self._captured = captured
        self._rows = image_rows
        self._kept = kept

    def expand(self, decisions: beam.PCollection) -> RecycleResult:
        config = self._config
        p = decisions.pipeline
        empty = lambda label: p | label >> beam.Create([])  # noqa: E731
        captured = self._captured if self._captured is not None else empty("NoCaptured")
        rows = self._rows if self._rows is not None else empty("NoImageRows")
        found = (
            decisions
            | "Recyclable" >> beam.Filter(recyclable)
            | "Candidates" >> beam.ParDo(CandidatesFn(config, self._model_path)).with_outputs(DECISIONS, main="pairs")
        )
        candidates, rejected = [found["pairs"]], [found[DECISIONS]]
        if config.from_kept and self._kept is not None:
            from_kept = self._kept | "KeptCandidates" >> beam.ParDo(
                CandidatesFn(config, self._model_path, kept=True)
            ).with_outputs(DECISIONS, main="pairs")
            candidates.append(from_kept["pairs"])
            rejected.append(from_kept[DECISIONS])
        per_url = (
            candidates
            | "AllCandidates" >> beam.Flatten()
            | "KeyByUrl" >> beam.Map(lambda pair: (pair.url, pair))
            | "GroupByUrl" >> beam.GroupByKey()
            | "OnePerUrl" >> beam.ParDo(BestPerKeyFn()).with_outputs(DECISIONS, main="pairs")
        )
        rejected.append(per_url[DECISIONS])
        rows_by_url = rows | "RowsByUrl" >> beam.FlatMap(lambda r: [(u, r) for u in r.urls])
        reused = (
            {"pair": per_url["pairs"] | "PairByUrl" >> beam.Map(lambda pair: (pair.url, pair)), "row": rows_by_url}
            | "JoinImageRows" >> beam.CoGroupByKey()
            | "Reuse" >> beam.ParDo(ReuseImagesFn()).with_outputs(NEED, DECISIONS, main="pairs")
        )
        rejected.append(reused[DECISIONS])
        # URLs the images stage never saw: its own retrieval and validation.
        need = reused[NEED]
        results = (need | "Wanted" >> beam.Map(lambda e: (e[0], ())), captured) | "Resolve" >> self._retrieve
        attached = (
            {"pair": need, "result": results | "ResultByUrl" >> beam.Map(lambda r: (r.url, r))}
            | "JoinResults" >> beam.CoGroupByKey()
            | "Attach" >> beam.ParDo(AttachResultsFn()).with_outputs(DECISIONS, main="pairs")
        )
        rejected.append(attached[DECISIONS])
        with_images = (reused["pairs"], attached["pairs"]) | "WithImages" >> beam.Flatten()
        # One pair per distinct image: exact and pHash near-duplicates, as for documents.
        hashes = (
            with_images
            | "HashById" >> beam.Map(lambda pair: (pair.image_id, pair.phash))
            | "DistinctHashes" >> beam.Distinct()
        )
        reps = hashes | "NearDuplicates" >> self._near_duplicates
        distinct = (
            {"pair": with_images | "PairById" >> beam.Map(lambda pair: (pair.image_id, pair)), "rep": reps}
            | "JoinClusters" >> beam.CoGroupByKey()
            | "ByCluster" >> beam.FlatMap(_by_cluster)
            | "GroupByCluster" >> beam.GroupByKey()
            | "OnePerImage" >> beam.ParDo(BestPerKeyFn()).with_outputs(DECISIONS, main="pairs")
        )
        rejected.append(distinct[DECISIONS])
        pairs = distinct["pairs"]
        if self._score is not None:
            scored = pairs | "Clip" >> self._score
            rejected.append(scored.rejected | "RefusedPairs" >> beam.ParDo(RefusedPairsFn()))
            pairs = scored.kept
        if self._redact is not None:  # safety.pii: captions are written text too
            pairs = pairs | "RedactCaptions" >> self._redact
        rows_out = pairs | "PairRows" >> beam.ParDo(PairRowsFn(config.store_bytes))
        return RecycleResult(rows_out, rejected | "PairDecisions" >> beam.Flatten())
