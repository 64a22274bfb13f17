"""Connected components of an edge PCollection, as Beam rounds.

``ConnectedComponents(rounds)`` takes undirected edges ``(hi, lo)`` and returns
``(node, label)`` for every node of the edge list, the label being the smallest node
of its component: ``rounds`` rounds of large-star + small-star
(``stages/engines/component_labelling.py``), each a GroupByKey by node; then a
check that every node is a leaf of a star around its component minimum. If some
component has not converged, the remaining edges are finished by union-find in one
worker, with a warning and the counter ``<namespace>/near.residual_union_find_edges``
(raise the rounds to avoid it).
"""

from __future__ import annotations

import logging
from typing import Iterable

import apache_beam as beam
from apache_beam.metrics import Metrics

from mmcurate.stages.engines.component_labelling import both_directions, large_star, small_star, star_label, union_find

log = logging.getLogger(__name__)

COUNTER_RESIDUAL_EDGES = "near.residual_union_find_edges"


def _label_node(element: tuple[str, Iterable[str]]) -> Iterable:
    """(node, label); one ``unsettled`` mark per node not yet a star leaf."""
    u, neighbours = element
    label, settled = star_label(u, neighbours)
    if not settled:
        yield beam.pvalue.TaggedOutput("unsettled", 1)
    yield u, label


def _union_find_labels(element: tuple[str, Iterable[tuple[str, str]]], namespace: str) -> Iterable[tuple[str, str]]:
    """The residual edges (one key, one worker) labelled by union-find."""
    _, edges = element
    labels, count = union_find(edges)
    Metrics.counter(namespace, COUNTER_RESIDUAL_EDGES).inc(count)
    log.warning(
        "%s: connected components did not converge in the configured rounds; "
        "finished %d edges by union-find in one worker (raise %s.cc_rounds)",
        namespace,
        count,
        namespace,
    )
    yield from labels.items()


def _if_converged(label, unsettled: int):
    if unsettled == 0:
        yield label


def _residual(edge, unsettled: int):
    if unsettled:
        yield "residual", edge


class ConnectedComponents(beam.PTransform):
    """Undirected edges (hi, lo) -> (node, smallest node of its component) for every
    node of the edge list: ``rounds`` rounds of large-star + small-star, each a
    GroupByKey by node; anything not converged after them by union-find. Counters
    and warnings go under ``namespace`` (the stage's)."""

    def __init__(self, rounds: int, namespace: str = "dedup", label: str | None = None):
        super().__init__(label)
        self._rounds = rounds
        self._namespace = namespace

    def expand(self, edges):
        for i in range(self._rounds):
            edges = (
                edges
                | f"LargeStarPairs{i}" >> beam.FlatMap(both_directions)
                | f"LargeStarGroup{i}" >> beam.GroupByKey()
                | f"LargeStar{i}" >> beam.FlatMap(large_star)
                | f"SmallStarGroup{i}" >> beam.GroupByKey()
                | f"SmallStar{i}" >> beam.FlatMap(small_star)
            )
        checked = (
            edges
            | "CheckPairs" >> beam.FlatMap(both_directions)
            | "CheckGroup" >> beam.GroupByKey()
            | "Label" >> beam.FlatMap(_label_node).with_outputs("unsettled", main="labels")
        )
        unsettled = beam.pvalue.AsSingleton(checked.unsettled | "CountUnsettled" >> beam.CombineGlobally(sum))
        converged = checked.labels | "IfConverged" >> beam.FlatMap(_if_converged, unsettled)
        residual = (
            edges
            | "IfNotConverged" >> beam.FlatMap(_residual, unsettled)
            | "GroupResidual" >> beam.GroupByKey()
            | "UnionFind" >> beam.FlatMap(_union_find_labels, self._namespace)
        )
        return (converged, residual) | "Labels" >> beam.Flatten()
