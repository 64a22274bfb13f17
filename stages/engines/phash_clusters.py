"""Near-duplicate clusters of images by pHash, their document frequency, and which
document of an image set survives: the plain functions behind the images stage's
shuffles (``stages.image_clusters``, ``stages.image_documents``).

Clusters: pHashes are grouped by band keys (``filters.lsh.band_keys``: by
pigeonhole, two hashes within Hamming distance k share one of k+1 bands), and each
image is mapped to the smallest image_id within distance k of it in any band. One
hop only: a chain a~b~c with a and c further apart than k maps c to b, not to a.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from mmcurate.filters import images as rules
from mmcurate.filters import lsh
from mmcurate.schemas import Document

# Entries of one cluster's group: a member image, or a document using one.
MEMBER = "m"
USED_BY = "d"


class Cluster(NamedTuple):
    rep: str  # the smallest image_id within the pHash distance (itself if none)
    doc_frequency: int


def band_entries(image: tuple[str, str], max_distance: int) -> list[tuple[str, tuple[str, str]]]:
    """``(band key, (image_id, phash))`` for each band of one image's pHash."""
    return [(key, image) for key in lsh.band_keys(lsh.hex_bits(image[1]), max_distance + 1)]


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


def cluster_entries(element: tuple[str, dict]) -> list[tuple[str, tuple[str, str]]]:
    """One image's representatives joined with the documents using it ->
    ``(representative, (USED_BY, doc_id))`` per document."""
    _, joined = element
    return [(rep, (USED_BY, doc_id)) for rep in joined["rep"] for doc_id in joined["usage"]]


def cluster_usage(rep: str, entries: Iterable[tuple[str, str]]) -> tuple[list[str], Cluster]:
    """The members (sorted) of the cluster of ``rep`` and its ``Cluster``: how many
    distinct documents use one of them."""
    members, docs = set(), set()
    for kind, value in entries:
        (members if kind == MEMBER else docs).add(value)
    return sorted(members), Cluster(rep, len(docs))


def too_frequent(cluster: Cluster, max_doc_frequency: int) -> bool:
    """Used by more documents than ``images.max_doc_frequency`` (0: no limit)."""
    return bool(max_doc_frequency) and cluster.doc_frequency > max_doc_frequency


def survivor_rank(doc: Document) -> tuple[str, str]:
    """Which document with an image set survives: the earliest capture (ISO 8601
    WARC dates sort by time; a missing or invalid date sorts last), then doc_id."""
    date = doc.provenance.date
    valid = len(date) >= 10 and date[:4].isdigit() and date[4] == "-"
    return (date if valid else "~", doc.doc_id)


def resolve_set(element: tuple[str, Iterable[tuple[tuple[str, str], str]]]) -> Iterable[tuple[str, tuple[str, str, int]]]:
    """Members ``(survivor rank, key)`` of one image set -> ``(key, (survivor doc_id,
    survivor key, set size))``; the key breaks ties between copies of one record."""
    _, members = element
    members = sorted(members)
    (_, survivor_id), survivor_key = members[0]
    for _, key in members:
        yield key, (survivor_id, survivor_key, len(members))
