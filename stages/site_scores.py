"""Site-level scores in Beam: a per-document score's mean over the pages of its site.

``AggregateSiteScores(signals)`` adds, for each ``filters.site_scores.SiteSignal``
(``llm_score``, ``mt_score``), the site's mean and page count to each document that
has the score. Only compact records cross the shuffle: each document becomes one
``((signal, site), score units)`` pair per signal, and ``CombinePerKey`` sums them
per site (partial sums are combined before the shuffle where the runner lifts
combiners). The sites with 2+ documents form a table, ``site -> (sum, count)``,
that reaches the documents as a side input: the documents themselves are neither
keyed nor grouped, and a site of one page (most sites in a crawl sample) is not in
the table at all (its mean is its own score).

A side input is a barrier: no document is decided before every site's sum is known,
so the stage's input documents wait between the scoring step and this one. A
runner that materialises the collection between two steps (Dataflow, Flink: to
disk; the DirectRunner: in memory) holds them there, which a per-document stage
does not need to; and every worker that applies the rules holds the whole table
(one entry per multi-page site, per signal), which at crawl scale is millions of
entries. That is the price of deciding a page by its site, and the reason the site
steps are off unless configured (docs/stages.md).
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence, Tuple

import apache_beam as beam

from mmcurate.filters.site_scores import SiteSignal, mean_of_units, score_units
from mmcurate.schemas import Document

# What crosses the shuffle: ((score signal name, site key), score in 2^-32 units).
SiteEntry = Tuple[Tuple[str, str], int]


def site_entries(doc: Document, signals: Sequence[SiteSignal]) -> Iterable[SiteEntry]:
    """One compact record per signal the document has a site for."""
    for signal in signals:
        key = signal.site_key(doc)
        if key is not None:
            yield (signal.score, key), score_units(doc.signals[signal.score])


class SumAndCount(beam.CombineFn):
    """(sum, count) of integer score units: exact, so independent of order."""

    def create_accumulator(self) -> Tuple[int, int]:
        return 0, 0

    def add_input(self, acc: Tuple[int, int], value: int) -> Tuple[int, int]:
        return acc[0] + value, acc[1] + 1

    def merge_accumulators(self, accs: Iterable[Tuple[int, int]]) -> Tuple[int, int]:
        total, count = 0, 0
        for t, c in accs:
            total, count = total + t, count + c
        return total, count

    def extract_output(self, acc: Tuple[int, int]) -> Tuple[int, int]:
        return acc


def with_site_scores(doc: Document, signals: Sequence[SiteSignal], table: Mapping) -> Document:
    """The document with each signal's site mean and page count (its own score and
    1 for a site not in the table: a site of one page)."""
    values: dict[str, float] = {}
    for signal in signals:
        key = signal.site_key(doc)
        if key is None:
            continue
        total, count = table.get((signal.score, key), (None, 1))
        values[signal.site_score] = doc.signals[signal.score] if total is None else mean_of_units(total, count)
        values[signal.site_docs] = float(count)
    return doc.with_signals(values) if values else doc


class AggregateSiteScores(beam.PTransform):
    """Documents -> the same documents with ``SITE_SCORE``/``SITE_DOCS`` signals of each
    of ``signals`` (module docstring: compact records shuffled, a per-site table as a
    side input)."""

    def __init__(self, signals: Sequence[SiteSignal], label: str | None = None):
        super().__init__(label)
        self._signals = tuple(signals)

    def expand(self, docs: beam.PCollection) -> beam.PCollection:
        signals = self._signals
        table = (
            docs
            | "SiteEntries" >> beam.FlatMap(site_entries, signals).with_output_types(SiteEntry)
            | "SumPerSite" >> beam.CombinePerKey(SumAndCount())
            | "SitesOfSeveralPages" >> beam.Filter(lambda kv: kv[1][1] > 1)
        )
        return docs | "AddSiteScores" >> beam.Map(with_site_scores, signals, beam.pvalue.AsDict(table))
