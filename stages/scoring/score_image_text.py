"""Stage `scoring`: CLIP image-text similarity with open_clip, then (optionally)
the VLM judge (``stages.scoring.judge``). The per-document arithmetic lives in
``stages.engines.image_text_scores``, the model in ``stages.engines.clip_encoder``.

Image bytes never travel inside documents. The stage joins them by image_id:

1. each document's image_ids (those the images stage retrieved) are grouped with
   the images table's rows (``CoGroupByKey`` on the sha256), so each distinct image
   is decoded and encoded once, whatever the number of documents using it;
2. one ``RunInference`` with ``ClipModelHandler`` (one model copy per worker)
   embeds the images and, in the same transform, each document's texts: each
   image's caption (alt, else figcaption, else title), the text block before it and
   the one after it, and, with ``assign_images``, every sentence;
3. embeddings join the documents by doc_id; ``ScoreDocumentsFn`` computes cosine
   similarities, sets ``ImageNode.clip_score`` (the best of caption, before and
   after), removes images below ``image_min_similarity`` (an image decision row
   each), puts per-image figures and the document aggregates (mean, min, max,
   share above ``share_threshold``) in signals, optionally moves images after their
   MMC4-assigned sentence, and applies the document rules (``filters.clip``):
   ``engines.image_text_scores.score_document``.

The model is an open_clip architecture with weights from a local checkpoint
(``scoring.checkpoint``, sha256-checked when ``checkpoint_sha256`` is given),
loaded once per worker in ``ClipModelHandler.load_model``. Nothing is downloaded:
``pretrained`` is never passed to open_clip. With ``device: cuda`` the model
transforms carry Beam's accelerator resource hint (``scoring.accelerator``, or the
``--scoring_accelerator`` flag the dataflow runner preset's ``gpu=`` sets), so only
they ask for a GPU.

Counters (namespace ``scoring``): ``kept``, ``rejected.<reason>``,
``errors.<type>``, ``micros``, ``images.scored``, ``images.unscored``,
``image.reason.<reason>``, ``image.errors.<type>``.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Optional

import apache_beam as beam
import numpy as np

from mmcurate.filters import clip as rules
from mmcurate.filters import nsfw as nsfw_rules
from mmcurate.schemas import KIND_ERROR, SUBJECT_IMAGE, Decision, Document
from mmcurate.schemas.rows import NO_PROVENANCE
from mmcurate.stages.config import ScoringConfig
from mmcurate.stages.engines.image_text_scores import score_document, scoring_texts
from mmcurate.stages.results import (
    ERRORS,
    KEPT,
    REJECTED,
    StageCounters,
    StageResult,
    error_decision,
    rejection_decision,
)
from mmcurate.stages.scoring import STAGE
from mmcurate.stages.scoring.images_table import image_payload, retrieved_rows_by_id
from mmcurate.stages.scoring.judge import JudgeDocuments
from mmcurate.stages.scoring.model_handler import IMAGE, TEXTS, accelerator_hint, check_model_files, clip_inference

log = logging.getLogger(__name__)


def image_error_decision(image_id: str, error: str) -> Decision:
    exc_type, _, message = error.partition(": ")
    return Decision(
        doc_id=image_id,
        url="",
        stage=STAGE,
        kind=KIND_ERROR,
        reason=exc_type,
        provenance=NO_PROVENANCE,
        detail=message,
        subject=SUBJECT_IMAGE,
    )


class ScoreDocumentsFn(beam.DoFn):
    """Joins a document with its image and text embeddings, scores it and decides."""

    def __init__(self, config: ScoringConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        _, joined = element
        vectors, unsafe = {}, {}
        for image_id, (vector, score) in joined["images"]:
            vectors[image_id] = vector
            if score is not None:
                unsafe[image_id] = score
        encoded = list(joined["texts"])
        texts, matrix = (encoded[0][0], encoded[0][1]) if encoded else ((), np.zeros((0, 0), dtype=np.float32))
        config = self._config
        for doc in joined["doc"]:
            started = time.perf_counter()
            try:
                scored, removed, n_scored = score_document(doc, vectors, texts, matrix, config, unsafe if config.nsfw.enabled else None)
                self._counters.inc("images.scored", n_scored)
                unscored = sum(1 for n in doc.image_nodes if n.image_id) - n_scored
                if unscored:
                    self._counters.inc("images.unscored", unscored)
                for node, verdict in removed:
                    self._counters.inc(f"image.reason.{verdict.reason}")
                    yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict, node))
                verdict = nsfw_rules.document_verdict(
                    int(scored.signals.get(nsfw_rules.NSFW_IMAGES, 0)), min_images=config.nsfw.reject_document_min_images
                )
                if verdict.keep:
                    verdict = rules.document_rules(
                        scored,
                        min_mean=config.min_mean_similarity,
                        min_share_above=config.min_share_above,
                        no_images=config.no_images,
                        had_images=bool(doc.image_nodes),
                    )
            except Exception as exc:  # one error row, never a crash
                log.debug("scoring failed on %s", doc.doc_id, exc_info=True)
                self._counters.error(exc)
                yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
                self._counters.micros(started)
                continue
            if verdict.keep:
                self._counters.kept()
                yield scored
            else:
                self._counters.rejected(verdict.reason)
                yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, scored, verdict))
            self._counters.micros(started)


def _payloads(element: tuple[str, dict]) -> Iterable[tuple[str, bytes]]:
    image_id, joined = element
    if not list(joined["want"]):
        return
    for row in joined["row"]:
        payload = image_payload(row)
        if payload is not None:
            yield image_id, payload
            return


def _vectors_by_doc(element: tuple[str, dict]) -> Iterable[tuple[str, tuple[str, np.ndarray]]]:
    image_id, joined = element
    vectors = list(joined["vector"])
    if not vectors:
        return
    for doc_id in set(joined["refs"]):
        yield doc_id, (image_id, vectors[0])


def image_ids(doc: Document) -> Iterable[tuple[str, str]]:
    for image_id in {n.image_id for n in doc.image_nodes if n.image_id}:
        yield image_id, doc.doc_id


class ScoreImageText(beam.PTransform):
    """The `scoring` stage: ``docs | ScoreImageText(config, image_rows)`` -> StageResult.

    ``image_rows`` are the images table's rows (``ImagesResult.images``). ``loader``
    replaces ``load_clip_model`` (tests pass a fake encoder; CLIP then runs without a
    checkpoint); ``accelerator`` replaces ``config.accelerator`` (the
    ``--scoring_accelerator`` flag). With no checkpoint (and no loader) the CLIP
    step is skipped; with ``judge.enabled`` the VLM judge runs on what CLIP kept."""

    def __init__(
        self,
        config: ScoringConfig,
        image_rows: Optional[beam.PCollection] = None,
        *,
        loader: Any = None,
        accelerator: Optional[str] = None,
        judge_client: Any = None,
        label: Optional[str] = None,
    ):
        super().__init__(label)
        self._config = config
        self._rows = image_rows
        check_model_files(config, loader)  # fail at construction, naming the key
        self._loader = loader
        self._clip = config.clip_on or loader is not None
        self._accelerator = accelerator_hint(config, accelerator)
        self._judge_client = judge_client

    @property
    def accelerator(self) -> str:
        """The accelerator hint the model transform carries ("" when on CPU)."""
        return self._accelerator

    def model_transform(self) -> beam.PTransform:
        """``RunInference`` over both towers, with the accelerator hint when on cuda."""
        return clip_inference(self._config, self._loader, self._accelerator)

    def expand(self, docs: beam.PCollection) -> StageResult:
        config = self._config
        rows = self._rows if self._rows is not None else docs.pipeline | "NoImageRows" >> beam.Create([])
        rejected, errors = [], []
        if self._clip:
            refs = docs | "ImageIds" >> beam.FlatMap(image_ids)
            wanted = (
                refs
                | "WantedIds" >> beam.Map(lambda r: r[0])
                | "DistinctIds" >> beam.Distinct()
                | "Want" >> beam.Map(lambda i: (i, None))
            )
            image_inputs = (
                {"want": wanted, "row": retrieved_rows_by_id(rows)}
                | "JoinBytes" >> beam.CoGroupByKey()
                | "Payloads" >> beam.FlatMap(_payloads)
                | "TagImages" >> beam.Map(lambda e: (IMAGE, e[0], e[1]))
            )
            text_inputs = (
                docs
                | "Texts" >> beam.Map(lambda d: (TEXTS, d.doc_id, scoring_texts(d, config.assign_images)))
                | "WithTexts" >> beam.Filter(lambda e: bool(e[2]))
            )
            embedded = (
                (image_inputs, text_inputs)
                | "ModelInputs" >> beam.Flatten()
                | "Spread" >> beam.Reshuffle()
                | "Embed" >> self.model_transform()
            )
            image_out = embedded | "ImageResults" >> beam.Filter(lambda e: e[0] == IMAGE)
            errors.append(
                image_out
                | "Undecodable" >> beam.Filter(lambda e: e[2] is None)
                | "ImageErrors" >> beam.Map(lambda e: image_error_decision(e[1], e[3]))
            )
            vectors = (
                {
                    # (image_id, (vector, NSFW score or None))
                    "vector": image_out | "Vectors" >> beam.FlatMap(lambda e: [(e[1], (e[2], e[4]))] if e[2] is not None else []),
                    "refs": refs,
                }
                | "JoinVectors" >> beam.CoGroupByKey()
                | "VectorsByDoc" >> beam.FlatMap(_vectors_by_doc)
            )
            texts = (
                embedded
                | "TextResults" >> beam.Filter(lambda e: e[0] == TEXTS)
                | "TextsByDoc" >> beam.Map(lambda e: (e[1], (e[2], e[3])))
            )
            scored = (
                {"doc": docs | "DocsById" >> beam.Map(lambda d: (d.doc_id, d)), "images": vectors, "texts": texts}
                | "JoinDocs" >> beam.CoGroupByKey()
                | "Score" >> beam.ParDo(ScoreDocumentsFn(config)).with_outputs(REJECTED, ERRORS, main=KEPT)
            )
            docs = scored[KEPT]
            rejected.append(scored[REJECTED])
            errors.append(scored[ERRORS])
        elif not config.judge.enabled:
            docs = docs | "PassThrough" >> beam.ParDo(_PassThroughFn())
        if config.judge.enabled:
            judged = docs | "Judge" >> JudgeDocuments(config.judge, rows, client=self._judge_client)
            docs = judged.kept
            rejected.append(judged.rejected)
            errors.append(judged.errors)
        if not rejected:
            rejected.append(docs.pipeline | "NoRejected" >> beam.Create([]))
        if not errors:
            errors.append(docs.pipeline | "NoErrors" >> beam.Create([]))
        return StageResult(docs, rejected | "Rejected" >> beam.Flatten(), errors | "Errors" >> beam.Flatten())


class _PassThroughFn(beam.DoFn):
    """Counts documents kept by a stage that has nothing to do (no checkpoint, no judge)."""

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, doc: Document) -> Iterable[Document]:
        self._counters.kept()
        yield doc
