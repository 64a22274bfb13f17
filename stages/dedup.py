"""Stage `dedup`: duplicates across the whole run, found by Beam shuffles.

Documents travel once: ``FingerprintDocumentsFn`` turns each into a light
``Fingerprint`` (ids, keys, a MinHash signature); every dedup step shuffles only
fingerprints and ids, and its verdicts (``Note``s, keyed by a key unique to each
record: ``staging.record_key``) join back to the documents at the end: by one
``CoGroupByKey``, or, in a staged run, unit by unit as the documents are read again
from staging (``staging``), so that no document crosses a shuffle. The steps run in order of cost, each
on the survivors of the one before:

1. URL (``dedup.same_url``): group by normalised URL (filters/url_forms.py: dedup_key); the
   latest capture survives.
2. Exact text (``dedup.exact_text``): group by sha256 of the folded main text.
3. Near duplicates (``dedup.near_duplicate``), MinHash-LSH (filters/minhash.py):
   group by band key; each band bucket links its members to its smallest member
   (a star, so a bucket of k documents gives k-1 edges, not k²/2 pairs); optionally
   each edge is checked with the true Jaccard; the clusters are the connected
   components of the edge list, computed by the alternating large-star/small-star
   algorithm of Kiveris et al. 2014 ("Connected Components in MapReduce and
   Beyond"), each step a GroupByKey by node, so no worker holds more than one
   node's neighbours. Chains (A~B, B~C) end in one cluster.

Survivors: every node id is ``<rank>|<doc_id>`` (then NUL and the record key) where the rank string sorts in
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

import hashlib
import logging
import math
import re
import struct
import time
from typing import Iterable, NamedTuple, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from mmcurate.filters import lsh, minhash, reasons
from mmcurate.filters.text import count_words, fold_for_hash
from mmcurate.filters.url_forms import dedup_key
from mmcurate.filters.verdict import reject
from mmcurate.stages.config import DedupConfig
from mmcurate.schemas import Document
from mmcurate.stages.results import (
    ERRORS,
    KEPT,
    REJECTED,
    StageCounters,
    StageResult,
    error_decision,
    rejection_decision,
)
from mmcurate.stages.staging import VerdictsByUnit, by_key, read_unit, record_key, split_unit_key, unit_key

log = logging.getLogger(__name__)

STAGE = "dedup"

# Signals: on survivors, the size of their group (absent when the document had no
# duplicate); on every fingerprinted document, the number of distinct shingles.
URL_GROUP_SIZE = "dedup.url_group_size"
EXACT_GROUP_SIZE = "dedup.exact_group_size"
NEAR_CLUSTER_SIZE = "dedup.near_cluster_size"
SHINGLES = "dedup.shingles"

# Counters (namespace dedup) besides kept/rejected/errors.
COUNTER_BAND_EDGES = "near.band_edges"  # bucket-to-center links, before removing repeats
COUNTER_PAIRS_BELOW_VERIFY = "near.pairs_below_verify_threshold"
COUNTER_RESIDUAL_EDGES = "near.residual_union_find_edges"

_PRINTS = "prints"
_NOTES = "notes"
_SEP = "|"
_KEY_SEP = "\x00"


class Fingerprint(NamedTuple):
    """What the dedup shuffles carry for one document."""

    doc_id: str
    key: str  # the join key of its notes: unique per record (staging.record_key)
    node: str  # <content rank>|doc_id NUL key: sorts in survivor order
    url_node: str  # <latest-first rank>|doc_id NUL key
    url_key: str  # normalised URL, "" when there is none
    text_key: str  # sha256 of the folded text, "" when there is no text
    sig: Optional[bytes]  # MinHash signature (uint32 little-endian), None without shingles
    hashes: Optional[bytes]  # distinct shingle hashes, only when verifying


class Note(NamedTuple):
    """A dedup step's word on one document: a rejection (``reason`` set) or signals."""

    reason: str = ""
    value: Optional[float] = None
    threshold: Optional[float] = None
    detail: str = ""
    signals: tuple[tuple[str, float], ...] = ()


# A fingerprint whose document failed: the staged pass skips it (its error row is out).
_FAILED = "\x00failed"


def make_node(rank: str, doc_id: str, key: str) -> str:
    # NUL before the key sorts below every character, so the order of
    # <rank>|<doc_id> is kept and the key only breaks ties between equal doc_ids.
    return f"{rank}{_SEP}{doc_id}{_KEY_SEP}{key}"


def node_doc_id(node: str) -> str:
    return node.split(_SEP, 1)[1].split(_KEY_SEP, 1)[0]


def node_key(node: str) -> str:
    return node.split(_KEY_SEP, 1)[1]


# -- survivor ranks ------------------------------------------------------------------

_DIGITS = re.compile(r"\D")
_MISSING = "1"
_PRESENT = "0"


def _date_digits(date: str) -> Optional[str]:
    """YYYYMMDDhhmmss of an ISO 8601 WARC date (UTC), None when it is not one."""
    if len(date) < 10 or not date[:4].isdigit() or date[4] != "-":
        return None
    digits = _DIGITS.sub("", date[:19])
    if len(digits) < 8:
        return None
    return digits.ljust(14, "0")[:14]


def _descending_float(x: float) -> str:
    """A fixed-width string that sorts the larger float first."""
    (bits,) = struct.unpack(">Q", struct.pack(">d", x))
    ascending = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
    return f"{0xFFFFFFFFFFFFFFFF - ascending:016x}"


def rank_string(doc: Document, criteria: Sequence[str], quality_signal: str = "") -> str:
    """A fixed-width string whose order is the survivor order of ``criteria``; a
    document without the figure a criterion needs comes after those with it."""
    parts = []
    for criterion in criteria:
        if criterion == "quality":
            q = doc.signals.get(quality_signal)
            ok = q is not None and not math.isnan(q)
            parts.append(_PRESENT + _descending_float(q) if ok else _MISSING + "0" * 16)
        elif criterion in ("earliest", "latest"):
            d = _date_digits(doc.provenance.date)
            if d is None:
                parts.append(_MISSING + "0" * 14)
            else:
                parts.append(_PRESENT + (d if criterion == "earliest" else f"{99999999999999 - int(d):014d}"))
        elif criterion == "longest":
            parts.append(f"{999999999999 - min(count_words(doc.text), 999999999999):012d}")
        else:
            raise ValueError(f"unknown survivor criterion {criterion!r}")
    return "".join(parts)


def text_key(doc: Document) -> str:
    """sha256 of the folded main text; "" for a document without text."""
    folded = fold_for_hash(doc.text)
    if not folded:
        return ""
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()


def describe_lsh(config: DedupConfig) -> str:
    return (
        f"MinHash {config.num_perm} permutations, {config.bands} bands x {config.rows} rows: "
        f"pairs become candidates with probability 1/2 at Jaccard "
        f"{minhash.lsh_threshold(config.bands, config.rows):.3f}"
        f" ((1/b)^(1/r) = {(1 / config.bands) ** (1 / config.rows):.3f})"
        + (f"; verified at true Jaccard >= {config.verify_threshold}" if config.verify else "")
    )


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
            key = unit_key(unit, record_key(doc))
        else:
            doc, key = element, record_key(element)
        try:
            doc, fingerprint = self._fingerprint(doc, key)
        except Exception as exc:
            self._counters.error(exc)
            yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
            if self._staged:
                yield beam.pvalue.TaggedOutput(_NOTES, (key, Note(_FAILED)))
        else:
            if not self._staged:
                yield key, doc
            elif SHINGLES in doc.signals:  # the staged pass reads the document without it
                yield beam.pvalue.TaggedOutput(_NOTES, (key, Note(signals=((SHINGLES, doc.signals[SHINGLES]),))))
            yield beam.pvalue.TaggedOutput(_PRINTS, fingerprint)
        self._counters.micros(started)

    def _fingerprint(self, doc: Document, key: str) -> tuple[Document, Fingerprint]:
        c = self._config
        rank = rank_string(doc, c.survivor, c.quality_signal)
        sig = hashes = None
        if c.near:
            text = doc.text
            shingles = minhash.shingles(text, c.word_ngram, c.char_ngram, c.unspaced_cutoff)
            doc = doc.with_signals({SHINGLES: float(len(shingles))})
            if shingles:
                hv = minhash.shingle_hashes(shingles, c.shingle_hash)
                sig = minhash.to_bytes(self._hasher.signature(hv))
                if c.verify:
                    hashes = minhash.to_bytes(np.unique(hv))
        url_key = dedup_key(doc.url, c.url_strip_params, c.url_fold_scheme) if c.url else ""
        return doc, Fingerprint(
            doc_id=doc.doc_id,
            key=key,
            node=make_node(rank, doc.doc_id, key),
            url_node=make_node(rank_string(doc, ("latest",)), doc.doc_id, key),
            url_key=url_key,
            text_key=text_key(doc) if c.exact_text else "",
            sig=sig,
            hashes=hashes,
        )


# -- URL and exact text: one group per key ---------------------------------------------


def _split_by_key(p: Fingerprint, field: str) -> Iterable:
    key = getattr(p, field)
    if key:
        yield key, p
    else:
        yield beam.pvalue.TaggedOutput("nokey", p)


def _resolve_group(element, node_field: str, reason: str, size_signal: str) -> Iterable:
    _, members = element
    members = sorted(members, key=lambda p: getattr(p, node_field))
    survivor = members[0]
    yield survivor
    if len(members) == 1:
        return
    yield beam.pvalue.TaggedOutput("notes", (survivor.key, Note(signals=((size_signal, float(len(members))),))))
    for p in members[1:]:
        # The keys match exactly: similarity 1.
        note = Note(reason, 1.0, 1.0, f"survivor={survivor.doc_id}")
        yield beam.pvalue.TaggedOutput("notes", (p.key, note))


class DedupByKey(beam.PTransform):
    """Fingerprints grouped by one of their keys; the smallest node of each group
    survives. Returns (surviving fingerprints, notes)."""

    def __init__(self, key_field: str, node_field: str, reason: str, size_signal: str, label: str | None = None):
        super().__init__(label)
        self._key_field, self._node_field = key_field, node_field
        self._reason, self._size_signal = reason, size_signal

    def expand(self, prints):
        split = prints | "SplitByKey" >> beam.FlatMap(_split_by_key, self._key_field).with_outputs("nokey", main="keyed")
        resolved = (
            split.keyed
            | "GroupByKey" >> beam.GroupByKey()
            | "Resolve"
            >> beam.FlatMap(_resolve_group, self._node_field, self._reason, self._size_signal).with_outputs(
                "notes", main="survivors"
            )
        )
        survivors = (resolved.survivors, split.nokey) | "Survivors" >> beam.Flatten()
        return survivors, resolved.notes


# -- near duplicates ---------------------------------------------------------------------


def _band_entries(p: Fingerprint, bands: int, rows: int) -> Iterable[tuple[str, str]]:
    for key in lsh.band_keys(minhash.from_bytes(p.sig), bands, rows):
        yield key, p.node


class StarEdgesFn(beam.DoFn):
    """A band bucket's members, each linked to the bucket's smallest member."""

    def setup(self) -> None:
        self._edges = Metrics.counter(STAGE, COUNTER_BAND_EDGES)

    def process(self, element) -> Iterable[tuple[str, str]]:
        _, nodes = element
        nodes = sorted(set(nodes))
        center = nodes[0]
        for node in nodes[1:]:
            self._edges.inc()
            yield node, center


def _both_directions(edge: tuple[str, str]) -> Iterable[tuple[str, str]]:
    hi, lo = edge
    yield hi, lo
    yield lo, hi


def large_star(element: tuple[str, Iterable[str]]) -> Iterable[tuple[str, str]]:
    """Kiveris et al.'s large-star step at node u: every neighbour larger than u
    links to the smallest node of u's closed neighbourhood."""
    u, neighbours = element
    neighbours = set(neighbours)
    m = min(min(neighbours), u)
    for v in neighbours:
        if v > u:
            yield v, m


def small_star(element: tuple[str, Iterable[str]]) -> Iterable[tuple[str, str]]:
    """The small-star step at node u, given u's smaller neighbours: u and each of
    them link to the smallest of them."""
    u, smaller = element
    group = set(smaller)
    group.add(u)
    m = min(group)
    for v in group:
        if v != m:
            yield v, m


def label_node(element: tuple[str, Iterable[str]]) -> Iterable:
    """(node, label) when the edges form stars around component minima; a node with
    a smaller neighbour and more than one neighbour means not converged yet."""
    u, neighbours = element
    neighbours = set(neighbours)
    m = min(neighbours)
    if m < u:
        if len(neighbours) > 1:
            yield beam.pvalue.TaggedOutput("unsettled", 1)
        yield u, m
    else:
        yield u, u


def union_find_labels(element: tuple[str, Iterable[tuple[str, str]]]) -> Iterable[tuple[str, str]]:
    """Component minimum of every node of an edge list, in one worker (the residual
    of components that did not converge in the configured rounds)."""
    _, edges = element
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    count = 0
    for a, b in edges:
        count += 1
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = (ra, rb) if ra < rb else (rb, ra)
            parent[hi] = lo
        parent.setdefault(a, a)
        parent.setdefault(b, b)
    Metrics.counter(STAGE, COUNTER_RESIDUAL_EDGES).inc(count)
    log.warning(
        "dedup: connected components did not converge in the configured rounds; "
        "finished %d edges by union-find in one worker (raise dedup.cc_rounds)",
        count,
    )
    for node in sorted(parent):
        yield node, find(node)


def _if_converged(label, unsettled: int):
    if unsettled == 0:
        yield label


def _residual(edge, unsettled: int):
    if unsettled:
        yield "residual", edge


class ConnectedComponents(beam.PTransform):
    """Undirected edges (hi, lo) -> (node, smallest node of its component) for every
    node of the edge list: ``rounds`` rounds of large-star + small-star, each a
    GroupByKey by node; anything not converged after them by union-find."""

    def __init__(self, rounds: int, label: str | None = None):
        super().__init__(label)
        self._rounds = rounds

    def expand(self, edges):
        for i in range(self._rounds):
            edges = (
                edges
                | f"LargeStarPairs{i}" >> beam.FlatMap(_both_directions)
                | f"LargeStarGroup{i}" >> beam.GroupByKey()
                | f"LargeStar{i}" >> beam.FlatMap(large_star)
                | f"SmallStarGroup{i}" >> beam.GroupByKey()
                | f"SmallStar{i}" >> beam.FlatMap(small_star)
            )
        checked = (
            edges
            | "CheckPairs" >> beam.FlatMap(_both_directions)
            | "CheckGroup" >> beam.GroupByKey()
            | "Label" >> beam.FlatMap(label_node).with_outputs("unsettled", main="labels")
        )
        unsettled = beam.pvalue.AsSingleton(checked.unsettled | "CountUnsettled" >> beam.CombineGlobally(sum))
        converged = checked.labels | "IfConverged" >> beam.FlatMap(_if_converged, unsettled)
        residual = (
            edges
            | "IfNotConverged" >> beam.FlatMap(_residual, unsettled)
            | "GroupResidual" >> beam.GroupByKey()
            | "UnionFind" >> beam.FlatMap(union_find_labels)
        )
        return (converged, residual) | "Labels" >> beam.Flatten()


def _payload(p: Fingerprint, verify: bool) -> bytes:
    return p.hashes if verify else p.sig


def _half_edges(element, verify: bool) -> Iterable:
    """At node hi: each edge (hi, lo) re-keyed by lo, carrying hi's payload."""
    hi, joined = element
    prints = list(joined["print"])
    if not prints:
        return
    payload = _payload(prints[0], verify)
    for lo in joined["edge"]:
        yield lo, (hi, payload)


class VerifyEdgeFn(beam.DoFn):
    """At node lo: keeps the edges whose true Jaccard reaches the threshold."""

    def __init__(self, threshold: float):
        self._threshold = threshold

    def setup(self) -> None:
        self._below = Metrics.counter(STAGE, COUNTER_PAIRS_BELOW_VERIFY)

    def process(self, element) -> Iterable[tuple[str, str]]:
        lo, joined = element
        prints = list(joined["print"])
        if not prints:
            return
        mine = minhash.from_bytes(prints[0].hashes)
        for hi, payload in joined["half"]:
            if minhash.jaccard(mine, minhash.from_bytes(payload)) >= self._threshold:
                yield hi, lo
            else:
                self._below.inc()


def _survivor_fan_out(element, verify: bool) -> Iterable:
    """At a component's label (its survivor): the survivor's cluster-size note, and
    its payload sent to every other member."""
    label, joined = element
    prints = list(joined["print"])
    losers = joined["loser"]
    payload = _payload(prints[0], verify) if prints else None
    size = 1
    for loser in losers:
        size += 1
        yield loser, (label, payload)
    if size > 1:
        note = Note(signals=((NEAR_CLUSTER_SIZE, float(size)),))
        yield beam.pvalue.TaggedOutput("notes", (node_key(label), note))


def _judge(element, verify: bool, threshold: float) -> Iterable:
    """At a dropped member: the rejection naming the survivor, with the Jaccard."""
    node, joined = element
    prints = list(joined["print"])
    for label, payload in joined["survivor"]:
        mine = _payload(prints[0], verify)
        a, b = minhash.from_bytes(mine), minhash.from_bytes(payload)
        value = minhash.jaccard(a, b) if verify else minhash.estimate_jaccard(a, b)
        kind = "true" if verify else "minhash_estimate"
        detail = f"survivor={node_doc_id(label)} jaccard={kind}"
        yield node_key(node), Note(reasons.DEDUP_NEAR_DUPLICATE, round(value, 4), threshold, detail)


class DedupNearDuplicates(beam.PTransform):
    """Fingerprints -> notes: near-duplicate clusters by MinHash-LSH and connected
    components; the smallest node of each cluster survives."""

    def __init__(self, config: DedupConfig, label: str | None = None):
        super().__init__(label)
        self._config = config

    def expand(self, prints):
        c = self._config
        by_node = prints | "KeyByNode" >> beam.FlatMap(lambda p: [(p.node, p)] if p.sig is not None else [])
        edges = (
            by_node
            | "BandKeys" >> beam.FlatMap(lambda kv: _band_entries(kv[1], c.bands, c.rows))
            | "GroupByBand" >> beam.GroupByKey()
            | "StarEdges" >> beam.ParDo(StarEdgesFn())
            | "DistinctEdges" >> beam.Distinct()
        )
        threshold = minhash.lsh_threshold(c.bands, c.rows)
        if c.verify:
            threshold = c.verify_threshold
            half = {"print": by_node, "edge": edges} | "JoinEdgeHi" >> beam.CoGroupByKey()
            half = half | "HalfEdges" >> beam.FlatMap(_half_edges, True)
            edges = (
                {"print": by_node, "half": half}
                | "JoinEdgeLo" >> beam.CoGroupByKey()
                | "VerifyJaccard" >> beam.ParDo(VerifyEdgeFn(c.verify_threshold))
            )
        labels = edges | "Components" >> ConnectedComponents(c.cc_rounds)
        losers = labels | "Losers" >> beam.FlatMap(lambda nl: [(nl[1], nl[0])] if nl[0] != nl[1] else [])
        fanned = (
            {"print": by_node, "loser": losers}
            | "JoinSurvivor" >> beam.CoGroupByKey()
            | "FanOutSurvivor" >> beam.FlatMap(_survivor_fan_out, c.verify).with_outputs("notes", main="to_members")
        )
        rejections = (
            {"print": by_node, "survivor": fanned.to_members}
            | "JoinMember" >> beam.CoGroupByKey()
            | "Judge" >> beam.FlatMap(_judge, c.verify, threshold)
        )
        return (fanned.notes, rejections) | "NearNotes" >> beam.Flatten()


# -- the stage -------------------------------------------------------------------------


def _sorted_notes(notes: Iterable[Note]) -> list[Note]:
    return sorted(notes, key=lambda n: (n.reason, n.detail, n.signals))


class DecideDuplicatesFn(beam.DoFn):
    """Joins each document with its notes: kept with the signals, or one rejection row.

    The input is ``(key, {"doc": [...], "note": [...]})`` from a CoGroupByKey, or,
    staged, ``(unit, {"unit": ..., "verdicts": [(record key, note), ...]})``: the
    unit's documents are read again from staging and matched with their notes."""

    def __init__(self, staged: bool = False):
        self._staged = staged

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        key, joined = element
        if not self._staged:
            notes = _sorted_notes(joined["note"])
            for doc in joined["doc"]:
                yield from self._timed(doc, notes)
            return
        notes_by_key = by_key(joined["verdicts"])
        for doc in read_unit(key):
            notes = _sorted_notes(notes_by_key.get(record_key(doc), ()))
            if notes and notes[0].reason == _FAILED:
                continue  # its error row came from the fingerprint step
            yield from self._timed(doc, notes)

    def _timed(self, doc: Document, notes: list[Note]) -> Iterable:
        started = time.perf_counter()
        try:
            yield from self._decide(doc, notes)
        except Exception as exc:
            self._counters.error(exc)
            yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
        self._counters.micros(started)

    def _decide(self, doc: Document, notes: list[Note]) -> Iterable:
        signals = {name: value for note in notes for name, value in note.signals}
        doc = doc.with_signals(signals)
        rejections = [n for n in notes if n.reason]
        if not rejections:
            self._counters.kept()
            yield doc
            return
        note = rejections[0]
        self._counters.rejected(note.reason)
        verdict = reject(note.reason, note.value, note.threshold, detail=note.detail)
        yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict))


def _by_unit(keyed_note: tuple[str, Note]) -> tuple[str, tuple[str, Note]]:
    unit, key = split_unit_key(keyed_note[0])
    return unit, (key, keyed_note[1])


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
        prints = fingerprinted[_PRINTS]
        notes = [fingerprinted[_NOTES]]
        if c.url:
            prints, url_notes = prints | "Url" >> DedupByKey("url_key", "url_node", reasons.DEDUP_SAME_URL, URL_GROUP_SIZE)
            notes.append(url_notes)
        if c.exact_text:
            prints, exact_notes = prints | "ExactText" >> DedupByKey(
                "text_key", "node", reasons.DEDUP_EXACT_TEXT, EXACT_GROUP_SIZE
            )
            notes.append(exact_notes)
        if c.near:
            notes.append(prints | "NearDuplicates" >> DedupNearDuplicates(c))
        all_notes = notes | "AllNotes" >> beam.Flatten()
        if staged:
            joined = (self._units, all_notes | "NotesByUnit" >> beam.Map(_by_unit)) | "JoinUnits" >> VerdictsByUnit()
        else:
            joined = {"doc": fingerprinted.docs, "note": all_notes} | "JoinNotes" >> beam.CoGroupByKey()
        outputs = joined | "Decide" >> beam.ParDo(DecideDuplicatesFn(staged)).with_outputs(REJECTED, ERRORS, main=KEPT)
        errors = (fingerprinted[ERRORS], outputs[ERRORS]) | "Errors" >> beam.Flatten()
        return StageResult(outputs[KEPT], outputs[REJECTED], errors)
