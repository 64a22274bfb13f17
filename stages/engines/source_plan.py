"""``mmcurate plan``'s records and choices between the Beam passes.

What the runs read (``PageRead``, one per page, and the ``Observation`` it becomes
with its index row's features), the bounded "best candidates per tag" heaps the
scoring pass combines (``*`` and each quota language), and the plan itself: chosen
from those candidates by ``filters.bandit``, as a pointer table (``POINTERS_SCHEMA``,
which ``mmcurate run --index`` reads) and a summary. Plain Python, pyarrow and the
bandit; ``stages/plan_sources.py`` runs these in Beam and writes the files.
"""

from __future__ import annotations

import heapq
import json
from typing import Any, Iterable, Mapping, NamedTuple, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from mmcurate.filters import sources
from mmcurate.filters.bandit import (
    BanditParams,
    Candidate,
    Observation,
    YieldModel,
    YieldStats,
    domain_cap,
    quota_counts,
    rank,
    select,
    summarise,
)
from mmcurate.stages.config import PlanConfig
from mmcurate.stages.engines.plan_index import IndexRow

ALL = "*"  # the candidate list that is not a language quota's

# The pointer table `plan` writes: the index's columns, then the plan's own.
POINTERS_SCHEMA = pa.schema(
    [
        pa.field("url", pa.string()),
        pa.field("url_host_name", pa.string()),
        pa.field("url_host_registered_domain", pa.string()),
        pa.field("content_languages", pa.string()),
        pa.field("content_mime_detected", pa.string()),
        pa.field("warc_filename", pa.string()),
        pa.field("warc_record_offset", pa.int64()),
        pa.field("warc_record_length", pa.int64()),
        pa.field("plan_language", pa.string()),
        pa.field("plan_score", pa.float64()),  # the Thompson draw that ranked the row
        pa.field("plan_expected_yield", pa.float64()),  # posterior mean chance of a success
        pa.field("plan_domain_pages_read", pa.int64()),
    ],
    metadata={b"mmcurate.table": b"plan_pointers"},
)


# -- what the runs read -------------------------------------------------------------------


class PageRead(NamedTuple):
    """One page a run read: where it was, and what became of it."""

    pointer: int  # key_hash(pointer_key(warc file, offset))
    url: str
    success: bool
    kept: bool
    images: int
    referenced: int = 0  # image URLs (signal images.referenced of the images stage)
    retained: int = 0  # of those, kept after retrieval and dedup (referenced - images.removed)


def image_signals(signals) -> tuple[int, int]:
    """(images referenced, images retained) from a table row's signals."""
    referenced = removed = 0
    for entry in signals or ():
        if entry["key"] == "images.referenced":
            referenced = int(entry["value"] or 0)
        elif entry["key"] == "images.removed":
            removed = int(entry["value"] or 0)
    return referenced, max(referenced - removed, 0)


def read_pointer(warc_file: Optional[str], offset: Optional[int]) -> int:
    """The pointer hash of a table row's WARC file and offset."""
    return sources.key_hash(sources.pointer_key(warc_file or "", -1 if offset is None else offset))


def observation(pages: Iterable[PageRead], rows: Iterable[IndexRow]) -> Optional[Observation]:
    """One observation per pointer read (the best outcome when several runs read it),
    with the index row's features, or the URL's when the index lacks the row."""
    pages = sorted(pages, key=lambda p: (p.success, p.kept, p.images, p.url), reverse=True)
    if not pages:
        return None
    page = pages[0]
    rows = list(rows)
    if rows:
        row = min(rows, key=lambda r: (r.url, r.warc_filename, r.offset))
        domain, host, features = row.domain, row.host, row.features
    else:
        host = sources.host_of(page.url)
        domain = sources.registered_domain(host)
        words = sources.path_words(sources.path_of(page.url))
        # No language or MIME: a run knows the language of the pages it kept only.
        features = tuple(sources.feature_keys(sources.tld_of(host), "", "", words))
    return Observation(domain, host, features, page.success, page.kept, page.images, page.referenced, page.retained)


# -- the rows not read yet -------------------------------------------------------------------


def unreadable(row: IndexRow, config: PlanConfig, mimes: frozenset[str]) -> str:
    """Why the plan cannot point at ``row`` (a counter name), "" when it can."""
    if not row.warc_filename or row.offset < 0 or row.length <= 0:
        return "bad_pointer"
    if not row.domain:
        return "no_host"
    if row.status is not None and row.status != config.fetch_status:
        return "fetch_status"
    if row.mime and row.mime not in mimes:
        return "mime"
    return ""


def score_rows(rows: list[IndexRow], model: YieldModel, stats: YieldStats, seed: int) -> list[Candidate]:
    """The rows as candidates, scored by one Thompson draw each (``model.scores``)."""
    if not rows:
        return []
    scores, means = model.scores([r.domain for r in rows], [r.host for r in rows], [r.features for r in rows])
    out = []
    for row, score, mean in zip(rows, scores.tolist(), means.tolist()):
        d = stats.domains.get(row.domain)
        out.append(
            Candidate(
                score=score,
                tie=sources.unit_hash(seed, "row", row.url, str(row.offset)),
                domain=row.domain,
                host=row.host,
                url=row.url,
                language=row.language,
                content_languages=row.content_languages,
                mime=row.mime,
                warc_filename=row.warc_filename,
                offset=row.offset,
                length=row.length,
                mean=mean,
                domain_pages=d[0] if d else 0,
            )
        )
    return out


# -- the best candidates per tag, in bounded heaps -----------------------------------------


def push_best(heaps: dict[str, list], tag: str, c: Candidate, limit: int) -> None:
    """Keeps ``c`` among the ``limit`` best of ``tag`` (a min-heap per tag)."""
    heap = heaps.setdefault(tag, [])
    item = (rank(c), c)
    if len(heap) < limit:
        heapq.heappush(heap, item)
    elif item > heap[0]:
        heapq.heapreplace(heap, item)


def heap_candidates(heap: list) -> Iterable[Candidate]:
    return (c for _, c in heap)


def best_lists(heaps: Mapping[str, list]) -> dict[str, list[Candidate]]:
    """Each tag's candidates, best first."""
    return {tag: [c for _, c in sorted(heap, reverse=True)] for tag, heap in sorted(heaps.items())}


def overall_limits(budget: int, quotas: Mapping[str, int]) -> dict[str, int]:
    """How many candidates of each tag the plan may need from all domains."""
    return {ALL: budget + sum(quotas.values()), **{lang: 2 * n for lang, n in quotas.items()}}


# -- the plan ------------------------------------------------------------------------------


def summary_path(output: str) -> str:
    """``pointers.parquet`` -> ``pointers.summary.json``, beside it."""
    base = output[: -len(".parquet")] if output.endswith(".parquet") else output
    return base + ".summary.json"


def pointers_table(chosen: Iterable[Candidate]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "url": c.url,
                "url_host_name": c.host,
                "url_host_registered_domain": c.domain,
                "content_languages": c.content_languages or None,
                "content_mime_detected": c.mime or None,
                "warc_filename": c.warc_filename,
                "warc_record_offset": c.offset,
                "warc_record_length": c.length,
                "plan_language": c.language or None,
                "plan_score": c.score,
                "plan_expected_yield": c.mean,
                "plan_domain_pages_read": c.domain_pages,
            }
            for c in chosen
        ],
        schema=POINTERS_SCHEMA,
    )


def bandit_params(config: PlanConfig) -> BanditParams:
    return BanditParams(config.prior_strength, config.feature_strength, config.domain_weight, config.seed)


def choose_plan(
    best: Mapping[str, list[Candidate]], stats: YieldStats, budget: int, config: PlanConfig, extra: Mapping[str, Any]
) -> tuple[bytes, dict]:
    """The plan chosen from the best candidates: the pointer table as Parquet bytes,
    and the summary (with ``extra``)."""
    cap = domain_cap(budget, config.max_per_domain, config.max_domain_share)
    quotas = quota_counts(budget, config.languages)
    chosen = select(
        best.get(ALL, []),
        {k: v for k, v in best.items() if k != ALL},
        budget,
        cap,
        quotas,
        config.probe_pages,
        config.growth,
    )
    summary = summarise(chosen, stats, budget, cap, quotas, config.languages, YieldModel(stats, bandit_params(config)))
    summary.update(extra)
    sink = pa.BufferOutputStream()
    pq.write_table(pointers_table(chosen), sink, compression="zstd")
    return sink.getvalue().to_pybytes(), summary


def summary_json(summary: Mapping[str, Any]) -> bytes:
    return (json.dumps(summary, indent=2, sort_keys=False) + "\n").encode()
