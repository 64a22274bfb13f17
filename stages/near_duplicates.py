"""The `dedup` stage's near-duplicate step: MinHash-LSH clusters, as Beam shuffles.

Fingerprints (``stages/engines/dedup_fingerprints.py``) with a MinHash signature
are grouped by LSH band key (``filters.lsh``); each band bucket links its members to
its smallest member (a star, so a bucket of k documents gives k-1 edges, not k²/2
pairs); with ``verify``, each edge is checked with the true Jaccard of the shingle
sets (the two ends' shingle hashes meet by two CoGroupByKeys, one per end); the
clusters are the connected components of the edges (``ConnectedComponents``), so
chains (A~B, B~C) end in one cluster. Each cluster's smallest node survives: it
sends its signature (or shingle hashes) to every other member, which is rejected
with ``dedup.near_duplicate``, the Jaccard to the survivor as value (MinHash
estimate, or the true Jaccard when verifying) and the threshold.

Only the nodes of some band edge need a payload (signature or shingle hashes)
after the bands: the payloads (``payloads``: fingerprints with their shingle
hashes, which the steps before need not carry) meet the edge ends in one
CoGroupByKey, and the joins after it carry those nodes' payloads only. A runner
that holds shuffled data in memory (the DirectRunner) then holds every payload
once, not once per join. A staged run (``stages/dedup.py``: ``StagedPayloads``)
shuffles no payload at all: the edge ends' keys are grouped with their staged
unit by its token, and only the units that hold an edge end are read again, to
fingerprint those documents only.
"""

from __future__ import annotations

from typing import Callable, Iterable

import apache_beam as beam
from apache_beam.metrics import Metrics

from mmcurate.filters import lsh, minhash, reasons
from mmcurate.stages.config import DedupConfig
from mmcurate.stages.connected_components import ConnectedComponents
from mmcurate.stages.engines.dedup_fingerprints import NEAR_CLUSTER_SIZE, Fingerprint, Note, node_doc_id, node_key

STAGE = "dedup"

# Counters (namespace dedup).
COUNTER_BAND_EDGES = "near.band_edges"  # bucket-to-center links, before removing repeats
COUNTER_PAIRS_BELOW_VERIFY = "near.pairs_below_verify_threshold"


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


def payload(p: Fingerprint, verify: bool) -> Iterable[tuple[str, bytes]]:
    """(node, what the later steps compare: shingle hashes when verifying, else the signature)."""
    if p.sig is not None:
        yield p.node, p.hashes if verify else p.sig


def _edge_ends(edge: tuple[str, str]) -> Iterable[tuple[str, None]]:
    hi, lo = edge
    yield hi, None
    yield lo, None


def _if_on_an_edge(element) -> Iterable[tuple[str, bytes]]:
    """A node's payload when the node is an end of some edge."""
    node, joined = element
    if joined["edge"]:
        for payload in joined["print"]:
            yield node, payload
            return


def _half_edges(element) -> Iterable:
    """At node hi: each edge (hi, lo) re-keyed by lo, carrying hi's payload."""
    hi, joined = element
    prints = list(joined["print"])
    if not prints:
        return
    payload = prints[0]
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
        mine = minhash.from_bytes(prints[0])
        for hi, payload in joined["half"]:
            if minhash.jaccard(mine, minhash.from_bytes(payload)) >= self._threshold:
                yield hi, lo
            else:
                self._below.inc()


def _survivor_fan_out(element) -> Iterable:
    """At a component's label (its survivor): the survivor's cluster-size note, and
    its payload sent to every other member."""
    label, joined = element
    prints = list(joined["print"])
    losers = joined["loser"]
    payload = prints[0] if prints else None
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
        mine = prints[0]
        a, b = minhash.from_bytes(mine), minhash.from_bytes(payload)
        value = minhash.jaccard(a, b) if verify else minhash.estimate_jaccard(a, b)
        kind = "true" if verify else "minhash_estimate"
        detail = f"survivor={node_doc_id(label)} jaccard={kind}"
        yield node_key(node), Note(reasons.DEDUP_NEAR_DUPLICATE, round(value, 4), threshold, detail)


class DedupNearDuplicates(beam.PTransform):
    """Fingerprints -> notes: near-duplicate clusters by MinHash-LSH and connected
    components; the smallest node of each cluster survives. ``payloads``: the same
    documents' fingerprints with their shingle hashes when the input's were dropped
    (a superset of the input does: only edge ends are looked up); default the input.
    ``lookup``: instead, a function from the edges (a PCollection of ``(hi, lo)``)
    to ``(node, payload)`` for every edge end, which finds them without a shuffle of
    every document's payload (a staged run reads them from staging again)."""

    def __init__(
        self,
        config: DedupConfig,
        payloads: beam.PCollection | None = None,
        lookup: Callable[[beam.PCollection], beam.PCollection] | None = None,
        label: str | None = None,
    ):
        super().__init__(label)
        self._config = config
        self._payloads = payloads
        self._lookup = lookup

    def expand(self, prints):
        c = self._config
        edges = (
            prints
            | "BandKeys" >> beam.FlatMap(lambda p: _band_entries(p, c.bands, c.rows) if p.sig is not None else ())
            | "GroupByBand" >> beam.GroupByKey()
            | "StarEdges" >> beam.ParDo(StarEdgesFn())
            | "DistinctEdges" >> beam.Distinct()
        )
        # Every later join needs the payloads of edge ends only (labels, survivors and
        # members are all edge ends).
        if self._lookup is not None:
            by_node = self._lookup(edges)
        else:
            by_node = (
                {
                    "print": (prints if self._payloads is None else self._payloads)
                    | "PayloadByNode" >> beam.FlatMap(payload, c.verify),
                    "edge": edges | "EdgeEnds" >> beam.FlatMap(_edge_ends),
                }
                | "JoinEdgeEnds" >> beam.CoGroupByKey()
                | "OnAnEdge" >> beam.FlatMap(_if_on_an_edge)
            )
        threshold = minhash.lsh_threshold(c.bands, c.rows)
        if c.verify:
            threshold = c.verify_threshold
            half = {"print": by_node, "edge": edges} | "JoinEdgeHi" >> beam.CoGroupByKey()
            half = half | "HalfEdges" >> beam.FlatMap(_half_edges)
            edges = (
                {"print": by_node, "half": half}
                | "JoinEdgeLo" >> beam.CoGroupByKey()
                | "VerifyJaccard" >> beam.ParDo(VerifyEdgeFn(c.verify_threshold))
            )
        labels = edges | "Components" >> ConnectedComponents(c.cc_rounds, STAGE)
        losers = labels | "Losers" >> beam.FlatMap(lambda nl: [(nl[1], nl[0])] if nl[0] != nl[1] else [])
        fanned = (
            {"print": by_node, "loser": losers}
            | "JoinSurvivor" >> beam.CoGroupByKey()
            | "FanOutSurvivor" >> beam.FlatMap(_survivor_fan_out).with_outputs("notes", main="to_members")
        )
        rejections = (
            {"print": by_node, "survivor": fanned.to_members}
            | "JoinMember" >> beam.CoGroupByKey()
            | "Judge" >> beam.FlatMap(_judge, c.verify, threshold)
        )
        return (fanned.notes, rejections) | "NearNotes" >> beam.Flatten()
