"""Stage `scoring`: CLIP image-text similarity with open_clip, then (optionally)
the VLM judge (``stages.judge``).

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
   MMC4-assigned sentence, and applies the document rules (``filters.clip``).

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

import dataclasses
import logging
import time
from typing import Any, Iterable, Mapping, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import ModelHandler, RunInference

from mmcurate.filters import clip as rules
from mmcurate.filters import nsfw as nsfw_rules
from mmcurate.filters.captions import split_sentences
from mmcurate.stages.config import ScoringConfig
from mmcurate.schemas import (
    KIND_ERROR,
    KIND_REJECTED,
    SUBJECT_IMAGE,
    Decision,
    Document,
    ImageNode,
    TextNode,
)
from mmcurate.runners.options import ScoringOptions  # noqa: F401  (registers --scoring_accelerator)
from mmcurate.stages.clip_model import ChecksumError, ClipEncoder, check_checkpoint, file_sha256, load_clip  # noqa: F401
from mmcurate.stages.results import ERRORS, KEPT, REJECTED, StageCounters, StageResult, error_decision, rejection_decision
from mmcurate.stages.nsfw import NsfwClipEncoder, check_nsfw, nsfw_scores

log = logging.getLogger(__name__)

STAGE = "scoring"


IMAGE = "image"
TEXTS = "texts"
PAIR = "pair"


class ClipModelHandler(ModelHandler):
    """open_clip through ``RunInference``. Elements are tagged tuples, so one
    transform (one model copy per worker) embeds both towers:
    ``("image", image_id, bytes)`` -> ``("image", image_id, vector or None, error, nsfw)``
    and ``("texts", doc_id, texts)`` -> ``("texts", doc_id, texts, matrix)``; for
    recycled pairs (an object with ``data`` and ``caption``, stage recycle)
    ``("pair", pair)`` -> ``("pair", pair, similarity or None, error, nsfw)``, where
    ``nsfw`` is the image's NSFW score (``scoring.nsfw``; None when that is off).
    ``loader`` replaces ``load_clip`` (tests pass a fake encoder)."""

    def __init__(self, config: ScoringConfig, loader: Any = None):
        super().__init__()
        self._config = config
        self._loader = loader or load_clip

    def load_model(self) -> Any:
        model = self._loader(self._config)
        if self._config.nsfw.enabled:  # scoring.nsfw: prompts encoded once, here
            model = NsfwClipEncoder(model, self._config.nsfw)
        return model

    def run_inference(self, batch: Sequence[Any], model: Any, inference_args=None) -> Iterable[Any]:
        images = [e for e in batch if e[0] == IMAGE]
        docs = [e for e in batch if e[0] == TEXTS]
        pairs = [e[1] for e in batch if e[0] == PAIR]
        if pairs:
            vectors, errors = model.encode_images([pair.data for pair in pairs])
            decoded = [pair for pair, error in zip(pairs, errors) if not error]
            texts = model.encode_texts([pair.caption for pair in decoded]) if decoded else None
            unsafe = nsfw_scores(model, vectors)
            row = 0
            for pair, error in zip(pairs, errors):
                if error:
                    yield PAIR, pair, None, error, None
                else:
                    yield PAIR, pair, float(np.dot(vectors[row], texts[row])), "", unsafe[row]
                    row += 1
        if images:
            vectors, errors = model.encode_images([payload for _, _, payload in images])
            unsafe = nsfw_scores(model, vectors)
            row = 0
            for (_, image_id, _), error in zip(images, errors):
                if error:
                    yield IMAGE, image_id, None, error, None
                else:
                    yield IMAGE, image_id, vectors[row], "", unsafe[row]
                    row += 1
        if docs:
            matrix = model.encode_texts([text for _, _, texts in docs for text in texts])
            start = 0
            for _, doc_id, texts in docs:
                yield TEXTS, doc_id, tuple(texts), matrix[start : start + len(texts)]
                start += len(texts)

    def batch_elements_kwargs(self) -> Mapping[str, Any]:
        return {"min_batch_size": 1, "max_batch_size": self._config.batch_size}


# ---------------------------------------------------------------------------------
# Texts to compare each image with
# ---------------------------------------------------------------------------------


def image_caption(node: ImageNode) -> str:
    """An image's own text: alt, else figcaption, else title."""
    for text in (node.alt, node.caption, node.title):
        text = " ".join((text or "").split())
        if text:
            return text
    return ""


def neighbours(doc: Document, position: int) -> tuple[str, str]:
    """The text of the nearest text node before and after the node at ``position``."""
    before = after = ""
    for i in range(position - 1, -1, -1):
        if isinstance(doc.nodes[i], TextNode) and doc.nodes[i].text.strip():
            before = doc.nodes[i].text
            break
    for i in range(position + 1, len(doc.nodes)):
        if isinstance(doc.nodes[i], TextNode) and doc.nodes[i].text.strip():
            after = doc.nodes[i].text
            break
    return before, after


def document_sentences(doc: Document) -> list[tuple[int, str]]:
    """(text node position, sentence) for every sentence of the document, in order."""
    return [(i, s) for i, n in enumerate(doc.nodes) if isinstance(n, TextNode) for s in split_sentences(n.text)]


def scoring_texts(doc: Document, assign: bool) -> tuple[str, ...]:
    """The distinct texts the stage embeds for ``doc``, in first-use order."""
    texts: dict[str, None] = {}
    for position, node in enumerate(doc.nodes):
        if isinstance(node, ImageNode) and node.image_id:
            for text in (image_caption(node), *neighbours(doc, position)):
                if text:
                    texts.setdefault(text)
    if assign and any(isinstance(n, ImageNode) and n.image_id for n in doc.nodes):
        for _, sentence in document_sentences(doc):
            texts.setdefault(sentence)
    return tuple(texts)


# ---------------------------------------------------------------------------------
# Per document
# ---------------------------------------------------------------------------------


def clip_image_decision(doc: Document, node: ImageNode, verdict) -> Decision:
    return Decision(
        doc_id=node.image_id or "",
        url=node.src,
        stage=STAGE,
        kind=KIND_REJECTED,
        reason=verdict.reason,
        provenance=doc.provenance,
        value=verdict.value,
        threshold=verdict.threshold,
        detail=f"document {doc.doc_id}",
        subject=SUBJECT_IMAGE,
    )


def image_error_decision(image_id: str, error: str) -> Decision:
    from mmcurate.schemas import Provenance

    exc_type, _, message = error.partition(": ")
    return Decision(
        doc_id=image_id,
        url="",
        stage=STAGE,
        kind=KIND_ERROR,
        reason=exc_type,
        provenance=Provenance(warc_file=""),
        detail=message,
        subject=SUBJECT_IMAGE,
    )


def _reorder(doc: Document, anchors: dict[int, tuple[int, int]]) -> tuple:
    """Nodes with each image in ``anchors`` (position -> (text position, sentence
    index)) moved right after its text node; other images stay after the text node
    that preceded them."""
    text_positions = [i for i, n in enumerate(doc.nodes) if isinstance(n, TextNode)]
    placed: dict[int, list[tuple[int, int, int]]] = {}
    last_text = -1
    for i, node in enumerate(doc.nodes):
        if isinstance(node, TextNode):
            last_text = i
            continue
        anchor, order = anchors.get(i, (last_text, -1))
        placed.setdefault(anchor, []).append((order, i, i))
    nodes = [doc.nodes[i] for _, _, i in sorted(placed.get(-1, []))]
    for t in text_positions:
        nodes.append(doc.nodes[t])
        nodes += [doc.nodes[i] for _, _, i in sorted(placed.get(t, []))]
    return tuple(nodes)


def score_document(
    doc: Document,
    image_vectors: Mapping[str, np.ndarray],
    texts: Sequence[str],
    text_vectors: np.ndarray,
    config: ScoringConfig,
    unsafe: Optional[Mapping[str, float]] = None,
) -> tuple[Document, list[tuple[ImageNode, Any]], int]:
    """The scored document (nodes updated, images below the floor removed, signals
    added), the removed images with their verdicts, and the number of images scored.

    Per-image signals are indexed by the image's position among the document's
    image nodes as it entered the stage. ``unsafe`` holds NSFW scores by image_id
    (``scoring.nsfw``): an image above the threshold is removed before its
    similarity counts (``image.nsfw``), and the document gets ``nsfw.*`` signals."""
    text_index = {t: i for i, t in enumerate(texts)}

    def sim(vector: np.ndarray, text: str) -> Optional[float]:
        i = text_index.get(text) if text else None
        return None if i is None else float(np.dot(vector, text_vectors[i]))

    signals: dict[str, float] = {}
    nodes: list = []
    removed: list[tuple[ImageNode, Any]] = []
    best_scores: list[float] = []
    kept_vectors: list[tuple[int, int, np.ndarray]] = []  # (new position, image index, vector)
    nsfw_found: list[float] = []
    nsfw_removed = 0
    k = -1
    for position, node in enumerate(doc.nodes):
        if not isinstance(node, ImageNode):
            nodes.append(node)
            continue
        k += 1
        vector = image_vectors.get(node.image_id) if node.image_id else None
        score = unsafe.get(node.image_id) if unsafe and node.image_id else None
        if score is not None:  # safety first: an NSFW image never reaches the similarity rules
            signals[nsfw_rules.image_signal(k)] = score
            nsfw_found.append(score)
            verdict = nsfw_rules.image_verdict(score, threshold=config.nsfw.threshold)
            if not verdict.keep:
                removed.append((node, verdict))
                nsfw_removed += 1
                continue
        before, after = neighbours(doc, position)
        scores = {}
        if vector is not None:
            scores = {"caption": sim(vector, image_caption(node)), "before": sim(vector, before), "after": sim(vector, after)}
        for what, value in scores.items():
            if value is not None:
                signals[rules.image_signal(k, what)] = value
        best = rules.best_similarity(scores)
        if best is None:
            nodes.append(node)
            continue
        signals[rules.image_signal(k, "best")] = best
        best_scores.append(best)
        scored_node = dataclasses.replace(node, clip_score=best)
        verdict = rules.image_verdict(best, min_similarity=config.image_min_similarity)
        if not verdict.keep:
            removed.append((scored_node, verdict))
            continue
        kept_vectors.append((len(nodes), k, vector))
        nodes.append(scored_node)
    signals.update(rules.aggregates(best_scores, share_threshold=config.share_threshold))
    signals[rules.CLIP_REMOVED] = float(len(removed) - nsfw_removed)
    if unsafe is not None:
        signals.update(nsfw_rules.aggregates(nsfw_found, nsfw_removed))
    scored = dataclasses.replace(doc, nodes=tuple(nodes)).with_signals(signals)
    if config.assign_images and kept_vectors:
        usable = [(p, s) for p, s in document_sentences(scored) if s in text_index]
        if usable:
            matrix = np.array([[float(np.dot(v, text_vectors[text_index[s]])) for _, s in usable] for _, _, v in kept_vectors])
            anchors: dict[int, tuple[int, int]] = {}
            extra: dict[str, float] = {}
            for row, ((position, index, _), column) in enumerate(zip(kept_vectors, rules.assign_images(matrix))):
                if column is None:
                    continue
                anchors[position] = (usable[column][0], column)
                extra[rules.image_signal(index, "sentence")] = float(column)
                extra[rules.image_signal(index, "sentence_similarity")] = float(matrix[row, column])
            scored = dataclasses.replace(scored, nodes=_reorder(scored, anchors)).with_signals(extra)
    return scored, removed, len(best_scores)


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
                    yield beam.pvalue.TaggedOutput(REJECTED, clip_image_decision(doc, node, verdict))
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


def image_payload(row: Mapping[str, Any]) -> Optional[bytes]:
    """The bytes of an images-table row: in the row, or at its path (images.store=path)."""
    if row.get("bytes") is not None:
        return row["bytes"]
    if row.get("path"):
        with FileSystems.open(row["path"]) as fh:
            return fh.read()
    return None


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


def ok_rows_by_id(rows: beam.PCollection, label: str = "OkRowsById") -> beam.PCollection:
    """(image_id, row) for images-table rows of retrieved images."""
    return rows | label >> beam.FlatMap(
        lambda r: [(r["image_id"], r)] if r.get("image_id") and r.get("status") == "ok" else []
    )


class ScoreImageText(beam.PTransform):
    """The `scoring` stage: ``docs | ScoreImageText(config, image_rows)`` -> StageResult.

    ``image_rows`` are the images table's rows (``ImagesResult.images``). ``loader``
    replaces ``load_clip`` (tests pass a fake encoder; CLIP then runs without a
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
        if config.clip_on and loader is None:
            check_checkpoint(config)  # fail at construction, naming the key
        if config.clip_on or loader is not None:
            check_nsfw(config.nsfw)
        self._handler = ClipModelHandler(config, loader)
        self._clip = config.clip_on or loader is not None
        hint = config.accelerator if accelerator is None else accelerator
        self._accelerator = hint if config.device == "cuda" else ""
        self._judge_client = judge_client

    @property
    def accelerator(self) -> str:
        """The accelerator hint the model transform carries ("" when on CPU)."""
        return self._accelerator

    def model_transform(self) -> beam.PTransform:
        """``RunInference`` over both towers, with the accelerator hint when on cuda."""
        inference = RunInference(self._handler)
        if self._accelerator:
            inference = inference.with_resource_hints(accelerator=self._accelerator)
        return inference

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
                {"want": wanted, "row": ok_rows_by_id(rows)}
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
            from mmcurate.stages.judge import JudgeDocuments

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
