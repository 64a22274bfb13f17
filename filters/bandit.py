"""The source planner's statistics and decisions: a Beta-Binomial bandit over hosts.

Pure Python and numpy: no Beam, no I/O. ``stages.plan_sources`` runs it over a
crawl's index; tests and the benchmark call it directly. Page features come
from ``filters.sources``.

**The reward.** A page read is a success when it became a kept document with at
least ``min_images`` images: an interleaved image-text document, the thing the
corpus is short of.

**What is learned.** For every registered domain and every host: pages read,
successes and images in kept documents. For every value of the generalising
features (``filters.sources``: TLD, detected language, MIME type, URL path words):
pages read and successes.

**The prior of a page** (what is believed before any page of its host is read):
the global success rate ``p0``, moved on the logit scale by what each feature
family says. A feature value's rate is shrunk towards ``p0`` by
``feature_strength`` pseudo-pages (empirical Bayes: rare values say little); the
deviations of the TLD, the language and the MIME type add up, those of the path
words are averaged (a path has several, strongly correlated). This is a naive-Bayes
style additive logit model, chosen because it is cheap per row, needs no training
step, and generalises to hosts never read.

**The posterior of a host** is Beta(a, b) with
``a = m * prior + s_host + w * (s_domain - s_host)`` and
``b = m * (1 - prior) + f_host + w * (f_domain - f_host)``: ``m`` pseudo-pages of
the prior (``prior_strength``), the host's own successes ``s`` and failures ``f``,
and the other hosts of its registered domain counted with weight ``w``
(``domain_weight``).

**The decision: Thompson sampling**, in a batch. Each host (an arm) gets one draw
``u`` in (0, 1), fixed by the seed and the host name; the score of each of its
index rows is the ``u``-quantile of the row's Beta posterior (rows of one host differ
only in their path prior). A well-measured host scores near its measured yield; an
unread one scores anywhere its wide posterior allows, which is the exploration.
The rows with the highest scores are read, at most ``cap`` per registered domain and
with each language quota filled first. Same seed, same runs, same index: same
plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, NamedTuple, Optional, Sequence

import numpy as np
from scipy.special import betaincinv

from mmcurate.filters.sources import unit_hash

# Posterior-mean and prior bounds: a rate is never exactly 0 or 1.
_EPS = 1e-4


class Observation(NamedTuple):
    """One page a run read, with what became of it."""

    domain: str
    host: str
    features: tuple[str, ...]
    success: bool  # a kept document with >= min_images images
    kept: bool
    images: int  # images in the kept document (0 if not kept)
    # Images stage: image URLs the page referenced, and how many of them survived
    # retrieval, validation and dedup (both 0 when the stage did not see the page).
    referenced: int = 0
    retained: int = 0


@dataclass
class YieldStats:
    """Counts per domain, host and feature value; merge() makes it a Beam combiner's
    accumulator. Each value is [pages, successes] (domains: [pages, successes,
    kept, images, images referenced, images retained])."""

    pages: int = 0
    successes: int = 0
    kept: int = 0
    images: int = 0
    domains: dict[str, list[int]] = field(default_factory=dict)
    hosts: dict[str, list[int]] = field(default_factory=dict)
    features: dict[str, list[int]] = field(default_factory=dict)

    def add(self, obs: Observation) -> "YieldStats":
        s, k = int(obs.success), int(obs.kept)
        self.pages += 1
        self.successes += s
        self.kept += k
        self.images += obs.images
        d = self.domains.setdefault(obs.domain, [0, 0, 0, 0, 0, 0])
        d[0] += 1
        d[1] += s
        d[2] += k
        d[3] += obs.images
        d[4] += obs.referenced
        d[5] += obs.retained
        h = self.hosts.setdefault(obs.host, [0, 0])
        h[0] += 1
        h[1] += s
        for key in obs.features:
            f = self.features.setdefault(key, [0, 0])
            f[0] += 1
            f[1] += s
        return self

    def merge(self, other: "YieldStats") -> "YieldStats":
        self.pages += other.pages
        self.successes += other.successes
        self.kept += other.kept
        self.images += other.images
        for mine, theirs in ((self.domains, other.domains), (self.hosts, other.hosts), (self.features, other.features)):
            for key, counts in theirs.items():
                current = mine.get(key)
                if current is None:
                    mine[key] = list(counts)
                else:
                    for i, n in enumerate(counts):
                        current[i] += n
        return self


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class BanditParams:
    """The planner's knobs (``PlanConfig`` holds the same, with their reasons)."""

    prior_strength: float = 2.0
    feature_strength: float = 20.0
    domain_weight: float = 0.5
    seed: int = 0


class YieldModel:
    """Posteriors over hosts from ``YieldStats``; scores index rows."""

    def __init__(self, stats: YieldStats, params: BanditParams = BanditParams()):
        self.stats = stats
        self.params = params
        # Laplace's rule of succession for the global rate: 1/2 before any page.
        self.p0 = (stats.successes + 1.0) / (stats.pages + 2.0)
        base = _logit(self.p0)
        k = params.feature_strength
        self._deviation = {
            key: _logit((n[1] + k * self.p0) / (n[0] + k)) - base for key, n in stats.features.items()
        }
        self._base = base

    def prior(self, features: Iterable[str]) -> float:
        """The success probability of a page of an unread host, from its features."""
        total = self._base
        words: list[float] = []
        for key in features:
            d = self._deviation.get(key)
            if d is None:
                continue
            if key.startswith("path:"):
                words.append(d)
            else:
                total += d
        if words:
            total += sum(words) / len(words)
        return min(max(1.0 / (1.0 + math.exp(-total)), _EPS), 1.0 - _EPS)

    def posterior(self, domain: str, host: str, prior: float) -> tuple[float, float]:
        """(a, b) of the host's Beta posterior for a page whose prior is ``prior``."""
        p = self.params
        d = self.stats.domains.get(domain)
        h = self.stats.hosts.get(host)
        hn, hs = (h[0], h[1]) if h else (0, 0)
        dn, ds = (d[0], d[1]) if d else (0, 0)
        a = p.prior_strength * prior + hs + p.domain_weight * max(ds - hs, 0)
        b = p.prior_strength * (1.0 - prior) + (hn - hs) + p.domain_weight * max((dn - ds) - (hn - hs), 0)
        return a, b

    def scores(
        self, domains: Sequence[str], hosts: Sequence[str], features: Sequence[Iterable[str]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Thompson scores and posterior means of a batch of index rows."""
        n = len(hosts)
        a = np.empty(n)
        b = np.empty(n)
        u = np.empty(n)
        draws: dict[str, float] = {}
        seed = self.params.seed
        for i, (domain, host, keys) in enumerate(zip(domains, hosts, features)):
            a[i], b[i] = self.posterior(domain, host, self.prior(keys))
            draw = draws.get(host)
            if draw is None:
                draw = draws[host] = unit_hash(seed, "host", host)
            u[i] = draw
        return betaincinv(a, b, u), a / (a + b)


class Candidate(NamedTuple):
    """An index row the planner may choose, with its score."""

    score: float
    tie: float  # a seeded per-row number: breaks ties the same way on every runner
    domain: str
    host: str
    url: str
    language: str
    content_languages: str
    mime: str
    warc_filename: str
    offset: int
    length: int
    mean: float  # posterior mean: the expected chance of a success
    domain_pages: int  # pages of the domain the runs read


def rank(c: Candidate) -> tuple[float, float]:
    return (c.score, c.tie)


def domain_cap(budget: int, max_per_domain: int, max_domain_share: float) -> int:
    """Pointers at most per registered domain: ``max_per_domain`` when set, else the
    share of the budget (at least 1)."""
    if max_per_domain > 0:
        return max_per_domain
    return max(1, math.floor(max_domain_share * budget))


def domain_limit(cap: int, pages_read: int, probe_pages: int, growth: float) -> int:
    """Pointers a domain may get in this plan: ``probe_pages`` while the runs read
    none of its pages, then up to ``growth`` times the pages read so far, never above
    ``cap``. A lucky Thompson draw for a domain never read costs a few pages, not a
    whole cap; a domain that keeps its promise earns more each round (a doubling
    schedule with growth 2). ``probe_pages`` 0 turns this off (``cap`` for all)."""
    if probe_pages <= 0:
        return cap
    return min(cap, max(probe_pages, math.ceil(growth * pages_read)))


def quota_counts(budget: int, languages: Mapping[str, float]) -> dict[str, int]:
    """Pointers each language quota asks for (a share of the budget, rounded up)."""
    return {lang: math.ceil(share * budget - 1e-9) for lang, share in sorted(languages.items())}


def select(
    overall: Iterable[Candidate],
    by_language: Mapping[str, Iterable[Candidate]],
    budget: int,
    cap: int,
    quotas: Mapping[str, int],
    probe_pages: int = 0,
    growth: float = 2.0,
) -> list[Candidate]:
    """The plan: each language quota filled first from its own candidates (best
    first), then the rest of the budget from all candidates, best first; never more
    than ``domain_limit`` per domain (so never above ``cap``), never one URL twice.
    Returns the chosen rows, best first."""
    taken: list[Candidate] = []
    per_domain: dict[str, int] = {}
    urls: set[str] = set()
    pointers: set[tuple[str, int]] = set()

    def take(c: Candidate) -> bool:
        if per_domain.get(c.domain, 0) >= domain_limit(cap, c.domain_pages, probe_pages, growth) or c.url in urls or (c.warc_filename, c.offset) in pointers:
            return False
        per_domain[c.domain] = per_domain.get(c.domain, 0) + 1
        urls.add(c.url)
        pointers.add((c.warc_filename, c.offset))
        taken.append(c)
        return True

    for lang in sorted(quotas):
        wanted = min(quotas[lang], budget - len(taken))
        got = 0
        for c in sorted(by_language.get(lang, ()), key=rank, reverse=True):
            if got >= wanted:
                break
            got += take(c)
    for c in sorted(overall, key=rank, reverse=True):
        if len(taken) >= budget:
            break
        take(c)
    return sorted(taken, key=rank, reverse=True)


def summarise(
    chosen: Sequence[Candidate],
    stats: YieldStats,
    budget: int,
    cap: int,
    quotas: Mapping[str, int],
    shares: Mapping[str, float],
    model: Optional[YieldModel] = None,
) -> dict:
    """The plan's summary: budget spent per domain, expected yield, exploration share,
    quotas met, and what the runs measured."""
    per_domain: dict[str, dict] = {}
    for c in chosen:
        entry = per_domain.setdefault(
            c.domain, {"domain": c.domain, "pointers": 0, "expected_successes": 0.0, "pages_read": c.domain_pages}
        )
        entry["pointers"] += 1
        entry["expected_successes"] += c.mean
    for entry in per_domain.values():
        d = stats.domains.get(entry["domain"])
        entry["successes_read"] = d[1] if d else 0
        entry["images_per_kept_document"] = round(d[3] / d[2], 3) if d and d[2] else None
        entry["image_retrieval_success"] = round(d[5] / d[4], 3) if d and d[4] else None
        entry["expected_successes"] = round(entry["expected_successes"], 3)
    languages = {}
    for lang, wanted in sorted(quotas.items()):
        got = sum(1 for c in chosen if c.language == lang)
        languages[lang] = {"min_share": shares[lang], "wanted": wanted, "selected": got, "met": got >= wanted}
    unread = sum(1 for c in chosen if c.domain_pages == 0)
    expected = sum(c.mean for c in chosen)
    top = sorted(per_domain.values(), key=lambda e: (-e["pointers"], -e["expected_successes"], e["domain"]))
    return {
        "budget": budget,
        "selected": len(chosen),
        "domain_cap": cap,
        "domains": len(per_domain),
        "max_pointers_per_domain": max((e["pointers"] for e in per_domain.values()), default=0),
        "expected_successes": round(expected, 3),
        "expected_yield": round(expected / len(chosen), 4) if chosen else None,
        "exploration_share": round(unread / len(chosen), 4) if chosen else None,
        "languages": languages,
        "measured": {
            "pages_read": stats.pages,
            "successes": stats.successes,
            "kept": stats.kept,
            "yield": round(stats.successes / stats.pages, 4) if stats.pages else None,
            "domains_read": len(stats.domains),
            "hosts_read": len(stats.hosts),
            "global_prior": round(model.p0, 4) if model else None,
        },
        "per_domain": top,
    }
