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
2. else over HTTP trying the candidates in order (``images.http``): the URLs are
   keyed by host and grouped (``GroupByKey``), and ``FetchImagesFn`` fetches each
   host's URLs on a long-lived event loop (``engines.host_fetch.HostScheduler``,
   ``engines.image_fetch.ImageFetcher``), emitting each result when it is done;
   with ``fetched_dir`` the bodies are staged there as they arrive and a rerun
   does not fetch them again;
3. else it is rejected as ``image.not_captured`` (images.http is off). When the only
   captures are over ``read.max_image_bytes`` it is ``image.capture_too_large`` (not
   fetched again over HTTP).

Payloads are decoded and normalised (``engines.image_decode.normalize_image``); a
result's ``source_url`` names the candidate that delivered, when another.

Counters (namespace ``images``): ``image.<status>``, ``image.reason.<reason>`` for a
rule's refusal, ``image.errors.<reason>`` for a failure, ``image.source.<warc|http>``,
``image.captured_unused``, ``http.requests``, ``http.from_staging`` (bodies a rerun
found staged in ``fetched_dir`` instead of fetching them).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import queue
import re
import threading
import time
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterable, Optional

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows
from apache_beam.utils.windowed_value import WindowedValue

from mmcurate.filters import reasons
from mmcurate.schemas import CapturedImage, Document
from mmcurate.stages.config import ImagesConfig
from mmcurate.stages.engines.image_decode import normalize_image
from mmcurate.stages.engines.host_fetch import HostScheduler
from mmcurate.stages.engines.image_fetch import Fetched, ImageFetcher, politeness_host
from mmcurate.schemas.rows import SOURCE_HTTP, SOURCE_WARC, STATUS_FAILED
from mmcurate.stages.engines.image_result import STAGE, ImageResult, reason_counter
from mmcurate.stages.read import captured_payload
from mmcurate.stages.results import StageCounters
from mmcurate.filters.url_forms import capture_key

FETCH = "fetch"

log = logging.getLogger(__name__)


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


class FetchedFiles:
    """Bodies fetched over HTTP, staged as they arrive under ``root`` (a directory on
    any filesystem Beam knows: local, gs://, s3://), so that a run killed part way
    resumes without fetching them again.

    A URL's file is ``<root>/<host>/<sha256 of the URL>``: deterministic, so a rerun
    finds it, and one directory per host, so the stage lists a host's files once
    for the host's whole group instead of asking for each URL. A file is written
    under a temporary name and renamed into place, so a file that exists is whole.
    It holds one JSON line (the URL, the candidate that delivered, its final URL
    and content type) and then the body."""

    def __init__(self, root: str):
        self._root = root

    def host_dir(self, host: str) -> str:
        return FileSystems.join(self._root, _UNSAFE_PATH.sub("_", host) or "_")

    def path(self, host: str, url: str) -> str:
        digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()
        return FileSystems.join(self.host_dir(host), digest)

    def present(self, host: str) -> set[str]:
        """Paths of the files staged for ``host``'s URLs."""
        pattern = FileSystems.join(self.host_dir(host), "*")
        (match,) = FileSystems.match([pattern])
        return {m.path for m in match.metadata_list if ".tmp-" not in m.path.rsplit("/", 1)[-1]}

    def read(self, path: str, url: str) -> Optional[Fetched]:
        """The staged fetch of ``url``; None when the file is not one of ours."""
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            data = fh.read()
        header, _, payload = data.partition(b"\n")
        try:
            meta = json.loads(header)
        except ValueError:
            return None
        if not isinstance(meta, dict) or meta.get("url") != url:
            return None
        return Fetched(
            url=meta.get("source_url") or url,
            ok=True,
            payload=payload,
            content_type=meta.get("content_type", ""),
            final_url=meta.get("final_url", ""),
        )

    def write(self, host: str, url: str, fetched: Fetched) -> None:
        path = self.path(host, url)
        meta = {"url": url, "source_url": fetched.url, "final_url": fetched.final_url, "content_type": fetched.content_type}
        temporary = f"{path}.tmp-{uuid.uuid4().hex}"
        with FileSystems.create(temporary, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            fh.write(json.dumps(meta).encode("utf-8", "surrogatepass") + b"\n")
            fh.write(fetched.payload)
        FileSystems.rename([temporary], [path])


_UNSAFE_PATH = re.compile(r"[^a-z0-9.-]")
# Seconds a waiting worker sleeps between looks at its fetch loop.
_POLL_SECONDS = 1.0


class FetchImagesFn(beam.DoFn):
    """Fetches each host's image URLs over HTTP and normalises each payload, emitting
    every result as soon as it is done.

    Input: ``(host, wants)``, the stage's URLs grouped by host (``GroupByKey``), so a
    host's URLs all meet here and the per-host limit and robots.txt hold for the
    whole run with no coordinator. One event loop per DoFn instance, started in
    ``setup`` in a thread of its own, runs an ``engines.host_fetch.HostScheduler``
    for as long as the instance lives (its session, DNS cache, robots.txt cache and
    host states with it): ``images.concurrency`` URLs in progress, at most
    ``images.per_host_concurrency`` per host. ``process`` hands a host's URLs to the
    loop and yields the results finished so far, never waiting for a batch; with
    ``images.max_pending_urls`` URLs outstanding it waits for results (yielding
    them) before it takes more. ``finish_bundle`` waits for what is left and emits
    it. Decoding runs here, in the Beam thread, while the loop goes on fetching; the
    loop starts no URL while ``images.concurrency`` fetched results wait for it, so
    the bodies held are those of the URLs in progress and as many waiting, however
    many images the run has.

    With ``fetched_dir``, each body fetched is staged there (``FetchedFiles``) before
    it is decoded, and a URL whose file is already there is not fetched again."""

    def __init__(self, config: ImagesConfig, fetched_dir: Optional[str] = None):
        self._config = config
        self._fetched_dir = fetched_dir

    def setup(self) -> None:
        config = self._config
        self._counters = StageCounters(STAGE)
        self._files = FetchedFiles(self._fetched_dir) if self._fetched_dir else None
        # Staged files are read and written on threads of their own (a gs:// file is
        # a request each), not one after another in the Beam thread.
        self._io = ThreadPoolExecutor(_STAGING_THREADS, "mmcurate-fetched-files") if self._files is not None else None
        self._writes: deque[Future] = deque()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mmcurate-image-fetch", daemon=True)
        self._thread.start()
        self._fetcher = ImageFetcher(config)
        # Results wait here for decoding: at most as many as there are URLs in progress.
        self._scheduler = HostScheduler(
            self._fetcher,
            config.concurrency,
            config.per_host_concurrency,
            config.host_give_up_after,
            _report,
            max_unclaimed=config.concurrency,
        )
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self._outstanding = 0
        self._requests = 0

    def teardown(self) -> None:
        if getattr(self, "_io", None) is not None:
            self._io.shutdown(wait=True)
        loop = getattr(self, "_loop", None)
        if loop is None or loop.is_closed():
            return
        if self._thread.is_alive():
            closing = asyncio.run_coroutine_threadsafe(self._close(), loop)
            try:
                closing.result(timeout=10)
            except Exception as exc:  # a teardown must not fail the worker
                log.warning("closing the image fetch loop: %s: %s", type(exc).__name__, exc)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=10)
        if not self._thread.is_alive():
            loop.close()

    async def _close(self) -> None:
        await self._scheduler.close()
        await self._fetcher.close()

    def start_bundle(self) -> None:
        if self._outstanding:
            # A bundle that failed left URLs in the loop: they belong to its retry.
            self._loop.call_soon_threadsafe(self._scheduler.cancel)
            self._results = queue.SimpleQueue()
            self._outstanding = 0
            self._writes = deque()  # and its staging writes: a file written is whole, or absent

    def process(self, element: tuple[str, Iterable[tuple[str, tuple[str, ...]]]]) -> Iterable[ImageResult]:
        started = time.perf_counter()
        host, wants = element
        staged = self._files.present(host) if self._files is not None else set()
        batch: list[tuple[str, tuple[str, ...]]] = []
        for want in wants:
            path = self._files.path(host, want[0]) if staged else ""
            if path in staged:
                self._outstanding += 1
                self._io.submit(self._read_staged, want, path, self._results)
            else:
                batch.append(want)
            if len(batch) >= self._config.batch_size or self._outstanding + len(batch) >= self._config.max_pending_urls:
                self._submit(host, batch)
                batch = []
            while self._outstanding >= self._config.max_pending_urls:  # back-pressure
                yield from self._wait_for_results()
        if batch:
            self._submit(host, batch)
        yield from self._finished_results()
        self._count_requests()
        self._counters.micros(started)

    def finish_bundle(self) -> Iterable[WindowedValue]:
        started = time.perf_counter()
        while self._outstanding:
            for result in self._wait_for_results():
                yield GlobalWindows.windowed_value_at_end_of_window(result)
        while self._writes:  # the bundle's fetches are staged when it ends
            self._writes.popleft().result()
        self._count_requests()
        self._counters.micros(started)

    # -- between the Beam thread, the loop and the staging threads ------------------------

    def _submit(self, host: str, wants: list[tuple[str, tuple[str, ...]]]) -> None:
        self._outstanding += len(wants)
        self._loop.call_soon_threadsafe(self._scheduler.submit, host, list(wants), self._results)

    def _finished_results(self) -> Iterable[ImageResult]:
        """The results finished so far, without waiting."""
        while self._outstanding:
            try:
                item = self._results.get_nowait()
            except queue.Empty:
                return
            result = self._take(*item)
            if result is not None:
                yield result

    def _wait_for_results(self) -> Iterable[ImageResult]:
        """Waits for the next item, then takes any others finished."""
        while True:
            try:
                item = self._results.get(timeout=_POLL_SECONDS)
                break
            except queue.Empty:
                if not self._thread.is_alive():
                    raise RuntimeError("the image fetch loop stopped with URLs outstanding") from None
        result = self._take(*item)
        if result is not None:
            yield result
        yield from self._finished_results()

    def _take(self, origin: str, want: tuple[str, tuple[str, ...]], item: Optional[Fetched]) -> Optional[ImageResult]:
        """The result of one item off the queue: a fetch (the loop may start another
        URL) or a staged file read (None when it was unusable: the URL is fetched)."""
        self._outstanding -= 1
        if origin == _FETCHED:
            self._loop.call_soon_threadsafe(self._scheduler.claim, 1)
            return self._result(want, item)
        if item is None:
            self._submit(politeness_host(want[0]), [want])
            return None
        self._counters.inc("http.from_staging")
        result = self._normalized(want[0], item)
        count_result(self._counters, result)
        return result

    def _read_staged(self, want: tuple[str, tuple[str, ...]], path: str, results: queue.SimpleQueue) -> None:
        """On a staging thread: a staged file's fetch to the queue, None if unusable."""
        try:
            fetched = self._files.read(path, want[0])
        except Exception as exc:  # unreadable: fetch it again
            log.warning("staged fetch %s unreadable, fetching again: %s: %s", path, type(exc).__name__, exc)
            fetched = None
        results.put((_STAGED, want, fetched))

    def _stage(self, url: str, item: Fetched) -> None:
        """Writes a fetched body to staging on a staging thread; a write that failed
        fails the bundle (here or in finish_bundle), as Beam's own sinks do."""
        while self._writes and self._writes[0].done():
            self._writes.popleft().result()
        while len(self._writes) >= self._config.concurrency:  # bodies waiting to be written stay bounded
            self._writes.popleft().result()
        self._writes.append(self._io.submit(self._files.write, politeness_host(url), url, item))

    def _count_requests(self) -> None:
        requests = self._fetcher.requests
        if requests > self._requests:
            self._counters.inc("http.requests", requests - self._requests)
            self._requests = requests

    # -- results -----------------------------------------------------------------------

    def _result(self, want: tuple[str, tuple[str, ...]], item: Fetched) -> ImageResult:
        url = want[0]
        if not item.ok:
            result = ImageResult(
                url=url,
                status=STATUS_FAILED,
                reason=item.reason,
                value=item.value,
                threshold=item.threshold,
                detail=item.detail,
                source=SOURCE_HTTP,
            )
        else:
            if self._files is not None:
                self._stage(url, item)
            result = self._normalized(url, item)
        count_result(self._counters, result)
        return result

    def _normalized(self, url: str, item: Fetched) -> ImageResult:
        result = normalize_image(url, item.payload, self._config, source=SOURCE_HTTP, content_type=item.content_type)
        return result if item.url == url else dataclasses.replace(result, source_url=item.url)


# What an item of a FetchImagesFn's queue comes from.
_FETCHED = "fetched"
_STAGED = "staged"
# Threads per DoFn instance that read and write staged files.
_STAGING_THREADS = 16


def _report(results: queue.SimpleQueue, want: tuple[str, tuple[str, ...]], fetched: Fetched) -> None:
    """The scheduler's ``on_done``: a finished URL to the queue of its bundle."""
    results.put((_FETCHED, want, fetched))


def _by_host(want: tuple[str, tuple[str, ...]]) -> tuple[str, tuple[str, tuple[str, ...]]]:
    return politeness_host(want[0]), want


class RetrieveImages(beam.PTransform):
    """``(wants, captured) | RetrieveImages(config)`` -> one ``ImageResult`` per
    distinct wanted URL (with its bytes when retrieved): the capture of its most
    preferred captured candidate, else its candidates over HTTP, else not captured.
    See the module docstring for the inputs and counters."""

    def __init__(self, config: ImagesConfig, label: Optional[str] = None, fetched_dir: Optional[str] = None):
        super().__init__(label)
        self._config = config
        self._fetched_dir = fetched_dir

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
            | "KeyByHost" >> beam.Map(_by_host)
            | "GroupByHost" >> beam.GroupByKey()
            | "Fetch" >> beam.ParDo(FetchImagesFn(self._config, self._fetched_dir))
        )
        return (resolved["results"], fetched) | "AllResults" >> beam.Flatten()
