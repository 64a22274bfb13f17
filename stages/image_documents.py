"""The images stage's verdicts on documents: ``ApplyImageVerdicts`` fills each
document's image nodes from its links (image_id, width, height, pHash), removes the
nodes whose image failed, was refused, is too frequent or repeats a cluster already
in the document, applies the document rules (image count, words per image, no
image left), and rejects documents whose set of image clusters another document
has (the earliest capture survives, ``engines.phash_clusters.survivor_rank``).

A link crosses its shuffles as a plain tuple (``Link.wire``) of what the verdict
needs, not as the URL's ``ImageResult``: Beam's default coder pickles a dataclass
or NamedTuple whole (about 840 bytes a link, with the result's provenance and
class names) but writes a tuple of strings and integers field by field (about 280).
The in-memory DirectRunner holds every link of the corpus in its join buffers, so
the links' size is most of what the images phase grows by. The one verdict that
needs the whole result, an image repeated in a document, leaves ``ApplyImagesFn``
as a request keyed by URL and meets the URL's result in one more join
(``DuplicateRows``): such rows are few.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from functools import partial
from typing import Iterable, NamedTuple, Optional

import apache_beam as beam

from mmcurate.filters import images as rules
from mmcurate.filters import reasons
from mmcurate.filters.verdict import reject
from mmcurate.schemas import Decision, Document, ImageNode
from mmcurate.stages.config import ImagesConfig
from mmcurate.schemas.rows import STATUS_FAILED, STATUS_REJECTED, STATUS_SKIPPED
from mmcurate.stages.engines.image_result import STAGE, ImageResult, image_decision, reason_counter
from mmcurate.stages.engines.phash_clusters import Cluster, resolve_set, survivor_rank, too_frequent
from mmcurate.stages.results import ERRORS, KEPT, REJECTED, StageCounters, apply_filters, error_decision, rejection_decision
from mmcurate.stages.engines.staging_files import record_key, split_unit_key, unit_key
from mmcurate.stages.staging import VerdictsByUnit, read_unit

log = logging.getLogger(__name__)

SIGNAL_REFERENCED = "images.referenced"
SIGNAL_REMOVED = "images.removed"
SIGNAL_SET_GROUP = "images.set_group_size"

# The verdicts of a staged unit: each document's links, then its image-set verdict.
_LINK = "link"
_SET = "set"


class Link(NamedTuple):
    """One document's view of one of its image URLs: what became of the URL
    (``ImageResult.status``, and for an image retrieved its id, size and pHash) and
    the image's cluster (None: not clustered)."""

    url: str
    status: str
    image_id: Optional[str]
    width: Optional[int]
    height: Optional[int]
    phash: Optional[str]
    cluster: Optional[Cluster]

    @classmethod
    def of(cls, url: str, result: ImageResult, cluster: Optional[Cluster]) -> "Link":
        return cls(url, result.status, result.image_id, result.width, result.height, result.phash, cluster)

    def wire(self) -> tuple:
        """The link as a plain tuple, what crosses a shuffle (see the module's doc)."""
        return Link.wire_in(self, self.cluster)

    @staticmethod
    def wire_in(wire: tuple, cluster: Optional[Cluster]) -> tuple:
        """A link's wire tuple with its image's cluster set."""
        return (*wire[:_CLUSTER], None if cluster is None else (cluster.rep, cluster.doc_frequency))

    @classmethod
    def from_wire(cls, wire: tuple) -> "Link":
        cluster = wire[_CLUSTER]
        return cls(*wire[:_CLUSTER], None if cluster is None else Cluster(*cluster))


_CLUSTER = Link._fields.index("cluster")  # the last field: the wire tuple holds it as (rep, doc_frequency)


# Output tag of ApplyImagesFn: (URL, (value, threshold, detail)) of an image repeated
# in a document, whose decision row DuplicateRows writes from the URL's result.
DUPLICATES = "duplicates"


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
            links = {link.url: link for link in map(Link.from_wire, joined["links"])}
            for doc in joined["doc"]:
                yield from self._timed(doc, key, links, None)
            return
        links_by_key: dict[str, dict[str, Link]] = {}
        sets: dict[str, tuple] = {}
        for doc_key, (kind, value) in joined["verdicts"]:
            if kind == _LINK:
                link = Link.from_wire(value)
                links_by_key.setdefault(doc_key, {})[link.url] = link
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
            link = links.get(node.src) if node.src else None
            if link is None or link.status in (STATUS_FAILED, STATUS_REJECTED):
                removed += 1  # the image's own decision row says why
                continue
            if link.status == STATUS_SKIPPED:
                nodes.append(node)
                continue
            cluster = link.cluster or Cluster(link.image_id, 1)
            if too_frequent(cluster, config.max_doc_frequency):
                removed += 1
                continue
            first = seen.get(cluster.rep)
            if first is not None:
                removed += 1
                distance = rules.hamming(first[1], link.phash)
                self._counters.inc(reason_counter(reasons.IMAGE_DUPLICATE_IN_DOCUMENT))
                detail = f"document {doc.doc_id}: same as image {first[0]} (pHash distance {distance})"
                yield beam.pvalue.TaggedOutput(
                    DUPLICATES, (link.url, (distance, max(config.phash_max_distance, 0), detail))
                )
                continue
            seen[cluster.rep] = (link.image_id, link.phash)
            nodes.append(
                dataclasses.replace(node, image_id=link.image_id, width=link.width, height=link.height, phash=link.phash)
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


class Verdicts(NamedTuple):
    kept: beam.PCollection  # Document
    rejected: beam.PCollection  # Decision: pages, and images repeated in a document
    errors: beam.PCollection  # Decision


def _keyed_doc(doc: Document) -> tuple[str, Document]:
    return record_key(doc), doc


def _set_member(pair: tuple[str, Document]) -> tuple[str, tuple[tuple[str, str], str]]:
    set_key, doc = pair
    return set_key, (survivor_rank(doc), record_key(doc))


def _keyed_pair_doc(pair: tuple[str, Document]) -> tuple[str, Document]:
    return record_key(pair[1]), pair[1]


def _links_by_unit(keyed: tuple[str, Link]) -> tuple[str, tuple[str, tuple[str, Link]]]:
    unit, key = split_unit_key(keyed[0])
    return unit, (key, (_LINK, keyed[1]))


def _sets_by_unit(keyed: tuple[str, tuple]) -> tuple[str, tuple[str, tuple[str, tuple]]]:
    unit, key = split_unit_key(keyed[0])
    return unit, (key, (_SET, keyed[1]))


class ApplyImageVerdicts(beam.PTransform):
    """``(docs, doc_links, results) | ApplyImageVerdicts(config)`` -> ``Verdicts``.
    ``doc_links`` are ``(record key, Link.wire())``, ``results`` each URL's
    ``(URL, ImageResult)`` without bytes (for the rows of images repeated in a
    document); staged (``units`` given), ``docs`` is unused and each unit's documents
    are read again from staging, once for their image-set keys and once to apply
    every verdict."""

    def __init__(self, config: ImagesConfig, units: Optional[beam.PCollection] = None, label: Optional[str] = None):
        super().__init__(label)
        self._config = config
        self._units = units

    def expand(self, pcolls: tuple[beam.PCollection, beam.PCollection, beam.PCollection]) -> Verdicts:
        docs, doc_links, results = pcolls
        if self._units is not None:
            return self._staged(doc_links, results)
        applied = (
            {"doc": docs | "DocsById" >> beam.Map(_keyed_doc), "links": doc_links}
            | "JoinDocs" >> beam.CoGroupByKey()
            | "ApplyImages"
            >> beam.ParDo(ApplyImagesFn(self._config)).with_outputs(REJECTED, ERRORS, DUPLICATES, main=KEPT)
        )
        kept_pairs = applied[KEPT]
        no_set = kept_pairs | "NoImageSet" >> beam.Filter(lambda p: p[0] is None) | "Unpair" >> beam.Values()
        with_set = kept_pairs | "WithImageSet" >> beam.Filter(lambda p: p[0] is not None)
        set_verdicts = (
            with_set
            | "SetKeys" >> beam.Map(_set_member)
            | "GroupBySet" >> beam.GroupByKey()
            | "ResolveSets" >> beam.FlatMap(resolve_set)
        )
        decided = (
            {"doc": with_set | "SetDocsById" >> beam.Map(_keyed_pair_doc), "verdict": set_verdicts}
            | "JoinSetVerdicts" >> beam.CoGroupByKey()
            | "DecideSets" >> beam.ParDo(JoinSetVerdictFn()).with_outputs(REJECTED, main=KEPT)
        )
        kept = (no_set, decided[KEPT]) | "Kept" >> beam.Flatten()
        repeated = (applied[DUPLICATES], results) | "DuplicateRows" >> DuplicateRows()
        rejected = (applied[REJECTED], decided[REJECTED], repeated) | "Rejected" >> beam.Flatten()
        return Verdicts(kept, rejected, applied[ERRORS])

    def _staged(self, doc_links: beam.PCollection, results: beam.PCollection) -> Verdicts:
        config, units = self._config, self._units
        links = doc_links | "LinksByUnit" >> beam.Map(_links_by_unit)
        set_verdicts = (
            (units, links)
            | "JoinLinksForSets" >> VerdictsByUnit()
            | "SetKeys" >> beam.ParDo(ApplyImagesFn(config, staged=True, set_keys_only=True))
            | "GroupBySet" >> beam.GroupByKey()
            | "ResolveSets" >> beam.FlatMap(resolve_set)
            | "SetsByUnit" >> beam.Map(_sets_by_unit)
        )
        verdicts = (links, set_verdicts) | "AllVerdicts" >> beam.Flatten()
        applied = (
            (units, verdicts)
            | "JoinVerdicts" >> VerdictsByUnit()
            | "ApplyImages"
            >> beam.ParDo(ApplyImagesFn(config, staged=True)).with_outputs(REJECTED, ERRORS, DUPLICATES, main=KEPT)
        )
        repeated = (applied[DUPLICATES], results) | "DuplicateRows" >> DuplicateRows()
        rejected = (applied[REJECTED], repeated) | "Rejected" >> beam.Flatten()
        return Verdicts(applied[KEPT], rejected, applied[ERRORS])


def _duplicate_rows(element: tuple[str, dict]) -> Iterable[Decision]:
    """The decision rows of one URL repeated in documents: its result (one per URL:
    every link was made from it) with each document's value, threshold and detail."""
    _, joined = element
    requests = list(joined["duplicate"])
    if not requests:
        return
    results = list(joined["result"])
    if not results:  # cannot happen: a request comes from a link made from the URL's result
        raise ValueError(f"no result for the repeated image {element[0]}")
    result = results[0]
    for value, threshold, detail in requests:
        yield image_decision(result, reasons.IMAGE_DUPLICATE_IN_DOCUMENT, value, threshold, detail=detail)


class DuplicateRows(beam.PTransform):
    """``(requests, results) | DuplicateRows()``: each ``(URL, (value, threshold,
    detail))`` request of ``ApplyImagesFn`` joined with the URL's ``ImageResult``
    -> its ``image_duplicate_in_document`` decision row."""

    def expand(self, pcolls: tuple[beam.PCollection, beam.PCollection]) -> beam.PCollection:
        requests, results = pcolls
        return (
            {"duplicate": requests, "result": results}
            | "JoinResults" >> beam.CoGroupByKey()
            | "Rows" >> beam.FlatMap(_duplicate_rows)
        )
