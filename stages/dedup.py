"""Stage `dedup`: duplicates across the whole run, found by Beam shuffles.

Documents travel once: ``FingerprintDocumentsFn`` turns each into a light
``Fingerprint`` (``stages/engines/dedup_fingerprints.py``: ids, keys, a MinHash
signature); every dedup step shuffles only fingerprints and ids, and its verdicts
(``Note``s, keyed by a key unique to each record: ``staging_files.record_key``) join back
to the documents at the end (``stages/dedup_verdicts.py``): by one ``CoGroupByKey``,
or, in a staged run, unit by unit as the documents are read again from staging
(``staging``), so that no document crosses a shuffle. The steps run in order of
cost, each on the survivors of the one before:

1. URL (``dedup.same_url``): group by normalised URL (filters/url_forms.py: dedup_key); the
   latest capture survives.
2. Exact text (``dedup.exact_text``): group by sha256 of the folded main text.
3. Near duplicates (``dedup.near_duplicate``), MinHash-LSH (filters/minhash.py,
   ``stages/near_duplicates.py``): band buckets linked as stars, optionally verified
   by the true Jaccard, clustered as the connected components of the edges
   (``stages/connected_components.py``: the large-star/small-star algorithm of
   Kiveris et al. 2014, each step a GroupByKey by node). Chains (A~B, B~C) end in
   one cluster.

Survivors: every node id is ``<rank>|<doc_id>`` (then NUL and the record key; in a
staged run then NUL and a 12-digit token of the record's staging unit) where the rank string sorts in
the configured survivor order (``DedupConfig.survivor``, then the smallest doc_id, then
the record's file and offset: the same record read twice keeps one copy), so
the smallest id of a group or component is its survivor and the result depends on
the set of documents only, not on worker count or bundle order. Each dropped
document's decision row names its survivor in ``detail`` (``survivor=<doc_id>``) and
gives the similarity in ``value`` (1.0 for URL and exact matches; for near
duplicates the Jaccard to the survivor: MinHash estimate, or the true Jaccard of the
shingle sets when ``verify`` is on) and the threshold in ``threshold``.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Iterable, Optional

import apache_beam as beam

from mmcurate.filters import minhash, reasons
from mmcurate.stages.config import DedupConfig
from mmcurate.stages.dedup_verdicts import DecideDuplicatesFn, notes_by_unit
from mmcurate.stages.engines.dedup_fingerprints import (
    EXACT_GROUP_SIZE,
    node_key,
    FAILED,
    SHINGLES,
    URL_GROUP_SIZE,
    Fingerprint,
    Note,
    describe_lsh,
    fingerprint_document,
    node_doc_id,
    unit_token,
    url_node,
)
from mmcurate.stages.near_duplicates import DedupNearDuplicates, payload
from mmcurate.stages.results import ERRORS, KEPT, REJECTED, StageCounters, StageResult, error_decision
from mmcurate.stages.engines.staging_files import record_key, unit_key
from mmcurate.stages.staging import VerdictsByUnit, read_unit

log = logging.getLogger(__name__)

STAGE = "dedup"

_PRINTS = "prints"
_NOTES = "notes"


# -- fingerprints ---------------------------------------------------------------------


class FingerprintDocumentsFn(beam.DoFn):
    """Document -> (key, document) on the main output, its Fingerprint on
    ``prints``, or an error row.

    ``staged``: the input is ``(unit, document)`` pairs read from staging; keys
    start with the unit, no document is output (the staged pass reads them again),
    and a failed document also leaves a note that makes that pass skip it."""

    def __init__(self, config: DedupConfig, staged: bool = False):
        self._config = config
        self._staged = staged

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)
        self._hasher = minhash.MinHasher(self._config.num_perm, self._config.seed)

    def process(self, element) -> Iterable:
        started = time.perf_counter()
        if self._staged:
            unit, doc = element
            key = unit_key(unit_token(unit), record_key(doc))
        else:
            doc, key = element, record_key(element)
        try:
            doc, fingerprint = fingerprint_document(doc, key, self._config, self._hasher)
        except Exception as exc:
            self._counters.error(exc)
            yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
            if self._staged:
                yield beam.pvalue.TaggedOutput(_NOTES, (key, Note(FAILED)))
        else:
            if not self._staged:
                yield key, doc
            elif SHINGLES in doc.signals:  # the staged pass reads the document without it
                yield beam.pvalue.TaggedOutput(_NOTES, (key, Note(signals=((SHINGLES, doc.signals[SHINGLES]),))))
            yield beam.pvalue.TaggedOutput(_PRINTS, fingerprint)
        self._counters.micros(started)


class StagedPayloadsFn(beam.DoFn):
    """``(unit token, {"unit": [unit], "verdicts": [(record key, None), ...]})`` -> ``(node,
    payload)`` of the unit's documents that are ends of some band edge, fingerprinted
    again from staging: a staged run shuffles no document's shingle hashes, only the
    edge ends' are looked up, and a unit none of whose documents is an edge end is
    not read. A worker holds one unit's edge ends at a time."""

    def __init__(self, config: DedupConfig):
        self._config = config

    def setup(self) -> None:
        self._hasher = minhash.MinHasher(self._config.num_perm, self._config.seed)

    def process(self, joined: tuple[str, dict]) -> Iterable[tuple[str, bytes]]:
        token, groups = joined
        ends = frozenset(key for key, _ in groups["verdicts"])
        if not ends:
            return
        for unit in groups["unit"]:
            for doc in read_unit(unit):
                key = record_key(doc)
                if key in ends:  # a document whose fingerprint failed is on no edge
                    _, fingerprint = fingerprint_document(doc, unit_key(token, key), self._config, self._hasher)
                    yield from payload(fingerprint, self._config.verify)


class StagedPayloads(beam.PTransform):
    """Band edges ``(hi, lo)`` -> ``(node, payload)`` for every edge end, read from the
    staged units again (``StagedPayloadsFn``): the distinct ends are grouped with their
    unit by its token (``staging.VerdictsByUnit``), not handed to every worker whole."""

    def __init__(self, units: beam.PCollection, config: DedupConfig, label: str | None = None):
        super().__init__(label)
        self._units = units
        self._config = config

    def expand(self, edges):
        ends = (
            edges
            | "EndKeys" >> beam.FlatMap(lambda edge: (node_key(edge[0]), node_key(edge[1])))
            | "DistinctEnds" >> beam.Distinct()
            | "EndsByUnit" >> beam.Map(lambda key: notes_by_unit((key, None)))
        )
        joined = (self._units, ends) | "JoinEnds" >> VerdictsByUnit(key=unit_token)
        return joined | "ReadPayloads" >> beam.ParDo(StagedPayloadsFn(self._config))


# -- URL and exact text: one group per key ---------------------------------------------


def _without_hashes(p: Fingerprint) -> Fingerprint:
    return p._replace(hashes=None)


def _split_by_key(p: Fingerprint, field: str) -> Iterable:
    key = getattr(p, field)
    if key:
        yield key, p
    else:
        yield beam.pvalue.TaggedOutput("nokey", p)


def _content_node(p: Fingerprint) -> str:
    return p.node


def _resolve_group(element, order: Callable[[Fingerprint], str], reason: str, size_signal: str) -> Iterable:
    _, members = element
    members = sorted(members, key=order)
    survivor = members[0]
    yield survivor
    if len(members) == 1:
        return
    yield beam.pvalue.TaggedOutput("notes", (node_key(survivor.node), Note(signals=((size_signal, float(len(members))),))))
    for p in members[1:]:
        # The keys match exactly: similarity 1.
        note = Note(reason, 1.0, 1.0, f"survivor={node_doc_id(survivor.node)}")
        yield beam.pvalue.TaggedOutput("notes", (node_key(p.node), note))


class DedupByKey(beam.PTransform):
    """Fingerprints grouped by one of their keys; the member first in ``order`` (a
    node id of it) survives. Returns (surviving fingerprints, notes)."""

    def __init__(
        self, key_field: str, order: Callable[[Fingerprint], str], reason: str, size_signal: str, label: str | None = None
    ):
        super().__init__(label)
        self._key_field, self._order = key_field, order
        self._reason, self._size_signal = reason, size_signal

    def expand(self, prints):
        split = prints | "SplitByKey" >> beam.FlatMap(_split_by_key, self._key_field).with_outputs("nokey", main="keyed")
        resolved = (
            split.keyed
            | "GroupByKey" >> beam.GroupByKey()
            | "Resolve"
            >> beam.FlatMap(_resolve_group, self._order, self._reason, self._size_signal).with_outputs(
                "notes", main="survivors"
            )
        )
        survivors = (resolved.survivors, split.nokey) | "Survivors" >> beam.Flatten()
        return survivors, resolved.notes


# -- the stage -------------------------------------------------------------------------


class DedupDocuments(beam.PTransform):
    """The `dedup` stage: URL, exact-text and near-duplicate dedup, as config turns
    them on, each on the survivors of the one before.

    ``docs | DedupDocuments(config)`` joins the verdicts back to the documents by a
    CoGroupByKey (the documents cross a shuffle). With ``units`` (the units of
    ``staging.ReadStaged``), the input is its ``(unit, document)`` pairs: only
    fingerprints and notes cross shuffles, and each unit's documents are read again
    from staging and matched with that unit's notes."""

    def __init__(self, config: DedupConfig, units: Optional[beam.PCollection] = None, label: str | None = None):
        super().__init__(label)
        self._config = config
        self._units = units

    def expand(self, docs: beam.PCollection) -> StageResult:
        c = self._config
        staged = self._units is not None
        if not (c.url or c.exact_text or c.near):
            rejected = docs.pipeline | "NoRejections" >> beam.Create([])
            errors = docs.pipeline | "NoErrors" >> beam.Create([])
            if staged:
                docs = docs | "Unkey" >> beam.Values()
            return StageResult(docs, rejected, errors)
        if c.near:
            log.info("dedup: %s", describe_lsh(c))
        fingerprinted = docs | "Fingerprint" >> beam.ParDo(FingerprintDocumentsFn(c, staged)).with_outputs(
            _PRINTS, _NOTES, ERRORS, main="docs"
        )
        prints = payloads = fingerprinted[_PRINTS]
        if c.near and c.verify and (c.url or c.exact_text or staged):
            # The URL and exact-text shuffles need no shingle hashes; the near step
            # looks them up for its edge ends only (near_duplicates.py), in a staged
            # run from staging again (StagedPayloads), so no shuffle carries them.
            prints = prints | "WithoutHashes" >> beam.Map(_without_hashes)
        notes = [fingerprinted[_NOTES]]
        if c.url:
            prints, url_notes = prints | "Url" >> DedupByKey("url_key", url_node, reasons.DEDUP_SAME_URL, URL_GROUP_SIZE)
            notes.append(url_notes)
        if c.exact_text:
            prints, exact_notes = prints | "ExactText" >> DedupByKey(
                "text_key", _content_node, reasons.DEDUP_EXACT_TEXT, EXACT_GROUP_SIZE
            )
            notes.append(exact_notes)
        if c.near:
            if staged:
                lookup = lambda edges: edges | "StagedPayloads" >> StagedPayloads(self._units, c)  # noqa: E731
                near = DedupNearDuplicates(c, lookup=lookup)
            else:
                near = DedupNearDuplicates(c, payloads=payloads)
            notes.append(prints | "NearDuplicates" >> near)
        all_notes = notes | "AllNotes" >> beam.Flatten()
        if staged:
            by_unit = all_notes | "NotesByUnit" >> beam.Map(notes_by_unit)
            joined = (self._units, by_unit) | "JoinUnits" >> VerdictsByUnit(key=unit_token)
        else:
            joined = {"doc": fingerprinted.docs, "note": all_notes} | "JoinNotes" >> beam.CoGroupByKey()
        outputs = joined | "Decide" >> beam.ParDo(DecideDuplicatesFn(staged)).with_outputs(REJECTED, ERRORS, main=KEPT)
        errors = (fingerprinted[ERRORS], outputs[ERRORS]) | "Errors" >> beam.Flatten()
        return StageResult(outputs[KEPT], outputs[REJECTED], errors)
