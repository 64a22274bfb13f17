"""The VLM judge (``scoring.judge``): an OpenAI-compatible chat completions endpoint
(vLLM, SGLang or a hosted API) rates each document on a strict rubric.

Per document, the request holds the rubric (a versioned prompt file shipped as
package data, ``filters/data/judge_rubric_v1.txt``) as the system message, and the
document's text plus its first images as the user message: images are joined
from the images table by image_id, downscaled and sent as base64 ``data:`` URLs.
The answer must be one JSON object ``{"score": 1-5, "reason": "..."}``; anything
else is an error row (``JudgeAnswerError``) with the raw answer in its detail.

The client (``JudgeClient``, aiohttp) keeps at most ``concurrency`` requests in
flight per worker, times each attempt out after ``timeout_seconds``, and retries
429, 5xx, timeouts and connection errors up to ``retries`` times with exponential
backoff (``Retry-After`` honoured); what still fails is an error row
(``JudgeRequestError``). Answers are cached on disk (any Beam filesystem) under
``cache_dir``, keyed by sha256 of (document hash, prompt version, model): a rerun
sends no request for a document it has judged.

Kept documents carry ``judge.score`` in signals and the raw answer in
``metadata["judge.answer"]``; below ``min_score`` is ``judge.low_score``.
Counters (namespace ``scoring``): ``judge.requests``, ``judge.cache_hits``,
``judge.retries``, plus the stage's ``kept``/``rejected.*``/``errors.*``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import logging
import os
import posixpath
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import aiohttp
import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import reasons
from mmcurate.filters.clip import CLIP_JUDGE_SCORE
from mmcurate.filters.verdict import keep, reject
from mmcurate.stages.config import JudgeConfig
from mmcurate.schemas import Document
from mmcurate.stages.results import ERRORS, KEPT, REJECTED, StageCounters, StageResult, error_decision, rejection_decision

log = logging.getLogger(__name__)

STAGE = "scoring"
DATA_DIR = Path(__file__).resolve().parents[1] / "filters" / "data"
ANSWER_METADATA = "judge.answer"
SCORE_RANGE = (1, 5)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class JudgeAnswerError(ValueError):
    """The endpoint answered, but not with the JSON object the rubric asks for."""


class JudgeRequestError(RuntimeError):
    """No usable HTTP answer after every retry (status, timeout or connection)."""


@dataclass(frozen=True)
class Prompt:
    version: str
    text: str


def load_prompt(name: str) -> Prompt:
    """The rubric file ``name`` (under filters/data/, or a path); its first line
    ``version: N`` names the version that keys the cache."""
    path = Path(name) if os.sep in name or Path(name).is_absolute() else DATA_DIR / name
    if not path.is_file():
        import importlib.util

        spec = importlib.util.find_spec("mmcurate.filters")
        path = Path(spec.origin).parent / "data" / name if spec and spec.origin else path
    if not path.is_file():
        raise FileNotFoundError(f"scoring.judge.prompt: file not found: {name}")
    text = path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if not first.startswith("version:"):
        raise ValueError(f"scoring.judge.prompt: {path} must start with a 'version: N' line")
    return Prompt(version=first.removeprefix("version:").strip(), text=rest.strip())


def parse_answer(content: str) -> tuple[float, str]:
    """(score, reason) from the model's answer; JudgeAnswerError when it is not one
    JSON object with an integer score within the rubric's range."""
    stripped = _FENCE.sub("", content.strip())
    match = _JSON_OBJECT.search(stripped)
    if not match:
        raise JudgeAnswerError(f"no JSON object in the answer: {content[:200]!r}")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise JudgeAnswerError(f"invalid JSON ({exc.msg}): {content[:200]!r}") from None
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or not isinstance(score, (int, float)) or score != int(score):
        raise JudgeAnswerError(f"'score' is not an integer: {content[:200]!r}")
    if not SCORE_RANGE[0] <= score <= SCORE_RANGE[1]:
        raise JudgeAnswerError(f"'score' {score} is outside {SCORE_RANGE[0]}-{SCORE_RANGE[1]}: {content[:200]!r}")
    return float(score), str(data.get("reason", ""))


def document_hash(doc: Document, image_ids: Sequence[str]) -> str:
    """What the judge sees: the text and the images sent, hashed."""
    digest = hashlib.sha256(doc.text.encode("utf-8", "surrogatepass"))
    for image_id in image_ids:
        digest.update(b"\x00" + image_id.encode())
    return digest.hexdigest()


def cache_key(doc_hash: str, prompt_version: str, model: str) -> str:
    return hashlib.sha256(f"{doc_hash}\x00{prompt_version}\x00{model}".encode()).hexdigest()


def data_url(payload: bytes, max_side: int) -> str:
    """The image downscaled to ``max_side`` (longer side), as a JPEG data URL."""
    from PIL import Image

    with Image.open(io.BytesIO(payload)) as image:
        image.seek(0)
        rgb = image.convert("RGB")
        rgb.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        rgb.save(buffer, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def build_messages(prompt: Prompt, text: str, images: Sequence[str]) -> list[dict]:
    content: list[dict] = [{"type": "text", "text": f"Document text:\n{text}"}]
    content += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return [{"role": "system", "content": prompt.text}, {"role": "user", "content": content}]


class ResponseCache:
    """Answers as JSON files under ``directory`` (any Beam filesystem)."""

    def __init__(self, directory: str):
        self._dir = directory

    def _path(self, key: str) -> str:
        join = FileSystems.join if "://" in self._dir else posixpath.join
        return join(self._dir, key[:2], f"{key}.json")

    def get(self, key: str) -> Optional[dict]:
        path = self._path(key)
        if not FileSystems.exists(path):
            return None
        with FileSystems.open(path) as fh:
            return json.loads(fh.read().decode("utf-8"))

    def put(self, key: str, value: dict) -> None:
        path = self._path(key)
        if "://" not in path:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp-{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(value, fh)
            os.replace(tmp, path)
        else:
            with FileSystems.create(path, mime_type="application/json") as fh:
                fh.write(json.dumps(value).encode("utf-8"))


class JudgeClient:
    """Chat completions over aiohttp, on one event loop; counts what it sends."""

    def __init__(self, config: JudgeConfig):
        self._config = config
        self._session: Optional[aiohttp.ClientSession] = None
        self._slots: Optional[asyncio.Semaphore] = None
        self.requests = 0
        self.retries = 0

    def _ensure(self) -> aiohttp.ClientSession:
        if self._session is None:
            headers = {"Content-Type": "application/json"}
            key = os.environ.get(self._config.api_key_env, "") if self._config.api_key_env else ""
            if key:
                headers["Authorization"] = f"Bearer {key}"
            self._session = aiohttp.ClientSession(headers=headers)
            self._slots = asyncio.Semaphore(self._config.concurrency)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def complete(self, messages: list[dict]) -> str:
        """The answer's text; JudgeRequestError when every attempt failed."""
        config = self._config
        session = self._ensure()
        body = {"model": config.model, "messages": messages, "temperature": 0, "max_tokens": config.max_tokens}
        url = f"{config.endpoint}/chat/completions"
        last = ""
        for attempt in range(config.retries + 1):
            wait = config.backoff_seconds * (2**attempt)
            try:
                async with self._slots:
                    self.requests += 1
                    async with session.post(url, json=body, timeout=aiohttp.ClientTimeout(total=config.timeout_seconds)) as response:
                        if response.status == 200:
                            data = await response.json(content_type=None)
                            try:
                                return data["choices"][0]["message"]["content"] or ""
                            except (KeyError, IndexError, TypeError):
                                raise JudgeAnswerError(f"not a chat completion: {str(data)[:200]}") from None
                        last = f"HTTP {response.status}: {(await response.text())[:200]}"
                        if response.status != 429 and response.status < 500:
                            raise JudgeRequestError(last)
                        retry_after = response.headers.get("Retry-After", "")
                        if retry_after.replace(".", "", 1).isdigit():
                            wait = max(wait, float(retry_after))
            except asyncio.TimeoutError:
                last = f"no answer within {config.timeout_seconds}s"
            except aiohttp.ClientError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if attempt < config.retries:
                self.retries += 1
                await asyncio.sleep(wait)
        raise JudgeRequestError(f"{last} (after {config.retries + 1} attempts)")


class JudgeFn(beam.DoFn):
    """Judges a batch of (document, [(image_id, data URL)]) concurrently."""

    def __init__(self, config: JudgeConfig, client: Any = None):
        self._config = config
        self._client_factory = client

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)
        self._prompt = load_prompt(self._config.prompt)
        self._cache = ResponseCache(self._config.cache_dir) if self._config.cache_dir else None
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
    import dataclasses

    metadata = dict(doc.metadata)
    metadata[ANSWER_METADATA] = answer
    return dataclasses.replace(doc, metadata=metadata)


class _ThumbnailFn(beam.DoFn):
    def __init__(self, max_side: int):
        self._max_side = max_side

    def process(self, element: tuple[str, dict]) -> Iterable[tuple[str, tuple[str, str]]]:
        from mmcurate.stages.scoring import image_payload

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
        from mmcurate.stages.scoring import ok_rows_by_id

        config = self._config
        rows = self._rows if self._rows is not None else docs.pipeline | "NoImageRows" >> beam.Create([])
        refs = docs | "FirstImages" >> beam.FlatMap(lambda d: [(i, d.doc_id) for i in _first_images(d, config.max_images)])
        thumbnails = (
            {"refs": refs, "row": ok_rows_by_id(rows, "JudgeRowsById")}
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
