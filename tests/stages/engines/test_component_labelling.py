"""The connected-components steps without Beam: union-find, and large-star/small-star
rounds run in memory until every node is a star leaf of its component minimum."""

import random
from collections import defaultdict

from mmcurate.stages.engines.component_labelling import both_directions, large_star, small_star, star_label, union_find


def _grouped(pairs):
    groups = defaultdict(list)
    for k, v in pairs:
        groups[k].append(v)
    return sorted(groups.items())


def _rounds(edges, rounds):
    for _ in range(rounds):
        edges = [e for item in _grouped(x for edge in edges for x in both_directions(edge)) for e in large_star(item)]
        edges = [e for item in _grouped(edges) for e in small_star(item)]
    return edges


def _graph():
    rng = random.Random(3)
    chain = [f"c{i:02d}" for i in rng.sample(range(30), 30)]
    edges = [(max(a, b), min(a, b)) for a, b in zip(chain, chain[1:])]
    edges += [("s3", "s1"), ("s2", "s1"), ("s4", "s2"), ("z1", "z0")]
    expected = {**{n: "c00" for n in chain}, "s1": "s1", "s2": "s1", "s3": "s1", "s4": "s1", "z0": "z0", "z1": "z0"}
    return edges, expected


def test_union_find_labels_every_node_with_its_component_minimum():
    edges, expected = _graph()
    labels, count = union_find(edges)
    assert labels == expected and count == len(edges)


def test_star_rounds_converge_to_the_same_labels():
    edges, expected = _graph()
    settled = _rounds(edges, 10)
    labelled = [(u, star_label(u, ns)) for u, ns in _grouped(x for e in settled for x in both_directions(e))]
    assert all(ok for _, (_, ok) in labelled)
    assert {u: label for u, (label, _) in labelled} == expected


def test_one_round_leaves_a_long_chain_unsettled():
    edges, _ = _graph()
    once = _rounds(edges, 1)
    labelled = [star_label(u, ns) for u, ns in _grouped(x for e in once for x in both_directions(e))]
    assert not all(ok for _, ok in labelled)
