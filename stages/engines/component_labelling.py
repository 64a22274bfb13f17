"""Each node's connected-component label (the component's smallest node), computed
one node at a time.

The steps of the alternating large-star/small-star algorithm of Kiveris et al. 2014
("Connected Components in MapReduce and Beyond"), each a function of one node and
its neighbours, so that a shuffle by node can run them with no worker holding more
than one node's neighbours (``stages/connected_components.py`` runs them as Beam
rounds); and union-find in one process for what is left when the rounds did not
converge. Nodes are strings; every component is labelled by its smallest node.
"""

from __future__ import annotations

from typing import Iterable


def both_directions(edge: tuple[str, str]) -> Iterable[tuple[str, str]]:
    """An undirected edge as the two directed ones, to group by either end."""
    hi, lo = edge
    yield hi, lo
    yield lo, hi


def large_star(element: tuple[str, Iterable[str]]) -> Iterable[tuple[str, str]]:
    """The large-star step at node u: every neighbour larger than u links to the
    smallest node of u's closed neighbourhood."""
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


def star_label(u: str, neighbours: Iterable[str]) -> tuple[str, bool]:
    """Node u's label when the edges form stars around the component minima: the
    smallest of u and its neighbours; ``settled`` is False when u has a smaller
    neighbour and more than one neighbour (the rounds have not converged)."""
    neighbours = set(neighbours)
    m = min(neighbours)
    if m < u:
        return m, len(neighbours) == 1
    return u, True


def union_find(edges: Iterable[tuple[str, str]]) -> tuple[dict[str, str], int]:
    """The component minimum of every node of an edge list, and the number of edges."""
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
    return {node: find(node) for node in sorted(parent)}, count
