"""``RetrieveImages``: one result per wanted image URL, from the WARC captures or
over HTTP. The one retrieval transform: the images stage and recycling both use it,
so the same capture matching, HTTP rules and image rules apply to every image.

Input: ``(wants, captured)``. ``wants`` holds ``(url, candidates)`` pairs: an image
URL as extraction wrote it and its other srcset / ``<picture>`` candidates, most
preferred first (``image_wants`` makes them from documents; a caller with bare URLs
passes ``(url, ())``). ``captured`` is the read stage's ``CapturedImage``
PCollection (``ReadResult.images``: pointers to the records, or payloads).

Output: one ``engines.image_result.ImageResult`` per distinct wanted URL, with its
bytes when retrieved. Each URL is retrieved once per run:

1. matched with the ``image/*`` captures by capture key (the SURT that Common
   Crawl's index and pywb use, ``url_forms.capture_key``: ``%2C`` and ``,``, http and
   https, ``www.`` or not are one key), the capture of its most preferred captured
   candidate wins (an archive that holds only the 1x file still yields the image);
2. else over HTTP trying the candidates in order (``images.http``,
   ``engines.image_fetch.ImageFetcher``), else it fails as ``image.not_captured``.
   When the only captures are over ``read.max_image_bytes`` it is
   ``image.capture_too_large`` (not fetched again over HTTP).

Payloads are decoded and normalised (``engines.image_decode.normalize_image``); a
result's ``source_url`` names the candidate that delivered, when another.

Counters (namespace ``images``): ``image.<status>``, ``image.reason.<reason>`` for a
rule's refusal, ``image.errors.<reason>`` for a failure, ``image.source.<warc|http>``,
``image.captured_unused``, ``http.requests``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Iterable, Optional

import apache_beam as beam

from mmcurate.filters import reasons
from mmcurate.schemas import CapturedImage, Document
from mmcurate.stages.config import ImagesConfig
from mmcurate.stages.engines.image_decode import normalize_image
from mmcurate.stages.engines.image_fetch import Fetched, ImageFetcher
from mmcurate.schemas.rows import SOURCE_HTTP, SOURCE_WARC, STATUS_FAILED
from mmcurate.stages.engines.image_result import STAGE, ImageResult, reason_counter
from mmcurate.stages.read import captured_payload
from mmcurate.stages.results import StageCounters
from mmcurate.filters.url_forms import capture_key

FETCH = "fetch"

# Refusals that another candidate URL of the same image would meet as well.
_FINAL_REFUSALS = frozenset({reasons.IMAGE_ROBOTS_DISALLOWED, reasons.IMAGE_OPTED_OUT, reasons.IMAGE_REFUSED_ADDRESS})


def image_wants(doc: Document) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(URL, its other candidates, most preferred first) for each distinct image URL
    of a document, as extraction wrote them (in canonical form: ``ImageNode.src``)."""
    seen = set()
    for node in doc.image_nodes:
        if node.src and node.src not in seen:
            seen.add(node.src)
            yield node.src, tuple(c for c in node.candidates if c and c != node.src)


def count_result(counters: StageCounters, result: ImageResult) -> None:
    counters.inc(f"image.{result.status}")
    if result.reason:
        counters.inc(reason_counter(result.reason))
    if result.source:
        counters.inc(f"image.source.{result.source}")


def _capture_rank(image: CapturedImage) -> tuple:
    prov = image.provenance
    return (prov.date, prov.warc_file, prov.offset)


def _candidate_keys(want: tuple[str, tuple[str, ...]]) -> Iterable[tuple[str, tuple[str, int, str]]]:
    """(capture key, (wanted URL, rank, candidate URL)) for the URL and each candidate."""
    url, candidates = want
    for rank, candidate in enumerate((url, *candidates)):
        yield capture_key(candidate), (url, rank, candidate)


def _capture_by_key(image: CapturedImage) -> tuple[str, CapturedImage]:
    return capture_key(image.url), image


class MatchCapturesFn(beam.DoFn):
    """Per capture key: the earliest capture with that key, offered to every wanted
    URL one of whose candidates has the key, as (URL, (rank, candidate, capture or
    None)); every candidate reports, captured or not, so each URL hears of all."""

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        _, joined = element
        captured = list(joined["captured"])
        wants = sorted(set(joined["want"]))
        if not wants:
            if captured:
                self._counters.inc("image.captured_unused")
            return
        # The earliest capture, one within read.max_image_bytes first.
        image = min(captured, key=lambda c: (c.oversize > 0, _capture_rank(c))) if captured else None
        for url, rank, candidate in wants:
            yield url, (rank, candidate, image)


class ResolveSourcesFn(beam.DoFn):
    """Per wanted URL: normalise the capture of its most preferred captured
    candidate, or send its candidates to HTTP (tag ``fetch``), or fail it."""

    def __init__(self, config: ImagesConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, Iterable[tuple[int, str, Optional[CapturedImage]]]]) -> Iterable:
        url, offers = element
        started = time.perf_counter()
        by_rank: dict[int, tuple[str, Optional[CapturedImage]]] = {}
        for rank, candidate, image in offers:
            if rank not in by_rank or (image is not None and by_rank[rank][1] is None):
                by_rank[rank] = (candidate, image)
        offered = [(c, im) for _, (c, im) in sorted(by_rank.items()) if im is not None]
        hit = next(((c, im) for c, im in offered if not im.oversize), None)
        oversized = next((im for _, im in offered if im.oversize), None)
        if hit is not None:
            result = self._from_capture(url, *hit)
        elif oversized is not None:
            # The WARC's copy decides: fetching it again would download as much.
            result = ImageResult(
                url=url,
                status=STATUS_FAILED,
                reason=reasons.IMAGE_CAPTURE_TOO_LARGE,
                value=float(oversized.oversize),
                threshold=float(oversized.limit),
                detail=f"captured in the input WARCs ({oversized.oversize} bytes), over read.max_image_bytes",
                source=SOURCE_WARC,
                provenance=oversized.provenance,
            )
        elif not url.startswith(("http://", "https://")):
            result = ImageResult(url=url, status=STATUS_FAILED, reason=reasons.IMAGE_UNSUPPORTED_SCHEME, detail=url[:60])
        elif self._config.http:
            self._counters.micros(started)
            yield beam.pvalue.TaggedOutput(FETCH, (url, tuple(c for rank, (c, _) in sorted(by_rank.items()) if rank > 0)))
            return
        else:
            result = ImageResult(
                url=url, status=STATUS_FAILED, reason=reasons.IMAGE_NOT_CAPTURED, detail="not in the input WARCs; images.http is off"
            )
        count_result(self._counters, result)
        self._counters.micros(started)
        yield result

    def _from_capture(self, url: str, candidate: str, image: CapturedImage) -> ImageResult:
        try:
            payload = captured_payload(image)
        except Exception as exc:  # the WARC moved or changed since it was read
            return ImageResult(
                url=url,
                status=STATUS_FAILED,
                reason=type(exc).__name__,
                detail=str(exc)[:200],
                source=SOURCE_WARC,
                provenance=image.provenance,
            )
        result = normalize_image(
            url, payload, self._config, source=SOURCE_WARC, content_type=image.content_type, provenance=image.provenance
        )
        return result if candidate == url else dataclasses.replace(result, source_url=candidate)


class FetchImagesFn(beam.DoFn):
    """Fetches a batch of URLs concurrently over HTTP, then normalises each payload.

    The event loop and the HTTP session (connection pool, DNS cache, robots.txt
    cache, per-host limits) live as long as the DoFn instance: one per worker thread."""

    def __init__(self, config: ImagesConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)
        self._loop = asyncio.new_event_loop()
        self._fetcher = ImageFetcher(self._config)

    def teardown(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            loop.run_until_complete(self._fetcher.close())
            loop.close()

    def process(self, wants: list[tuple[str, tuple[str, ...]]]) -> Iterable[ImageResult]:
        started = time.perf_counter()
        before = self._fetcher.requests
        done = self._fetch_candidates(wants)
        self._counters.inc("http.requests", self._fetcher.requests - before)
        for url, _ in wants:
            result = self._result(url, done[url])
            count_result(self._counters, result)
            yield result
        self._counters.micros(started)

    def _fetch_candidates(self, wants: list[tuple[str, tuple[str, ...]]]) -> dict[str, Fetched]:
        """Each URL's candidates in order of preference, one round of requests per
        rank, until one is retrieved; a refusal that would hold for every candidate
        (robots.txt, opt-out, a refused address) ends the search. A URL none of whose
        candidates is retrieved keeps the outcome of its own fetch."""
        first: dict[str, Fetched] = {}
        done: dict[str, Fetched] = {}
        pending = [(url, [url, *candidates]) for url, candidates in wants]
        while pending:
            fetched = self._loop.run_until_complete(self._fetcher.fetch_all([c[0] for _, c in pending]))
            retry = []
            for (url, candidates), item in zip(pending, fetched):
                first.setdefault(url, item)
                if item.ok or len(candidates) == 1 or item.reason in _FINAL_REFUSALS:
                    done[url] = item if item.ok else first[url]
                else:
                    retry.append((url, candidates[1:]))
            pending = retry
        return done

    def _result(self, url: str, item: Fetched) -> ImageResult:
        if not item.ok:
            return ImageResult(
                url=url,
                status=STATUS_FAILED,
                reason=item.reason,
                value=item.value,
                threshold=item.threshold,
                detail=item.detail,
                source=SOURCE_HTTP,
            )
        result = normalize_image(url, item.payload, self._config, source=SOURCE_HTTP, content_type=item.content_type)
        return result if item.url == url else dataclasses.replace(result, source_url=item.url)


class RetrieveImages(beam.PTransform):
    """``(wants, captured) | RetrieveImages(config)`` -> one ``ImageResult`` per
    distinct wanted URL (with its bytes when retrieved): the capture of its most
    preferred captured candidate, else its candidates over HTTP, else not captured.
    See the module docstring for the inputs and counters."""

    def __init__(self, config: ImagesConfig, label: Optional[str] = None):
        super().__init__(label)
        self._config = config

    def expand(self, pcolls: tuple[beam.PCollection, beam.PCollection]) -> beam.PCollection:
        wants, captured = pcolls
        offers = (
            {
                "want": wants | "CandidateKeys" >> beam.FlatMap(_candidate_keys),
                "captured": captured | "KeyCaptures" >> beam.Map(_capture_by_key),
            }
            | "GroupByCaptureKey" >> beam.CoGroupByKey()
            | "MatchCaptures" >> beam.ParDo(MatchCapturesFn())
            | "GroupByUrl" >> beam.GroupByKey()
        )
        resolved = offers | "ResolveSources" >> beam.ParDo(ResolveSourcesFn(self._config)).with_outputs(FETCH, main="results")
        fetched = (
            resolved[FETCH]
            | "SpreadFetches" >> beam.Reshuffle()
            | "BatchUrls" >> beam.BatchElements(min_batch_size=1, max_batch_size=self._config.batch_size)
            | "Fetch" >> beam.ParDo(FetchImagesFn(self._config))
        )
        return (resolved["results"], fetched) | "AllResults" >> beam.Flatten()
