"""Site-level evidence: a per-document score averaged over the pages of one site.

Page-level detectors of machine translation and weak-model text are weak on one
page; a site that publishes such text publishes many pages, and the mean score of
its pages is much less noisy (benchmarks/bench_quality.py measures it: the AUC and
the precision of the mean of 5, 10 and 20 documents). The quality stage computes
the means (``stages/site_scores.py``); this module says what a site is, how scores
are summed so that the mean does not depend on the order of the pages, and decides.

A site is the page's registered domain by the Public Suffix List
(``filters.sources.registered_domain``: ``fr.shop.example.co.uk`` ->
``example.co.uk``; a platform's users stay apart, ``a.blogspot.com`` is its own
site, since the list's private section names ``blogspot.com``), or the host for IP
addresses and names outside the list. Translation services publish a site's
translations under language subdomains (``fr.example.com``) or paths, so one
registered domain holds them together. A signal may also split sites by the
document's language (MT: a site's machine-translated pages are in other languages
than its originals, and only their mean says anything).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mmcurate.filters.machine_translation import primary_language
from mmcurate.filters.sources import host_of, registered_domain
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

# Scores are summed as integers in units of 2^-32 (scores are probabilities in
# [0, 1]; 2^-32 is 2.3e-10): a sum of integers is exact, so a site's mean is the
# same whatever order or bundles its pages arrive in, on every runner, and a sum
# stays within 64 bits (Beam's integer coder) up to 2^31 pages of one site.
_UNITS = 1 << 32


@dataclass(frozen=True)
class SiteSignal:
    """One score averaged per site: the document signal it reads and the two it writes."""

    score: str  # the per-document score, e.g. "mt_score"
    site_score: str  # the mean over the site's documents that have ``score``
    site_docs: str  # how many documents that mean is over
    by_language: bool = False  # a site per (site, primary language of the document)

    def site_key(self, doc: Document) -> Optional[str]:
        """The site a document counts towards for this signal; None: none (no host,
        no score, or, by language, no language)."""
        if self.score not in doc.signals:
            return None
        site = site_of(doc.url)
        if not site:
            return None
        if not self.by_language:
            return site
        if not doc.language:
            return None
        return f"{site} {primary_language(doc.language)}"


def site_of(url: str) -> str:
    """The site a page belongs to: its registered domain, lower case ('' if no host)."""
    return registered_domain(host_of(url))


def score_units(score: float) -> int:
    """A score as an integer number of 2^-32 units (exact to sum)."""
    return round(score * _UNITS)


def mean_of_units(total: int, count: int) -> float:
    return total / count / _UNITS


def site_high_score(doc: Document, *, signal: SiteSignal, reason: str, max_score: float, min_docs: int) -> Verdict:
    """Reject a page whose site's mean score over at least ``min_docs`` of its pages
    is above ``max_score`` (1: never, scores only)."""
    score, docs = doc.signals.get(signal.site_score), doc.signals.get(signal.site_docs, 0.0)
    if score is not None and docs >= min_docs and score > max_score:
        return reject(reason, score, max_score, detail=f"site_docs={docs:.0f}")
    return keep()
