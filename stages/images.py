"""Stage `images`: retrieve, validate and deduplicate the images documents
reference, then apply image-aware document rules.

Every step that spans the corpus is a Beam shuffle keyed by a string, and image
bytes travel only where they are needed (normalisation and the images table):

1. ``RetrieveImages`` (``stages.image_retrieval``): each distinct image URL with its
   srcset / ``<picture>`` candidates, retrieved once per run from the WARC captures
   or over HTTP, decoded and normalised: one ``ImageResult`` per URL.
2. Links: each document's URLs joined with their results.
3. ``ClusterImages`` (``stages.image_clusters``): exact dedup by ``image_id``
   (sha256 of the stored bytes), perceptual near-duplicates by pHash band keys, and
   each cluster's document frequency; a cluster used by more than
   ``max_doc_frequency`` documents (logos, icons, ads) is removed everywhere.
4. ``ImageTableRows`` (``stages.image_table``): one row per image_id with all its
   URLs, one per URL not retrieved or refused.
5. ``ApplyImageVerdicts`` (``stages.image_documents``): documents joined back by
   record key; image nodes filled or removed; the document rules; documents with
   the same image set deduplicated (the earliest capture survives).

Decision rows: pages (``subject = "page"``) for document rules and image-set
duplicates; images (``subject = "image"``) for every URL not retrieved, every image
refused, every too-frequent cluster member and every in-document duplicate. An
image that could not be retrieved or decoded (a timeout, a refused address, an
undecodable payload) is a failure: kind ``error``, its reason code the cause
(``engines.image_result.FAILURE_REASONS``); a rule's refusal is kind ``rejected``.
Image rows never count as pages: conservation holds over pages only.

Counters (namespace ``images``): pages ``kept``, ``rejected.<reason>``,
``errors.<type>``, ``micros``; images ``image.<status>``, ``image.reason.<reason>``
(rejections), ``image.errors.<reason>`` (failures), ``image.source.<warc|http>``,
``image.captured_unused``, ``http.requests``.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Optional

import apache_beam as beam

from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, Decision, Document
from mmcurate.stages.config import ImagesConfig
from mmcurate.schemas.rows import STATUS_FAILED, STATUS_REJECTED
from mmcurate.stages.engines.image_result import ImageResult, image_decision
from mmcurate.stages.image_clusters import ClusterImages
from mmcurate.stages.image_documents import ApplyImageVerdicts, Link
from mmcurate.stages.image_retrieval import RetrieveImages, image_wants
from mmcurate.stages.image_table import ImageTableRows
from mmcurate.stages.engines.staging_files import record_key, unit_key

USAGE = "usage"


class ImagesResult(NamedTuple):
    """The stage's outputs: pages kept, rejected and failed (as every filtering
    stage), plus rows of the images table. ``rejected`` and ``errors`` also carry
    the image decision rows (subject ``image``)."""

    kept: beam.PCollection  # Document
    rejected: beam.PCollection  # Decision (pages and images)
    errors: beam.PCollection  # Decision (pages and images)
    images: beam.PCollection  # ImageRow: rows of the images table


def image_refs(doc: Document, key: Optional[str] = None) -> Iterable[tuple[str, tuple[str, str]]]:
    """(URL, (key, doc_id)) for each distinct image URL of a document; the key
    (default ``staging_files.record_key``) is what its links are joined back by."""
    key = record_key(doc) if key is None else key
    for url, _ in image_wants(doc):
        yield url, (key, doc.doc_id)


def staged_image_refs(element: tuple[str, Document]) -> Iterable[tuple[str, tuple[str, str]]]:
    unit, doc = element
    return image_refs(doc, unit_key(unit, record_key(doc)))


def staged_image_wants(element: tuple[str, Document]) -> Iterable[tuple[str, tuple[str, ...]]]:
    return image_wants(element[1])


def _decision_rows(result: ImageResult) -> Iterable[Decision]:
    """The decision row of a URL whose image failed or was refused."""
    if result.status in (STATUS_FAILED, STATUS_REJECTED):
        yield image_decision(result)


def _link_urls(element: tuple[str, dict]) -> Iterable:
    """Join of one URL's documents with its result: links (without their cluster,
    as plain tuples: ``image_documents.Link.wire``) keyed by image_id (or by the URL
    for images not retrieved), and (image_id, doc_id) usage pairs."""
    url, joined = element
    results = list(joined["result"])
    if not results:
        return
    result = results[0]
    key = result.image_id if result.ok else "\x00" + url
    link = Link.of(url, result, None).wire()
    for doc_key, doc_id in sorted(set(joined["refs"])):
        yield key, (doc_key, link)
        if result.ok:
            yield beam.pvalue.TaggedOutput(USAGE, (result.image_id, doc_id))


def _links_by_doc(element: tuple[str, dict]) -> Iterable[tuple[str, tuple]]:
    """Each link of one image (or URL) with the image's cluster: (record key, ``Link.wire()``)."""
    _, joined = element
    clusters = list(joined["cluster"])
    cluster = clusters[0] if clusters else None
    for doc_key, link in joined["links"]:
        yield doc_key, Link.wire_in(link, cluster)


def _by_url(result: ImageResult) -> tuple[str, ImageResult]:
    return result.url, result


def _hash_by_id(result: ImageResult) -> Iterable[tuple[str, str]]:
    if result.ok:
        yield result.image_id, result.phash


def _is_image_row(decision: Decision, kind: str) -> bool:
    """An image decision row of this kind: failures go to ``errors``, refusals to ``rejected``."""
    return decision.kind == kind


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
        fetched_dir: Optional[str] = None,
    ):
        super().__init__(label)
        self._config = config
        self._captured = captured
        self._units = units
        self._blob_dir = blob_dir
        self._fetched_dir = fetched_dir

    def expand(self, docs: beam.PCollection) -> ImagesResult:
        config = self._config
        staged = self._units is not None
        refs = docs | "ImageRefs" >> beam.FlatMap(staged_image_refs if staged else image_refs)
        wants = docs | "ImageWants" >> beam.FlatMap(staged_image_wants if staged else image_wants)
        results = (wants, self._captured_images(docs)) | "Retrieve" >> RetrieveImages(config, fetched_dir=self._fetched_dir)
        summaries = results | "DropBytes" >> beam.Map(ImageResult.summary)
        image_decisions = summaries | "ImageDecisions" >> beam.FlatMap(_decision_rows)
        by_url = summaries | "SummaryByUrl" >> beam.Map(_by_url)
        linked = self._link(refs, by_url)
        hashes = summaries | "HashById" >> beam.FlatMap(_hash_by_id) | "DistinctIds" >> beam.Distinct()
        clustered = (hashes, linked[USAGE]) | "Clusters" >> ClusterImages(config)
        rows = (results, summaries, clustered.clusters) | "ImagesTable" >> ImageTableRows(config, self._blob_dir)
        doc_links = (
            {"links": linked["links"], "cluster": clustered.clusters}
            | "JoinClusters" >> beam.CoGroupByKey()
            | "LinksByDoc" >> beam.FlatMap(_links_by_doc)
        )
        verdicts = (docs, doc_links, by_url) | "Documents" >> ApplyImageVerdicts(config, self._units)
        all_images = (image_decisions, clustered.decisions) | "AllImageDecisions" >> beam.Flatten()
        image_failures = all_images | "ImageFailures" >> beam.Filter(_is_image_row, KIND_ERROR)
        image_rejections = all_images | "ImageRejections" >> beam.Filter(_is_image_row, KIND_REJECTED)
        rejected = (image_rejections, verdicts.rejected) | "Rejected" >> beam.Flatten()
        errors = (image_failures, verdicts.errors) | "Errors" >> beam.Flatten()
        return ImagesResult(verdicts.kept, rejected, errors, rows)

    def _captured_images(self, docs: beam.PCollection) -> beam.PCollection:
        if self._captured is not None:
            return self._captured
        return docs.pipeline | "NoCapturedImages" >> beam.Create([])

    @staticmethod
    def _link(refs: beam.PCollection, by_url: beam.PCollection):
        """Documents per URL joined with the URL's result: ``links`` and ``usage``."""
        return (
            {"refs": refs, "result": by_url}
            | "JoinUrls" >> beam.CoGroupByKey()
            | "LinkUrls" >> beam.FlatMap(_link_urls).with_outputs(USAGE, main="links")
        )
