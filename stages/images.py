"""Stage `images`: retrieve, validate and deduplicate the images documents
reference, then apply image-aware document rules.

Every step that spans the corpus is a Beam shuffle keyed by a string, and image
bytes travel only where they are needed (normalisation and the images table):

1. ``RetrieveImages``: each document's image URLs, canonicalised (``canonical_url``),
   with their other srcset / ``<picture>`` candidates in order of preference
   (``ImageNode.candidates``), are matched with the ``image/*`` payloads the read
   stage set aside by capture key (the SURT that Common Crawl's index and pywb
   use, ``url_forms.capture_key``: ``%2C`` and ``,``, http and https, ``www.`` or
   not are one key), so each URL is retrieved once per run: from the capture of
   its most preferred captured candidate (an archive that holds only the 1x file
   still yields the image), else over HTTP trying the candidates in order
   (``images.http``, ``retrieval.ImageFetcher``), else it fails as
   ``image.not_captured``. When the only captures are over
   ``read.max_image_bytes``, it fails as ``image.capture_too_large`` (it is not
   fetched again over HTTP). Payloads are decoded and normalised
   (``imaging.normalize_image``); the result of each URL is an ``ImageResult``
   whose ``source_url`` names the candidate that delivered, when another.
2. Exact dedup: retrieved images are keyed by ``image_id`` (sha256 of the stored
   bytes); the images table holds one row per image_id with all its URLs.
3. Perceptual near-duplicates: pHashes are grouped by band keys
   (``filters.lsh.band_keys``: by pigeonhole, two hashes within Hamming
   distance k share one of k+1 bands), and each image is mapped to the smallest
   image_id within distance k of it in any band: its cluster. One hop only:
   a chain a~b~c with a and c further apart than k maps c to b, not to a.
4. Frequency: distinct documents per cluster; a cluster used by more than
   ``max_doc_frequency`` documents (logos, icons, ads) is removed everywhere.
5. Documents joined back by doc_id: image nodes get image_id, width, height and
   pHash; nodes whose image failed, was refused, is too frequent, or repeats a
   cluster already in the document are removed (the URL stays in the decision
   row); then the document rules (image count, words per image, no image left).
6. Documents whose set of image clusters another document has are rejected; the
   earliest capture survives.

Decision rows: pages (``subject = "page"``) for document rules and image-set
duplicates; images (``subject = "image"``) for every URL not retrieved, every image
refused, every too-frequent cluster member and every in-document duplicate. Image
rows never count as pages: conservation holds over pages only.

Counters (namespace ``images``): pages ``kept``, ``rejected.<reason>``,
``errors.<type>``, ``micros``; images ``image.<status>``, ``image.reason.<reason>``,
``image.source.<warc|http>``, ``image.captured_unused``, ``http.requests``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import posixpath
import time
import uuid
from functools import partial
from typing import Iterable, NamedTuple, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import images as rules
from mmcurate.filters import lsh
from mmcurate.filters import reasons
from mmcurate.filters.verdict import reject
from mmcurate.stages.config import ImagesConfig
from mmcurate.schemas import (
    KIND_ERROR,
    KIND_REJECTED,
    SUBJECT_IMAGE,
    CapturedImage,
    Decision,
    Document,
    ImageNode,
    Provenance,
)
from mmcurate.schemas.tables import PROVENANCE_FIELDS
from mmcurate.stages.results import (
    ERRORS,
    KEPT,
    REJECTED,
    StageCounters,
    apply_filters,
    error_decision,
    rejection_decision,
)
from mmcurate.stages.imaging import (
    SOURCE_HTTP,
    SOURCE_WARC,
    STATUS_FAILED,
    STATUS_OK,
    STATUS_REJECTED,
    STATUS_SKIPPED,
    ImageResult,
    extension,
    normalize_image,
)
from mmcurate.stages.read import captured_payload
from mmcurate.filters.url_forms import canonical_url, capture_key
from mmcurate.stages.retrieval import Fetched, ImageFetcher
from mmcurate.stages.staging import VerdictsByUnit, read_unit, record_key, split_unit_key, unit_key

log = logging.getLogger(__name__)

STAGE = "images"

FETCH = "fetch"
USAGE = "usage"
DECISIONS = "decisions"

SIGNAL_REFERENCED = "images.referenced"
SIGNAL_REMOVED = "images.removed"
SIGNAL_SET_GROUP = "images.set_group_size"


class ImagesResult(NamedTuple):
    """The stage's outputs: pages kept, rejected and failed (as every filtering
    stage), plus rows of the images table. ``rejected`` also carries the image
    decision rows (subject ``image``)."""

    kept: beam.PCollection  # Document
    rejected: beam.PCollection  # Decision (pages and images)
    errors: beam.PCollection  # Decision
    images: beam.PCollection  # dict rows of the images table


class Cluster(NamedTuple):
    rep: str  # the smallest image_id within the pHash distance (itself if none)
    doc_frequency: int


class Link(NamedTuple):
    """One document's view of one of its image URLs."""

    url: str
    result: ImageResult  # without bytes
    cluster: Optional[Cluster]


def image_key(result: ImageResult) -> str:
    """The doc_id of an image decision row: its image_id, else a hash of its URL."""
    return result.image_id or hashlib.sha256(result.url.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def image_decision(result: ImageResult, reason: str = "", value=None, threshold=None, detail: str = "") -> Decision:
    return Decision(
        doc_id=image_key(result),
        url=result.url,
        stage=STAGE,
        kind=result.kind if not reason else KIND_REJECTED,
        reason=reason or result.reason,
        provenance=result.provenance or Provenance(warc_file=""),
        value=value if reason else result.value,
        threshold=threshold if reason else result.threshold,
        detail=detail if reason else result.detail,
        signals=dict(result.signals),
        subject=SUBJECT_IMAGE,
    )


def _count_result(counters: StageCounters, result: ImageResult) -> None:
    counters.inc(f"image.{result.status}")
    if result.reason:
        counters.inc(f"image.reason.{result.reason}")
    if result.source:
        counters.inc(f"image.source.{result.source}")


# ---------------------------------------------------------------------------------
# 1. Retrieval
# ---------------------------------------------------------------------------------


def image_wants(doc: Document) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(canonical URL, its other candidates canonicalised, most preferred first) for
    each distinct image URL of a document."""
    seen = set()
    for node in doc.image_nodes:
        if node.src:
            url = canonical_url(node.src)
            if url not in seen:
                seen.add(url)
                others = dict.fromkeys(canonical_url(c) for c in node.candidates if c)
                others.pop(url, None)
                yield url, tuple(others)


def image_refs(doc: Document, key: Optional[str] = None) -> Iterable[tuple[str, tuple[str, str]]]:
    """(canonical URL, (key, doc_id)) for each distinct image URL of a document; the
    key (default ``staging.record_key``) is what its links are joined back by."""
    key = record_key(doc) if key is None else key
    for url, _ in image_wants(doc):
        yield url, (key, doc.doc_id)


def staged_image_refs(element: tuple[str, Document]) -> Iterable[tuple[str, tuple[str, str]]]:
    unit, doc = element
    return image_refs(doc, unit_key(unit, record_key(doc)))


def staged_image_wants(element: tuple[str, Document]) -> Iterable[tuple[str, tuple[str, ...]]]:
    return image_wants(element[1])


def _capture_rank(image: CapturedImage) -> tuple:
    prov = image.provenance
    return (prov.date, prov.warc_file, prov.offset)


def _candidate_keys(want: tuple[str, tuple[str, ...]]) -> Iterable[tuple[str, tuple[str, int, str]]]:
    """(capture key, (wanted URL, rank, candidate URL)) for the URL and each candidate."""
    url, candidates = want
    for rank, candidate in enumerate((url, *candidates)):
        yield capture_key(candidate), (url, rank, candidate)


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
    candidate, or send its candidates to HTTP, or fail it."""

    def __init__(self, config: ImagesConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, Iterable[tuple[int, str, Optional[CapturedImage]]]]) -> Iterable:
        url, offers = element
        by_rank: dict[int, tuple[str, Optional[CapturedImage]]] = {}
        for rank, candidate, image in offers:
            if rank not in by_rank or (image is not None and by_rank[rank][1] is None):
                by_rank[rank] = (candidate, image)
        started = time.perf_counter()
        offered = [(c, im) for _, (c, im) in sorted(by_rank.items()) if im is not None]
        hit = next(((c, im) for c, im in offered if not im.oversize), None)
        oversized = next(((c, im) for c, im in offered if im.oversize), None)
        if hit is not None:
            candidate, image = hit
            try:
                payload = captured_payload(image)
            except Exception as exc:  # the WARC moved or changed since it was read
                result = ImageResult(
                    url=url,
                    status=STATUS_FAILED,
                    reason=type(exc).__name__,
                    kind=KIND_ERROR,
                    detail=str(exc)[:200],
                    source=SOURCE_WARC,
                    provenance=image.provenance,
                )
            else:
                result = normalize_image(
                    url, payload, self._config, source=SOURCE_WARC, content_type=image.content_type, provenance=image.provenance
                )
                if candidate != url:
                    result = dataclasses.replace(result, source_url=candidate)
        elif oversized is not None:
            # The WARC's copy decides: fetching it again would download as much.
            _, image = oversized
            result = ImageResult(
                url=url,
                status=STATUS_FAILED,
                reason=reasons.IMAGE_CAPTURE_TOO_LARGE,
                value=float(image.oversize),
                threshold=float(image.limit),
                detail=f"captured in the input WARCs ({image.oversize} bytes), over read.max_image_bytes",
                source=SOURCE_WARC,
                provenance=image.provenance,
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
        _count_result(self._counters, result)
        self._counters.micros(started)
        yield result


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
        """Each URL's candidates in order of preference, one round of requests per
        rank, until one is retrieved; a refusal that would hold for every candidate
        (robots.txt, opt-out, a refused address) ends the search."""
        started = time.perf_counter()
        before = self._fetcher.requests
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
        self._counters.inc("http.requests", self._fetcher.requests - before)
        for url, _ in wants:
            item = done[url]
            if item.ok:
                result = normalize_image(url, item.payload, self._config, source=SOURCE_HTTP, content_type=item.content_type)
                if item.url != url:
                    result = dataclasses.replace(result, source_url=item.url)
            else:
                result = ImageResult(
                    url=url,
                    status=STATUS_FAILED,
                    reason=item.reason,
                    kind=item.kind,
                    value=item.value,
                    threshold=item.threshold,
                    detail=item.detail,
                    source=SOURCE_HTTP,
                )
            _count_result(self._counters, result)
            yield result
        self._counters.micros(started)


# Refusals that another candidate URL of the same image would meet as well.
_FINAL_REFUSALS = frozenset({reasons.IMAGE_ROBOTS_DISALLOWED, reasons.IMAGE_OPTED_OUT, reasons.IMAGE_REFUSED_ADDRESS})


class ResolveImages(beam.PTransform):
    """(wanted URLs with their candidates, captured images) -> one ImageResult per
    wanted URL (with its bytes when retrieved): the capture of its most preferred
    captured candidate, matched by capture key (SURT, ``url_forms.capture_key``);
    else its candidates over HTTP in order of preference; else not captured."""

    def __init__(self, config: ImagesConfig, label: Optional[str] = None):
        super().__init__(label)
        self._config = config

    def expand(self, pcolls: tuple[beam.PCollection, beam.PCollection]) -> beam.PCollection:
        wants, captured = pcolls
        resolved = (
            {
                "want": wants | "CandidateKeys" >> beam.FlatMap(_candidate_keys),
                "captured": captured | "KeyCaptures" >> beam.Map(lambda image: (capture_key(image.url), image)),
            }
            | "GroupByCaptureKey" >> beam.CoGroupByKey()
            | "MatchCaptures" >> beam.ParDo(MatchCapturesFn())
            | "GroupByUrl" >> beam.GroupByKey()
            | "ResolveSources" >> beam.ParDo(ResolveSourcesFn(self._config)).with_outputs(FETCH, main="results")
        )
        fetched = (
            resolved[FETCH]
            | "SpreadFetches" >> beam.Reshuffle()
            | "BatchUrls" >> beam.BatchElements(min_batch_size=1, max_batch_size=self._config.batch_size)
            | "Fetch" >> beam.ParDo(FetchImagesFn(self._config))
        )
        return (resolved["results"], fetched) | "AllResults" >> beam.Flatten()


class RetrieveImages(beam.PTransform):
    """(documents, captured images) -> ImageResult per distinct canonical image URL
    the documents reference, each retrieved once (with its bytes when retrieved).
    With ``wants=True`` the first input is already ``image_wants`` pairs."""

    def __init__(self, config: ImagesConfig, wants: bool = False, label: Optional[str] = None):
        super().__init__(label)
        self._config = config
        self._wants = wants

    def expand(self, pcolls: tuple[beam.PCollection, beam.PCollection]) -> beam.PCollection:
        docs, captured = pcolls
        wants = docs if self._wants else docs | "ImageWants" >> beam.FlatMap(image_wants)
        return (wants, captured) | "Resolve" >> ResolveImages(self._config)


# ---------------------------------------------------------------------------------
# 2-4. Corpus-wide dedup
# ---------------------------------------------------------------------------------


def nearest_in_band(element: tuple[str, Iterable[tuple[str, str]]], max_distance: int) -> Iterable[tuple[str, str]]:
    """(image_id, smallest image_id within ``max_distance`` in this band group).

    Members with the same hash are collapsed first, so a band full of identical
    hashes (blank images) costs one comparison per distinct hash pair."""
    _, members = element
    smallest: dict[str, str] = {}
    ids_by_hash: dict[str, list[str]] = {}
    for image_id, phash in members:
        ids_by_hash.setdefault(phash, []).append(image_id)
        if phash not in smallest or image_id < smallest[phash]:
            smallest[phash] = image_id
    hashes = sorted(smallest)
    for phash in hashes:
        best = min(smallest[other] for other in hashes if rules.hamming(phash, other) <= max_distance)
        for image_id in ids_by_hash[phash]:
            yield image_id, best


class ClusterByPhash(beam.PTransform):
    """``(image_id, phash)`` -> ``(image_id, representative image_id)``: the smallest
    id within Hamming distance ``max_distance``, found through band keys (pigeonhole:
    k+1 bands, so any pair within k shares a band), never all pairs. A negative
    distance makes each image its own representative."""

    def __init__(self, max_distance: int, label: Optional[str] = None):
        super().__init__(label)
        self._k = max_distance

    def expand(self, hashes: beam.PCollection) -> beam.PCollection:
        k = self._k
        if k < 0:
            return hashes | "OwnCluster" >> beam.Map(lambda h: (h[0], h[0]))
        return (
            hashes
            | "BandKeys" >> beam.FlatMap(lambda h: [(key, h) for key in lsh.band_keys(lsh.hex_bits(h[1]), k + 1)])
            | "GroupByBand" >> beam.GroupByKey()
            | "NearestInBand" >> beam.FlatMap(nearest_in_band, k)
            | "SmallestNeighbour" >> beam.CombinePerKey(min)
        )


class ClusterUsageFn(beam.DoFn):
    """Per cluster: count distinct documents; emit each member's ``Cluster`` and,
    when too frequent, one image decision per member."""

    def __init__(self, config: ImagesConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, Iterable[tuple[str, str]]]) -> Iterable:
        rep, entries = element
        members, docs = set(), set()
        for kind, value in entries:
            (members if kind == "m" else docs).add(value)
        cluster = Cluster(rep, len(docs))
        limit = self._config.max_doc_frequency
        for image_id in sorted(members):
            yield image_id, cluster
            if limit and cluster.doc_frequency > limit:
                self._counters.inc(f"image.reason.{reasons.IMAGE_TOO_FREQUENT}")
                result = ImageResult(url="", status=STATUS_REJECTED, image_id=image_id)
                yield beam.pvalue.TaggedOutput(
                    DECISIONS,
                    image_decision(
                        result,
                        reasons.IMAGE_TOO_FREQUENT,
                        cluster.doc_frequency,
                        limit,
                        detail=f"used by {cluster.doc_frequency} documents (cluster {rep})",
                    ),
                )


def _link_urls(element: tuple[str, dict]) -> Iterable:
    """Join of one URL's documents with its result: links keyed by image_id (or by
    the URL for images not retrieved), and (image_id, doc_id) usage pairs."""
    url, joined = element
    results = list(joined["result"])
    if not results:
        return
    result = results[0]
    retrieved = result.status == STATUS_OK
    key = result.image_id if retrieved else "\x00" + url
    for doc_key, doc_id in sorted(set(joined["refs"])):
        yield key, (doc_key, url, result)
        if retrieved:
            yield beam.pvalue.TaggedOutput(USAGE, (result.image_id, doc_id))


def _links_by_doc(element: tuple[str, dict]) -> Iterable[tuple[str, Link]]:
    _, joined = element
    clusters = list(joined["cluster"])
    cluster = clusters[0] if clusters else None
    for doc_key, url, result in joined["links"]:
        yield doc_key, Link(url, result, cluster)


# ---------------------------------------------------------------------------------
# 5. Documents
# ---------------------------------------------------------------------------------


def document_filters(config: ImagesConfig) -> list:
    filters = [
        partial(rules.image_count, min_images=config.min_images, max_images=config.max_images, no_images=config.no_images)
    ]
    if config.min_words_per_image > 0:
        filters.append(partial(rules.words_per_image, min_words_per_image=config.min_words_per_image))
    return filters


class _Uncounted:
    """Stands in for StageCounters where a pass must count nothing (the staged
    pass that only computes image-set keys: the counting pass comes after it)."""

    def inc(self, name: str, n: int = 1) -> None:
        pass

    kept = rejected = error = micros = lambda self, *args: None


# The verdicts of a staged unit: each document's links, then its image-set verdict.
_LINK = "link"
_SET = "set"


class ApplyImagesFn(beam.DoFn):
    """Fills each document's image nodes from its links, removes those that did not
    make it, and applies the document rules. Kept documents leave as
    (image set key or None, document).

    The input is ``(key, {"doc": [...], "links": [...]})`` from a CoGroupByKey, or,
    staged, one unit with its verdicts (``staging.VerdictsByUnit``): the unit's
    documents are read again from staging. ``set_keys_only`` (staged): output only
    ``(image set key, (survivor rank, key))`` of kept documents with an image set,
    and count nothing; the second pass (``set_keys_only`` off) then also takes each
    document's image-set verdict and outputs final documents."""

    def __init__(self, config: ImagesConfig, staged: bool = False, set_keys_only: bool = False):
        self._config = config
        self._filters = document_filters(config)
        self._staged = staged
        self._set_keys_only = set_keys_only

    def setup(self) -> None:
        self._counters = _Uncounted() if self._set_keys_only else StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        key, joined = element
        if not self._staged:
            links = {link.url: link for link in joined["links"]}
            for doc in joined["doc"]:
                yield from self._timed(doc, key, links, None)
            return
        links_by_key: dict[str, dict[str, Link]] = {}
        sets: dict[str, tuple] = {}
        for doc_key, (kind, value) in joined["verdicts"]:
            if kind == _LINK:
                links_by_key.setdefault(doc_key, {})[value.url] = value
            else:
                sets[doc_key] = value
        for doc in read_unit(key):
            doc_key = record_key(doc)
            yield from self._timed(doc, unit_key(key, doc_key), links_by_key.get(doc_key, {}), sets.get(doc_key))

    def _timed(self, doc: Document, key: str, links: dict[str, Link], set_verdict: Optional[tuple]) -> Iterable:
        started = time.perf_counter()
        try:
            for out in self._apply(doc, links):
                if isinstance(out, beam.pvalue.TaggedOutput):
                    if not self._set_keys_only:
                        yield out
                    continue
                set_key, kept = out
                if self._set_keys_only:
                    if set_key is not None:
                        yield set_key, (survivor_rank(kept), key)
                elif self._staged:  # final documents: no (set key, document) pairs
                    if set_key is None:
                        yield kept
                    else:
                        yield from _decide_set(self._counters, kept, key, set_verdict)
                else:
                    yield set_key, kept
        except Exception as exc:  # a bug or bad input: one error row, never a crash
            if not self._set_keys_only:
                log.debug("images failed on %s", doc.doc_id, exc_info=True)
                self._counters.error(exc)
                yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
        self._counters.micros(started)

    def _apply(self, doc: Document, links: dict[str, Link]) -> Iterable:
        config = self._config
        nodes = []
        seen: dict[str, tuple[str, str]] = {}  # cluster rep -> (image_id, phash) of the node kept
        referenced = removed = 0
        for node in doc.nodes:
            if not isinstance(node, ImageNode):
                nodes.append(node)
                continue
            referenced += 1
            link = links.get(canonical_url(node.src)) if node.src else None
            result = link.result if link else None
            if result is None or result.status in (STATUS_FAILED, STATUS_REJECTED):
                removed += 1  # the image's own decision row says why
                continue
            if result.status == STATUS_SKIPPED:
                nodes.append(node)
                continue
            cluster = link.cluster or Cluster(result.image_id, 1)
            if config.max_doc_frequency and cluster.doc_frequency > config.max_doc_frequency:
                removed += 1
                continue
            first = seen.get(cluster.rep)
            if first is not None:
                removed += 1
                distance = rules.hamming(first[1], result.phash)
                self._counters.inc(f"image.reason.{reasons.IMAGE_DUPLICATE_IN_DOCUMENT}")
                yield beam.pvalue.TaggedOutput(
                    REJECTED,
                    image_decision(
                        result,
                        reasons.IMAGE_DUPLICATE_IN_DOCUMENT,
                        distance,
                        max(config.phash_max_distance, 0),
                        detail=f"document {doc.doc_id}: same as image {first[0]} (pHash distance {distance})",
                    ),
                )
                continue
            seen[cluster.rep] = (result.image_id, result.phash)
            nodes.append(
                dataclasses.replace(
                    node, image_id=result.image_id, width=result.width, height=result.height, phash=result.phash
                )
            )
        doc = dataclasses.replace(doc, nodes=tuple(nodes)).with_signals(
            {SIGNAL_REFERENCED: referenced, SIGNAL_REMOVED: removed}
        )
        doc, verdict = apply_filters(doc, self._filters)
        if verdict is not None:
            self._counters.rejected(verdict.reason)
            yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict))
            return
        set_key = None
        if config.dedup_image_sets and seen:
            set_key = hashlib.sha256("\n".join(sorted(seen)).encode()).hexdigest()
        if set_key is None:
            self._counters.kept()
        yield set_key, doc


# ---------------------------------------------------------------------------------
# 6. Documents with the same image set
# ---------------------------------------------------------------------------------


def survivor_rank(doc: Document) -> tuple[str, str]:
    """Which document with an image set survives: the earliest capture (ISO 8601
    WARC dates sort by time; a missing or invalid date sorts last), then doc_id."""
    date = doc.provenance.date
    valid = len(date) >= 10 and date[:4].isdigit() and date[4] == "-"
    return (date if valid else "~", doc.doc_id)


def _resolve_sets(element: tuple[str, Iterable[tuple[tuple[str, str], str]]]) -> Iterable[tuple[str, tuple[str, str, int]]]:
    """Members ``(survivor rank, key)`` of one image set -> ``(key, (survivor doc_id,
    survivor key, set size))``; the key breaks ties between copies of one record."""
    _, members = element
    members = sorted(members)
    (_, survivor_id), survivor_key = members[0]
    for _, key in members:
        yield key, (survivor_id, survivor_key, len(members))


def _decide_set(counters, doc: Document, key: str, verdict: tuple) -> Iterable:
    survivor_id, survivor_key, size = verdict
    doc = doc.with_signals({SIGNAL_SET_GROUP: float(size)})
    if survivor_key == key:
        counters.kept()
        yield doc
    else:
        counters.rejected(reasons.IMAGE_DOCUMENT_DUPLICATE_SET)
        verdict = reject(reasons.IMAGE_DOCUMENT_DUPLICATE_SET, 1.0, 1.0, detail=f"survivor={survivor_id}")
        yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict))


class JoinSetVerdictFn(beam.DoFn):
    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        key, joined = element
        verdicts = list(joined["verdict"])
        for doc in joined["doc"]:
            started = time.perf_counter()
            yield from _decide_set(self._counters, doc, key, verdicts[0])
            self._counters.micros(started)


# ---------------------------------------------------------------------------------
# The images table
# ---------------------------------------------------------------------------------


def _provenance_columns(prov: Optional[Provenance]) -> dict:
    prov = prov or Provenance(warc_file="")
    return {
        "warc_file": prov.warc_file,
        "warc_record_id": prov.record_id,
        "warc_date": prov.date,
        "warc_offset": prov.offset,
        "warc_length": prov.length,
    }


assert [f.name for f in PROVENANCE_FIELDS] == list(_provenance_columns(None))


def failed_image_row(result: ImageResult) -> dict:
    """The images-table row of a URL whose image was not retrieved or was refused."""
    return {
        "image_id": result.image_id,
        "urls": [result.url],
        "status": result.status,
        "reason": result.reason,
        "detail": result.detail,
        "source": result.source,
        "content_type": result.content_type,
        "format": result.format,
        "width": result.width,
        "height": result.height,
        "num_bytes": result.num_bytes,
        "phash": result.phash,
        "duplicate_of": None,
        "doc_frequency": None,
        "bytes": None,
        "path": None,
        **_provenance_columns(result.provenance),
    }


class StashBytesFn(beam.DoFn):
    """Retrieved images -> ``(image_id, (result without bytes, blob))``: the bytes are
    appended to a file of this bundle under ``directory`` and the blob ``(path,
    offset, length)`` points at them, so that image bytes never cross a shuffle."""

    def __init__(self, directory: str):
        self._directory = directory

    def start_bundle(self) -> None:
        self._fh = None
        self._path = ""
        self._offset = 0

    def process(self, result: ImageResult) -> Iterable:
        if self._fh is None:
            join = FileSystems.join if "://" in self._directory else posixpath.join
            self._path = join(self._directory, f"blobs-{uuid.uuid4().hex}.bin")
            self._fh = FileSystems.create(self._path)
            self._offset = 0
        data = result.data or b""
        self._fh.write(data)
        blob = (self._path, self._offset, len(data))
        self._offset += len(data)
        yield result.image_id, (result.summary(), blob)

    def finish_bundle(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_blob(blob: tuple[str, int, int]) -> bytes:
    path, offset, length = blob
    with FileSystems.open(path) as fh:
        fh.seek(offset)
        return fh.read(length)


def _with_bytes(result: ImageResult, blob: Optional[tuple[str, int, int]]) -> ImageResult:
    return result if blob is None else dataclasses.replace(result, data=read_blob(blob))


class ImageRowFn(beam.DoFn):
    """One images-table row per retrieved image_id, with all its URLs; the bytes go
    in the row or, with ``images.store: path``, to ``image_dir/<id[:2]>/<id>.<ext>``.
    The results come with their bytes, or as ``(result, blob)`` (``StashBytesFn``)."""

    def __init__(self, config: ImagesConfig):
        self._config = config

    def process(self, element: tuple[str, dict]) -> Iterable[dict]:
        image_id, joined = element
        entries = [e if isinstance(e, tuple) else (e, None) for e in joined["image"]]
        entries.sort(key=lambda e: (e[0].source != SOURCE_WARC, e[0].url))
        results = [result for result, _ in entries]
        if not results:
            return
        clusters = list(joined["cluster"])
        cluster = clusters[0] if clusters else Cluster(image_id, 0)
        first = _with_bytes(*entries[0])
        limit = self._config.max_doc_frequency
        too_frequent = bool(limit) and cluster.doc_frequency > limit
        row = failed_image_row(first)
        row.update(
            urls=sorted({u for r in results for u in (r.url, r.source_url) if u}),
            status=STATUS_REJECTED if too_frequent else STATUS_OK,
            reason=reasons.IMAGE_TOO_FREQUENT if too_frequent else "",
            duplicate_of=cluster.rep if cluster.rep != image_id else None,
            doc_frequency=cluster.doc_frequency,
        )
        if not too_frequent:
            if self._config.store == "bytes":
                row["bytes"] = first.data
            else:
                row["path"] = self._store(image_id, first)
        yield row

    def _store(self, image_id: str, result: ImageResult) -> str:
        directory = self._config.image_dir
        join = FileSystems.join if "://" in directory else posixpath.join
        path = join(directory, image_id[:2], f"{image_id}.{extension(result.format)}")
        if not FileSystems.exists(path):
            with FileSystems.create(path) as fh:
                fh.write(result.data)
        return path


# ---------------------------------------------------------------------------------
# The stage
# ---------------------------------------------------------------------------------


def _decision_rows(result: ImageResult) -> Iterable[Decision]:
    if result.status in (STATUS_FAILED, STATUS_REJECTED):
        yield image_decision(result)


def _links_by_unit(keyed: tuple[str, Link]) -> tuple[str, tuple[str, tuple[str, Link]]]:
    unit, key = split_unit_key(keyed[0])
    return unit, (key, (_LINK, keyed[1]))


def _sets_by_unit(keyed: tuple[str, tuple]) -> tuple[str, tuple[str, tuple[str, tuple]]]:
    unit, key = split_unit_key(keyed[0])
    return unit, (key, (_SET, keyed[1]))


class CurateImages(beam.PTransform):
    """The `images` stage: ``docs | CurateImages(config, captured)`` -> ``ImagesResult``.

    ``captured`` is the read stage's ``CapturedImage`` PCollection (``ReadResult.images``:
    pointers to the records, or payloads); without it every image comes over HTTP (or
    fails as not captured).

    Staged (``units`` given, from ``staging.ReadStaged``): the input is its
    ``(unit, document)`` pairs and ``blob_dir`` a staging directory. Only URLs,
    links, hashes and ids cross shuffles: each unit's documents are read again from
    staging, once to compute their image-set keys and once to apply every verdict;
    retrieved bytes go to blob files in ``blob_dir`` and are read back for the
    images table."""

    def __init__(
        self,
        config: ImagesConfig,
        captured: Optional[beam.PCollection] = None,
        label: Optional[str] = None,
        units: Optional[beam.PCollection] = None,
        blob_dir: Optional[str] = None,
    ):
        super().__init__(label)
        self._config = config
        self._captured = captured
        self._units = units
        self._blob_dir = blob_dir

    def expand(self, docs: beam.PCollection) -> ImagesResult:
        config = self._config
        staged = self._units is not None
        captured = self._captured
        if captured is None:
            captured = docs.pipeline | "NoCapturedImages" >> beam.Create([])
        refs = docs | "ImageRefs" >> beam.FlatMap(staged_image_refs if staged else image_refs)
        wants = docs | "ImageWants" >> beam.FlatMap(staged_image_wants if staged else image_wants)
        results = (wants, captured) | "Retrieve" >> RetrieveImages(config, wants=True)
        summaries = results | "DropBytes" >> beam.Map(lambda r: r.summary())
        retrieval_decisions = summaries | "RetrievalDecisions" >> beam.FlatMap(_decision_rows)
        failed_rows = (
            summaries
            | "NotRetrieved" >> beam.Filter(lambda r: r.status != STATUS_OK)
            | "FailedRows" >> beam.Map(failed_image_row)
        )

        # Documents per URL joined with the URL's result.
        linked = (
            {"refs": refs, "result": summaries | "SummaryByUrl" >> beam.Map(lambda r: (r.url, r))}
            | "JoinUrls" >> beam.CoGroupByKey()
            | "LinkUrls" >> beam.FlatMap(_link_urls).with_outputs(USAGE, main="links")
        )

        # Clusters of near-duplicates, then their document frequency.
        hashes = (
            summaries
            | "Retrieved" >> beam.Filter(lambda r: r.status == STATUS_OK)
            | "HashById" >> beam.Map(lambda r: (r.image_id, r.phash))
            | "DistinctIds" >> beam.Distinct()
        )
        reps = hashes | "NearDuplicates" >> ClusterByPhash(config.phash_max_distance)
        members = reps | "Members" >> beam.Map(lambda r: (r[1], ("m", r[0])))
        cluster_docs = (
            {"rep": reps, "usage": linked[USAGE]}
            | "JoinUsage" >> beam.CoGroupByKey()
            | "DocsByCluster" >> beam.FlatMap(
                lambda e: [(rep, ("d", doc_id)) for rep in e[1]["rep"] for doc_id in e[1]["usage"]]
            )
        )
        clustered = (
            (members, cluster_docs)
            | "ClusterEntries" >> beam.Flatten()
            | "GroupByCluster" >> beam.GroupByKey()
            | "ClusterUsage" >> beam.ParDo(ClusterUsageFn(config)).with_outputs(DECISIONS, main="clusters")
        )
        clusters = clustered["clusters"]

        # The images table: one row per image_id (exact dedup), plus failed URLs.
        retrieved = results | "RetrievedWithBytes" >> beam.Filter(lambda r: r.status == STATUS_OK)
        if self._blob_dir:
            by_id = retrieved | "StashBytes" >> beam.ParDo(StashBytesFn(self._blob_dir))
        else:
            by_id = retrieved | "BytesById" >> beam.Map(lambda r: (r.image_id, r))
        image_rows = (
            {"image": by_id, "cluster": clusters}
            | "JoinImageRows" >> beam.CoGroupByKey()
            | "ImageRows" >> beam.ParDo(ImageRowFn(config))
        )
        rows = (image_rows, failed_rows) | "AllImageRows" >> beam.Flatten()

        # Documents joined with their links, then the document rules.
        doc_links = (
            {"links": linked["links"], "cluster": clusters}
            | "JoinClusters" >> beam.CoGroupByKey()
            | "LinksByDoc" >> beam.FlatMap(_links_by_doc)
        )
        if staged:
            return self._staged(docs, doc_links, retrieval_decisions, clustered[DECISIONS], rows)
        applied = (
            {"doc": docs | "DocsById" >> beam.Map(lambda d: (record_key(d), d)), "links": doc_links}
            | "JoinDocs" >> beam.CoGroupByKey()
            | "ApplyImages" >> beam.ParDo(ApplyImagesFn(config)).with_outputs(REJECTED, ERRORS, main=KEPT)
        )
        kept_pairs = applied[KEPT]
        no_set = kept_pairs | "NoImageSet" >> beam.Filter(lambda p: p[0] is None) | "Unpair" >> beam.Values()
        with_set = kept_pairs | "WithImageSet" >> beam.Filter(lambda p: p[0] is not None)
        set_verdicts = (
            with_set
            | "SetKeys" >> beam.Map(lambda p: (p[0], (survivor_rank(p[1]), record_key(p[1]))))
            | "GroupBySet" >> beam.GroupByKey()
            | "ResolveSets" >> beam.FlatMap(_resolve_sets)
        )
        set_outputs = (
            {"doc": with_set | "SetDocsById" >> beam.Map(lambda p: (record_key(p[1]), p[1])), "verdict": set_verdicts}
            | "JoinSetVerdicts" >> beam.CoGroupByKey()
            | "DecideSets" >> beam.ParDo(JoinSetVerdictFn()).with_outputs(REJECTED, main=KEPT)
        )
        kept = (no_set, set_outputs[KEPT]) | "Kept" >> beam.Flatten()
        rejected = (
            retrieval_decisions,
            clustered[DECISIONS],
            applied[REJECTED],
            set_outputs[REJECTED],
        ) | "Rejected" >> beam.Flatten()
        return ImagesResult(kept, rejected, applied[ERRORS], rows)

    def _staged(self, docs, doc_links, retrieval_decisions, frequent_decisions, rows) -> ImagesResult:
        config = self._config
        units = self._units
        links = doc_links | "LinksByUnit" >> beam.Map(_links_by_unit)
        set_verdicts = (
            (units, links)
            | "JoinLinksForSets" >> VerdictsByUnit()
            | "SetKeys" >> beam.ParDo(ApplyImagesFn(config, staged=True, set_keys_only=True))
            | "GroupBySet" >> beam.GroupByKey()
            | "ResolveSets" >> beam.FlatMap(_resolve_sets)
            | "SetsByUnit" >> beam.Map(_sets_by_unit)
        )
        verdicts = (links, set_verdicts) | "AllVerdicts" >> beam.Flatten()
        applied = (
            (units, verdicts)
            | "JoinVerdicts" >> VerdictsByUnit()
            | "ApplyImages" >> beam.ParDo(ApplyImagesFn(config, staged=True)).with_outputs(REJECTED, ERRORS, main=KEPT)
        )
        rejected = (retrieval_decisions, frequent_decisions, applied[REJECTED]) | "Rejected" >> beam.Flatten()
        return ImagesResult(applied[KEPT], rejected, applied[ERRORS], rows)
