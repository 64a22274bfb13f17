"""The VLM judge of the scoring stage (``scoring.judge``): ``JudgeDocuments`` rates
each document CLIP kept on a strict rubric, through an OpenAI-compatible chat
completions endpoint. Its rows carry stage ``scoring``: the judge is part of that
stage, run by ``ScoreImageText`` after CLIP.

Per document, the request holds the rubric as the system message and the
document's text plus its first images as the user message (``engines.judge_prompt``):
images are joined from the images table by image_id, downscaled and sent as base64
``data:`` URLs. An answer that is not one JSON object ``{"score": 1-5, "reason":
"..."}`` is an error row (``JudgeAnswerError``) with the raw answer in its detail;
a request that fails after every retry (``engines.judge_client``) is an error row
(``JudgeRequestError``). Answers are cached under ``cache_dir``
(``engines.judge_cache``): a rerun sends no request for a document it has judged.

Kept documents carry ``judge.score`` in signals and the raw answer in
``metadata["judge.answer"]``; below ``min_score`` is ``judge.low_score``.
Counters (namespace ``scoring``): ``judge.requests``, ``judge.cache_hits``,
``judge.retries``, plus the stage's ``kept``/``rejected.*``/``errors.*``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any, Iterable, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import reasons
from mmcurate.filters.clip import CLIP_JUDGE_SCORE
from mmcurate.filters.verdict import keep, reject
from mmcurate.schemas import Document
from mmcurate.stages.config import JudgeConfig
from mmcurate.stages.engines.judge_cache import ResponseCache
from mmcurate.stages.engines.judge_client import JudgeClient
from mmcurate.stages.engines.judge_prompt import build_messages, cache_key, data_url, document_hash, load_prompt, parse_answer
from mmcurate.stages.results import ERRORS, KEPT, REJECTED, StageCounters, StageResult, error_decision, rejection_decision
from mmcurate.stages.scoring import STAGE
from mmcurate.stages.scoring.images_table import image_payload, retrieved_rows_by_id

log = logging.getLogger(__name__)

ANSWER_METADATA = "judge.answer"


class JudgeFn(beam.DoFn):
    """Judges a batch of (document, [(image_id, data URL)]) concurrently."""

    def __init__(self, config: JudgeConfig, client: Any = None):
        self._config = config
        self._client_factory = client

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)
        self._prompt = load_prompt(self._config.prompt)
        self._cache = ResponseCache(self._config.cache_dir, FileSystems) if self._config.cache_dir else None
        self._loop = asyncio.new_event_loop()
        self._client = (self._client_factory or JudgeClient)(self._config)

    def teardown(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            loop.run_until_complete(self._client.close())
            loop.close()

    async def _judge(self, doc: Document, images: Sequence[tuple[str, str]]) -> tuple[Optional[str], Optional[BaseException]]:
        config = self._config
        key = cache_key(document_hash(doc, [i for i, _ in images]), self._prompt.version, config.model)
        if self._cache is not None:
            cached = self._cache.get(key)
            if cached is not None:
                self._counters.inc("judge.cache_hits")
                return cached["answer"], None
        messages = build_messages(self._prompt, doc.text[: config.max_text_chars], [url for _, url in images])
        try:
            answer = await self._client.complete(messages)
        except Exception as exc:  # a failed request is this document's error row
            return None, exc
        if self._cache is not None:
            self._cache.put(key, {"answer": answer, "prompt_version": self._prompt.version, "model": config.model})
        return answer, None

    async def _judge_all(self, batch: Sequence[tuple[Document, list]]) -> list:
        return list(await asyncio.gather(*(self._judge(doc, images) for doc, images in batch)))

    def process(self, batch: Sequence[tuple[Document, list]]) -> Iterable:
        started = time.perf_counter()
        before_requests, before_retries = self._client.requests, self._client.retries
        outcomes = self._loop.run_until_complete(self._judge_all(batch))
        self._counters.inc("judge.requests", self._client.requests - before_requests)
        self._counters.inc("judge.retries", self._client.retries - before_retries)
        for (doc, _), (answer, failure) in zip(batch, outcomes):
            try:
                if failure is not None:
                    raise failure
                score, _ = parse_answer(answer)
            except Exception as exc:
                self._counters.error(exc)
                if answer is not None:
                    doc = _with_answer(doc, answer)
                yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
                continue
            doc = _with_answer(doc.with_signals({CLIP_JUDGE_SCORE: score}), answer)
            verdict = keep() if score >= self._config.min_score else reject(reasons.JUDGE_LOW_SCORE, score, self._config.min_score)
            if verdict.keep:
                self._counters.kept()
                yield doc
            else:
                self._counters.rejected(verdict.reason)
                yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict))
        self._counters.micros(started)


def _with_answer(doc: Document, answer: str) -> Document:
    metadata = dict(doc.metadata)
    metadata[ANSWER_METADATA] = answer
    return dataclasses.replace(doc, metadata=metadata)


class _ThumbnailFn(beam.DoFn):
    def __init__(self, max_side: int):
        self._max_side = max_side

    def process(self, element: tuple[str, dict]) -> Iterable[tuple[str, tuple[str, str]]]:
        image_id, joined = element
        refs = list(joined["refs"])
        rows = list(joined["row"])
        if not refs or not rows:
            return
        payload = image_payload(rows[0])
        if payload is None:
            return
        try:
            url = data_url(payload, self._max_side)
        except Exception:  # undecodable: the judge sees the text without it
            log.debug("judge: image %s not decodable", image_id, exc_info=True)
            return
        for doc_id in set(refs):
            yield doc_id, (image_id, url)


def _first_images(doc: Document, n: int) -> list[str]:
    seen: list[str] = []
    for node in doc.image_nodes:
        if node.image_id and node.image_id not in seen:
            seen.append(node.image_id)
    return seen[:n]


def _with_images(element: tuple[str, dict]) -> Iterable[tuple[Document, list]]:
    _, joined = element
    images = dict(joined["image"])
    for doc in joined["doc"]:
        order = _first_images(doc, len(images) or 0)
        yield doc, [(i, images[i]) for i in order if i in images]


class JudgeDocuments(beam.PTransform):
    """``docs | JudgeDocuments(config, image_rows)`` -> StageResult (stage scoring).
    ``client`` replaces ``JudgeClient`` (a factory called with the config)."""

    def __init__(self, config: JudgeConfig, image_rows: Optional[beam.PCollection] = None, client: Any = None, label=None):
        super().__init__(label)
        load_prompt(config.prompt)  # fail at construction, naming the key
        self._config = config
        self._rows = image_rows
        self._client = client

    def expand(self, docs: beam.PCollection) -> StageResult:
        config = self._config
        rows = self._rows if self._rows is not None else docs.pipeline | "NoImageRows" >> beam.Create([])
        refs = docs | "FirstImages" >> beam.FlatMap(lambda d: [(i, d.doc_id) for i in _first_images(d, config.max_images)])
        thumbnails = (
            {"refs": refs, "row": retrieved_rows_by_id(rows, "JudgeRowsById")}
            | "JoinImages" >> beam.CoGroupByKey()
            | "Thumbnails" >> beam.ParDo(_ThumbnailFn(config.image_max_side))
        )
        judged = (
            {"doc": docs | "DocsById" >> beam.Map(lambda d: (d.doc_id, d)), "image": thumbnails}
            | "JoinDocs" >> beam.CoGroupByKey()
            | "WithImages" >> beam.FlatMap(_with_images)
            | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=config.batch_size)
            | "Ask" >> beam.ParDo(JudgeFn(config, self._client)).with_outputs(REJECTED, ERRORS, main=KEPT)
        )
        return StageResult(judged[KEPT], judged[REJECTED], judged[ERRORS])
