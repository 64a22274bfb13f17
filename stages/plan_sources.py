"""``mmcurate plan`` as Beam transforms: learn per-source yields from runs, choose the
next index records to read.

Inputs: the ``documents/`` and ``decisions/`` tables of finished runs, and a Common
Crawl columnar-index extract (``stages/engines/plan_index.py``: Parquet or CSV with
the cc-index-table column names). The records between the passes, the bounded heaps
and the choice of the plan are Beam-free (``stages/engines/source_plan.py``,
``filters/bandit.py``); this module runs them as Beam transforms and does the file
I/O through Beam's filesystems.

The pipeline, with what crosses each shuffle (only compact records do):

1. ``ReadRunPages``: one record per page the runs read (a kept document, or a
   ``subject = page`` decision row): its pointer hash, URL hash, and outcome.
2. The pointers and URLs read become two sorted int64 arrays, a side input of 8
   bytes per page read.
3. ``MatchReadRows``: a pass over the index keeps the rows the runs read (a
   vectorised lookup in that array), joined to their outcomes by pointer hash
   (CoGroupByKey): the index's own domain, language, MIME type and path of each page
   read. Pages the index does not list get their features from their URL.
4. ``AggregateYields``: one ``YieldStats`` (counts per domain, host and feature
   value; a CombineGlobally), a side input of the scoring pass.
5. ``ScoreIndexRows``: a second pass over the index scores each row not read yet
   (``filters.bandit``: Thompson sampling over hosts) and keeps, per registered
   domain, only the best ``cap`` rows overall and per quota language (a combiner,
   lifted before the shuffle), then the best of those over the whole index (another
   combiner). Memory is bounded by the budget and the number of domains read, never
   by the index.
6. ``WritePlan``: the chosen rows as a pointer table (``mmcurate run --index``
   reads it) and a summary JSON beside it.

Counters (namespace ``plan``): ``pages_read``, ``index_rows``, ``index_rows_read``
(rows the runs read), ``index_rows_skipped.<why>``, ``candidates``.
"""

from __future__ import annotations

import logging
from typing import Any, Iterator, Mapping, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import sources
from mmcurate.filters.bandit import Candidate, YieldModel, YieldStats, domain_cap, domain_limit, quota_counts
from mmcurate.stages.config import PlanConfig
from mmcurate.stages.engines.plan_index import (
    IndexRow,
    contains,
    index_rows,
    pointer_hashes,
    sorted_unique,
    url_hashes,
)
from mmcurate.stages.engines.source_plan import (
    ALL,
    bandit_params,
    best_lists,
    choose_plan,
    heap_candidates,
    observation,
    overall_limits,
    push_best,
    score_rows,
    summary_json,
    summary_path,
    unreadable,
)
from mmcurate.stages.plan_inputs import IndexFiles, ReadRunPages, plan_index_batches

log = logging.getLogger(__name__)

NAMESPACE = "plan"


# -- pass 1: what the runs measured, with the index's features ---------------------------


class MatchReadRowsFn(beam.DoFn):
    """An index file -> (pointer hash, IndexRow) for each row the runs read."""

    def process(self, path: str, read_pointers: np.ndarray) -> Iterator[tuple[int, IndexRow]]:
        matched = beam.metrics.Metrics.counter(NAMESPACE, "index_rows_read")
        for columns in plan_index_batches(path):
            rows = list(index_rows(columns))
            hashes = pointer_hashes(rows)
            for i in np.flatnonzero(contains(read_pointers, hashes)):
                matched.inc()
                yield int(hashes[i]), rows[i]


def _observation(item: tuple[int, Mapping[str, list]]):
    _, joined = item
    found = observation(joined["page"], joined["row"])
    if found is not None:
        yield found


class YieldStatsFn(beam.CombineFn):
    def create_accumulator(self) -> YieldStats:
        return YieldStats()

    def add_input(self, acc: YieldStats, obs) -> YieldStats:
        return acc.add(obs)

    def merge_accumulators(self, accs) -> YieldStats:
        accs = iter(accs)
        merged = next(accs)
        for acc in accs:
            merged.merge(acc)
        return merged

    def extract_output(self, acc: YieldStats) -> YieldStats:
        return acc


# -- pass 2: score the rows not read yet, keep the best per domain --------------------


class ScoreIndexRowsFn(beam.DoFn):
    """An index file -> (domain, Candidate) for each row that can be read next."""

    def __init__(self, config: PlanConfig):
        self._config = config
        self._mimes = frozenset(config.mime_types)
        self._model: Optional[YieldModel] = None
        self._stats_id: Optional[int] = None

    def _model_for(self, stats: YieldStats) -> YieldModel:
        if self._model is None or self._stats_id != id(stats):
            self._model, self._stats_id = YieldModel(stats, bandit_params(self._config)), id(stats)
        return self._model

    def process(self, path: str, stats: YieldStats, read_pointers: np.ndarray, read_urls: np.ndarray):
        model = self._model_for(stats)
        metrics = beam.metrics.Metrics
        total, candidates = metrics.counter(NAMESPACE, "index_rows"), metrics.counter(NAMESPACE, "candidates")
        for columns in plan_index_batches(path):
            rows = list(index_rows(columns))
            total.inc(len(rows))
            keep = ~contains(read_pointers, pointer_hashes(rows))
            self._skipped("already_read", len(rows) - int(keep.sum()))
            if self._config.skip_read_urls and read_urls.size:
                again = keep & contains(read_urls, url_hashes(rows))
                self._skipped("url_read", int(again.sum()))
                keep &= ~again
            chosen = []
            for i in np.flatnonzero(keep):
                row = rows[i]
                why = unreadable(row, self._config, self._mimes)
                if why:
                    self._skipped(why, 1)
                    continue
                chosen.append(row)
            if not chosen:
                continue
            for candidate in score_rows(chosen, model, stats, self._config.seed):
                candidates.inc()
                yield candidate.domain, candidate

    @staticmethod
    def _skipped(why: str, n: int) -> None:
        if n:
            beam.metrics.Metrics.counter(NAMESPACE, f"index_rows_skipped.{why}").inc(n)


class _BestFn(beam.CombineFn):
    """Keeps the best candidates per tag (``*`` and each quota language), up to a
    limit per tag; a min-heap per tag, so memory is the limits, not the input."""

    def create_accumulator(self) -> dict[str, list]:
        return {}

    def _limit(self, tag: str, c: Candidate) -> int:
        raise NotImplementedError

    def _tagged(self, element) -> Iterator[tuple[str, Candidate]]:
        raise NotImplementedError

    def add_input(self, acc: dict[str, list], element) -> dict[str, list]:
        for tag, c in self._tagged(element):
            push_best(acc, tag, c, self._limit(tag, c))
        return acc

    def merge_accumulators(self, accs) -> dict[str, list]:
        accs = iter(accs)
        merged = next(accs)
        for acc in accs:
            for tag, heap in acc.items():
                for c in heap_candidates(heap):
                    push_best(merged, tag, c, self._limit(tag, c))
        return merged

    def extract_output(self, acc: dict[str, list]) -> dict[str, list[Candidate]]:
        return best_lists(acc)


class BestPerDomainFn(_BestFn):
    """Per domain: its best rows overall and of each quota language, as many as the
    domain may get (``domain_limit``: the probe size for a domain never read, up to
    the cap)."""

    def __init__(self, cap: int, languages: Sequence[str], probe_pages: int, growth: float):
        self._cap = cap
        self._languages = frozenset(languages)
        self._probe = probe_pages
        self._growth = growth

    def _limit(self, tag: str, c: Candidate) -> int:
        return domain_limit(self._cap, c.domain_pages, self._probe, self._growth)

    def _tagged(self, c: Candidate) -> Iterator[tuple[str, Candidate]]:
        yield ALL, c
        if c.language in self._languages:
            yield c.language, c


class BestOverallFn(_BestFn):
    """Over all domains: enough of the per-domain bests to fill the budget and quotas."""

    def __init__(self, limits: Mapping[str, int]):
        self._limits = dict(limits)

    def _limit(self, tag: str, c: Candidate) -> int:
        return self._limits[tag]

    def _tagged(self, element: tuple[str, Candidate]) -> Iterator[tuple[str, Candidate]]:
        yield element


def _per_domain_tagged(item: tuple[str, Mapping[str, list[Candidate]]]) -> Iterator[tuple[str, Candidate]]:
    _, best = item
    for tag, candidates in best.items():
        for c in candidates:
            yield tag, c


# -- the plan ------------------------------------------------------------------------------


def _write_atomically(path: str, data: bytes) -> None:
    temporary = f"{path}.tmp"
    with FileSystems.create(temporary) as fh:
        fh.write(data)
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([temporary], [path])


def write_plan(
    best: Mapping[str, list[Candidate]],
    stats: YieldStats,
    *,
    output: str,
    budget: int,
    config: PlanConfig,
    extra: Mapping[str, Any],
) -> dict:
    """Chooses from the best candidates, writes the pointer table and the summary
    JSON; returns the summary."""
    table, summary = choose_plan(best, stats, budget, config, extra)
    _write_atomically(output, table)
    _write_atomically(summary_path(output), summary_json(summary))
    return summary


class PlanSources(beam.PTransform):
    """``p | PlanSources(runs, index_patterns, budget, output, config)``: writes the
    pointer table and its summary; returns the summary (a one-element PCollection)."""

    def __init__(
        self,
        run_dirs: Sequence[str],
        index_patterns: Sequence[str],
        budget: int,
        output: str,
        config: PlanConfig = PlanConfig(),
        extra: Optional[Mapping[str, Any]] = None,
    ):
        super().__init__()
        if budget <= 0:
            raise ValueError("the budget must be a positive number of pointers")
        self._runs = list(run_dirs)
        self._index = list(index_patterns)
        self._budget = budget
        self._output = output
        self._config = config
        self._extra = dict(extra or {})

    def expand(self, pbegin):
        config, budget = self._config, self._budget
        cap = domain_cap(budget, config.max_per_domain, config.max_domain_share)
        quotas = quota_counts(budget, config.languages)
        p = pbegin.pipeline

        pages = p | "ReadRunPages" >> ReadRunPages(self._runs, config.min_images)
        read_pointers = beam.pvalue.AsSingleton(
            pages
            | "PointerHashes" >> beam.Map(lambda page: page.pointer)
            | "AllPointers" >> beam.combiners.ToList()
            | "SortPointers" >> beam.Map(sorted_unique)
        )
        read_urls = beam.pvalue.AsSingleton(
            pages
            | "UrlHashes" >> beam.Map(lambda page: sources.url_hash(page.url))
            | "AllUrls" >> beam.combiners.ToList()
            | "SortUrls" >> beam.Map(sorted_unique)
        )

        # Pass 1: the index rows the runs read, joined to their outcomes.
        read_rows = (
            p
            | "IndexFilesRead" >> IndexFiles(self._index)
            | "MatchReadRows" >> beam.ParDo(MatchReadRowsFn(), read_pointers)
        )
        stats = beam.pvalue.AsSingleton(
            {"page": pages | "KeyPages" >> beam.Map(lambda page: (page.pointer, page)), "row": read_rows}
            | "JoinReadRows" >> beam.CoGroupByKey()
            | "Observations" >> beam.FlatMap(_observation)
            | "AggregateYields" >> beam.CombineGlobally(YieldStatsFn())
        )

        # Pass 2: score what was not read; the best per domain, then overall.
        limits = overall_limits(budget, quotas)
        best = (
            p
            | "IndexFilesScore" >> IndexFiles(self._index)
            | "ScoreIndexRows" >> beam.ParDo(ScoreIndexRowsFn(config), stats, read_pointers, read_urls)
            | "BestPerDomain" >> beam.CombinePerKey(
                BestPerDomainFn(cap, sorted(quotas), config.probe_pages, config.growth)
            )
            | "Tag" >> beam.FlatMap(_per_domain_tagged)
            | "BestOverall" >> beam.CombineGlobally(BestOverallFn(limits))
        )
        output, extra = self._output, self._extra
        return best | "WritePlan" >> beam.Map(
            lambda chosen, stats: write_plan(chosen, stats, output=output, budget=budget, config=config, extra=extra),
            stats,
        )
