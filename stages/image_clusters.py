"""Near-duplicate images across the corpus: ``ClusterByPhash`` maps each image to
its cluster's representative, ``ClusterImages`` adds each cluster's document
frequency and refuses clusters used by too many documents (logos, icons, ads).

The plain functions behind them are in ``engines.phash_clusters``.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Optional

import apache_beam as beam

from mmcurate.filters import reasons
from mmcurate.stages.config import ImagesConfig
from mmcurate.schemas.rows import STATUS_REJECTED
from mmcurate.stages.engines.image_result import STAGE, ImageResult, image_decision, reason_counter
from mmcurate.stages.engines.phash_clusters import (
    MEMBER,
    band_entries,
    cluster_entries,
    cluster_usage,
    nearest_in_band,
    too_frequent,
)
from mmcurate.stages.results import StageCounters

DECISIONS = "decisions"


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
            | "BandKeys" >> beam.FlatMap(band_entries, k)
            | "GroupByBand" >> beam.GroupByKey()
            | "NearestInBand" >> beam.FlatMap(nearest_in_band, k)
            | "SmallestNeighbour" >> beam.CombinePerKey(min)
        )


class ClusterUsageFn(beam.DoFn):
    """Per cluster: count distinct documents; emit each member's ``Cluster`` and,
    when too frequent, one image decision per member (tag ``decisions``)."""

    def __init__(self, config: ImagesConfig):
        self._config = config

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, Iterable[tuple[str, str]]]) -> Iterable:
        rep, entries = element
        members, cluster = cluster_usage(rep, entries)
        limit = self._config.max_doc_frequency
        for image_id in members:
            yield image_id, cluster
            if too_frequent(cluster, limit):
                self._counters.inc(reason_counter(reasons.IMAGE_TOO_FREQUENT))
                decision = image_decision(
                    ImageResult(url="", status=STATUS_REJECTED, image_id=image_id),
                    reasons.IMAGE_TOO_FREQUENT,
                    cluster.doc_frequency,
                    limit,
                    detail=f"used by {cluster.doc_frequency} documents (cluster {rep})",
                )
                yield beam.pvalue.TaggedOutput(DECISIONS, decision)


class Clustered(NamedTuple):
    clusters: beam.PCollection  # (image_id, Cluster)
    decisions: beam.PCollection  # Decision: members of too frequent clusters


def _as_member(rep: tuple[str, str]) -> tuple[str, tuple[str, str]]:
    image_id, representative = rep
    return representative, (MEMBER, image_id)


class ClusterImages(beam.PTransform):
    """``(hashes, usage) | ClusterImages(config)`` -> ``Clustered``: hashes are
    distinct ``(image_id, phash)``, usage ``(image_id, doc_id)`` pairs; every image
    gets its ``Cluster`` (representative, distinct documents using a member)."""

    def __init__(self, config: ImagesConfig, label: Optional[str] = None):
        super().__init__(label)
        self._config = config

    def expand(self, pcolls: tuple[beam.PCollection, beam.PCollection]) -> Clustered:
        hashes, usage = pcolls
        reps = hashes | "NearDuplicates" >> ClusterByPhash(self._config.phash_max_distance)
        members = reps | "Members" >> beam.Map(_as_member)
        used_by = (
            {"rep": reps, "usage": usage}
            | "JoinUsage" >> beam.CoGroupByKey()
            | "DocsByCluster" >> beam.FlatMap(cluster_entries)
        )
        clustered = (
            (members, used_by)
            | "ClusterEntries" >> beam.Flatten()
            | "GroupByCluster" >> beam.GroupByKey()
            | "ClusterUsage" >> beam.ParDo(ClusterUsageFn(self._config)).with_outputs(DECISIONS, main="clusters")
        )
        return Clustered(clustered["clusters"], clustered[DECISIONS])
