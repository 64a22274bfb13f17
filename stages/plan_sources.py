"""``mmcurate plan`` as Beam transforms: learn per-source yields from runs, choose the
next index records to read.

Inputs: the ``documents/`` and ``decisions/`` tables of finished runs, and a Common
Crawl columnar-index extract (Parquet or CSV with the cc-index-table column names;
``url`` and the three pointer columns are required, ``url_host_name``,
``url_host_registered_domain``, ``url_host_tld``, ``url_path``,
``content_mime_detected``, ``content_languages`` and ``fetch_status`` are used when
present and derived from ``url`` when not).

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

import heapq
import json
import logging
import posixpath
from typing import Any, Iterator, Mapping, NamedTuple, Optional, Sequence

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from mmcurate.filters import sources
from mmcurate.filters.bandit import (
    BanditParams,
    Candidate,
    Observation,
    YieldModel,
    YieldStats,
    domain_cap,
    domain_limit,
    quota_counts,
    rank,
    select,
    summarise,
)
from mmcurate.stages.config import PlanConfig
from mmcurate.schemas.document import SUBJECT_PAGE

log = logging.getLogger(__name__)

NAMESPACE = "plan"
POINTER_COLUMNS = ("warc_filename", "warc_record_offset", "warc_record_length")
REQUIRED_COLUMNS = ("url", *POINTER_COLUMNS)
OPTIONAL_COLUMNS = (
    "url_host_name",
    "url_host_registered_domain",
    "url_host_tld",
    "url_path",
    "content_mime_detected",
    "content_languages",
    "fetch_status",
)
_BATCH_ROWS = 10_000
_ALL = "*"  # the candidate list that is not a language quota's

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


class BadPlanIndex(ValueError):
    """An index that is not Parquet/CSV or lacks a required column."""


# -- the index -------------------------------------------------------------------------


def _is_csv(path: str) -> bool:
    return path.lower().endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz"))


def _delimiter(path: str) -> str:
    return "\t" if ".tsv" in path.lower() else ","


def index_columns(path: str) -> list[str]:
    """The column names of an index file (the Parquet schema, or the CSV header)."""
    try:
        if _is_csv(path):
            with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as fh:
                header = fh.readline().decode("utf-8", errors="replace")
            return [n.strip().strip('"') for n in header.rstrip("\r\n").split(_delimiter(path))]
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            return list(pq.ParquetFile(fh).schema_arrow.names)
    except Exception as exc:
        raise BadPlanIndex(f"index {path}: not a readable Parquet or CSV file: {exc}") from exc


def check_plan_index(path: str) -> list[str]:
    """The columns ``plan`` will read from ``path``; BadPlanIndex if one it needs is missing."""
    names = index_columns(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise BadPlanIndex(f"index {path}: no column {', '.join(missing)} (needs {', '.join(REQUIRED_COLUMNS)})")
    return [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in names]


def plan_index_batches(path: str) -> Iterator[dict[str, list]]:
    """The index file's rows in batches, as column lists (absent optional columns
    are absent keys)."""
    columns = check_plan_index(path)
    if _is_csv(path):
        types = {"warc_record_offset": pa.int64(), "warc_record_length": pa.int64(), "fetch_status": pa.int64()}
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as fh:
            reader = pacsv.open_csv(
                fh,
                parse_options=pacsv.ParseOptions(delimiter=_delimiter(path)),
                convert_options=pacsv.ConvertOptions(
                    include_columns=columns,
                    column_types={k: v for k, v in types.items() if k in columns},
                    strings_can_be_null=True,
                ),
            )
            for batch in reader:
                yield batch.to_pydict()
        return
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        for batch in pq.ParquetFile(fh).iter_batches(batch_size=_BATCH_ROWS, columns=columns):
            yield batch.to_pydict()


class IndexRow(NamedTuple):
    """One index row, with the features the planner uses."""

    url: str
    host: str
    domain: str
    language: str  # normalised first detected language
    content_languages: str
    mime: str
    status: Optional[int]
    warc_filename: str
    offset: int
    length: int
    features: tuple[str, ...]


def index_rows(columns: Mapping[str, list]) -> Iterator[IndexRow]:
    """The rows of one batch, each with its features; columns the index lacks are
    derived from ``url``."""
    n = len(columns["url"])
    empty = [None] * n
    get = lambda name: columns.get(name, empty)  # noqa: E731
    for url, host, domain, tld, path, mime, langs, status, name, offset, length in zip(
        columns["url"],
        get("url_host_name"),
        get("url_host_registered_domain"),
        get("url_host_tld"),
        get("url_path"),
        get("content_mime_detected"),
        get("content_languages"),
        get("fetch_status"),
        columns["warc_filename"],
        columns["warc_record_offset"],
        columns["warc_record_length"],
    ):
        url = url or ""
        host = (host or sources.host_of(url)).lower()
        domain = (domain or sources.registered_domain(host)).lower()
        tld = (tld or sources.tld_of(host)).lower()
        language = sources.first_language(langs)
        mime = sources.normalise_mime(mime)
        words = sources.path_words(path if path is not None else sources.path_of(url))
        yield IndexRow(
            url=url,
            host=host,
            domain=domain,
            language=language,
            content_languages=langs or "",
            mime=mime,
            status=None if status is None else int(status),
            warc_filename=name or "",
            offset=-1 if offset is None else int(offset),
            length=0 if length is None else int(length),
            features=tuple(sources.feature_keys(tld, language, mime, words)),
        )


def _in(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of ``keys`` are in the sorted array ``sorted_keys`` (vectorised)."""
    if sorted_keys.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    at = np.searchsorted(sorted_keys, keys)
    at[at == sorted_keys.size] = 0
    return sorted_keys[at] == keys


def _pointer_hashes(rows: Sequence[IndexRow]) -> np.ndarray:
    return np.fromiter((sources.key_hash(sources.pointer_key(r.warc_filename, r.offset)) for r in rows), np.int64, len(rows))


class _IndexFiles(beam.PTransform):
    """Index patterns -> matched file paths, spread over workers."""

    def __init__(self, patterns: Sequence[str]):
        super().__init__()
        self._patterns = list(patterns)

    def expand(self, pbegin):
        return (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "Match" >> fileio.MatchAll(fileio.EmptyMatchTreatment.ALLOW)
            | "Paths" >> beam.Map(lambda metadata: metadata.path)
            | "Spread" >> beam.Reshuffle()
        )


# -- runs --------------------------------------------------------------------------------


class PageRead(NamedTuple):
    """One page a run read: where it was, and what became of it."""

    pointer: int  # key_hash(pointer_key(warc file, offset))
    url: str
    success: bool
    kept: bool
    images: int
    referenced: int = 0  # image URLs (signal images.referenced of the images stage)
    retained: int = 0  # of those, kept after retrieval and dedup (referenced - images.removed)


def _image_signals(signals) -> tuple[int, int]:
    referenced = removed = 0
    for entry in signals or ():
        if entry["key"] == "images.referenced":
            referenced = int(entry["value"] or 0)
        elif entry["key"] == "images.removed":
            removed = int(entry["value"] or 0)
    return referenced, max(referenced - removed, 0)


class ReadRunTableFn(beam.DoFn):
    """A run's table file -> one ``PageRead`` per page (kept documents; decision rows
    about pages: rejected or failed)."""

    def __init__(self, min_images: int):
        self._min_images = min_images

    def process(self, item: tuple[str, str]) -> Iterator[PageRead]:
        table, path = item
        counter = beam.metrics.Metrics.counter(NAMESPACE, "pages_read")
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            parquet = pq.ParquetFile(fh)
            first = "num_images" if table == "documents" else "subject"
            columns = [first, "url", "warc_file", "warc_offset", "signals"]
            for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
                data = batch.to_pydict()
                for value, url, warc, offset, signals in zip(*(data[c] for c in columns)):
                    if table == "documents":
                        kept, images = True, int(value or 0)
                    elif value == SUBJECT_PAGE:
                        kept, images = False, 0
                    else:
                        continue  # image and pair rows are not pages
                    counter.inc()
                    pointer = _read_pointer(warc, offset)
                    success = kept and images >= self._min_images
                    yield PageRead(pointer, url or "", success, kept, images, *_image_signals(signals))


def _read_pointer(warc_file: Optional[str], offset: Optional[int]) -> int:
    return sources.key_hash(sources.pointer_key(warc_file or "", -1 if offset is None else offset))


def _table_files(item: tuple[str, str]) -> Iterator[tuple[str, str]]:
    run_dir, table = item
    pattern = posixpath.join(run_dir.rstrip("/"), table, "*.parquet") if "://" in run_dir else f"{run_dir.rstrip('/')}/{table}/*.parquet"
    for metadata in FileSystems.match([pattern])[0].metadata_list:
        yield table, metadata.path


class ReadRunPages(beam.PTransform):
    """Run directories -> ``PageRead`` records, one per page they read."""

    def __init__(self, run_dirs: Sequence[str], min_images: int):
        super().__init__()
        self._runs = list(run_dirs)
        self._min_images = min_images

    def expand(self, pbegin):
        tables = [(run, table) for run in self._runs for table in ("documents", "decisions")]
        return (
            pbegin
            | "Tables" >> beam.Create(tables)
            | "TableFiles" >> beam.FlatMap(_table_files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadTables" >> beam.ParDo(ReadRunTableFn(self._min_images))
        )


def _sorted_unique(values: list[int]) -> np.ndarray:
    return np.unique(np.asarray(values, dtype=np.int64))


# -- pass 1: what the runs measured, with the index's features ---------------------------


class MatchReadRowsFn(beam.DoFn):
    """An index file -> (pointer hash, IndexRow) for each row the runs read."""

    def process(self, path: str, read_pointers: np.ndarray) -> Iterator[tuple[int, IndexRow]]:
        matched = beam.metrics.Metrics.counter(NAMESPACE, "index_rows_read")
        for columns in plan_index_batches(path):
            rows = list(index_rows(columns))
            hashes = _pointer_hashes(rows)
            for i in np.flatnonzero(_in(read_pointers, hashes)):
                matched.inc()
                yield int(hashes[i]), rows[i]


def _observation(item: tuple[int, Mapping[str, list]]) -> Iterator[Observation]:
    """One observation per pointer read (the best outcome when several runs read it),
    with the index row's features, or the URL's when the index lacks the row."""
    _, joined = item
    pages = sorted(joined["page"], key=lambda p: (p.success, p.kept, p.images, p.url), reverse=True)
    if not pages:
        return
    page = pages[0]
    rows = list(joined["row"])
    if rows:
        row = min(rows, key=lambda r: (r.url, r.warc_filename, r.offset))
        domain, host, features = row.domain, row.host, row.features
    else:
        host = sources.host_of(page.url)
        domain = sources.registered_domain(host)
        words = sources.path_words(sources.path_of(page.url))
        # No language or MIME: a run knows the language of the pages it kept only.
        features = tuple(sources.feature_keys(sources.tld_of(host), "", "", words))
    yield Observation(domain, host, features, page.success, page.kept, page.images, page.referenced, page.retained)


class YieldStatsFn(beam.CombineFn):
    def create_accumulator(self) -> YieldStats:
        return YieldStats()

    def add_input(self, acc: YieldStats, obs: Observation) -> YieldStats:
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
            c = self._config
            params = BanditParams(c.prior_strength, c.feature_strength, c.domain_weight, c.seed)
            self._model, self._stats_id = YieldModel(stats, params), id(stats)
        return self._model

    def process(self, path: str, stats: YieldStats, read_pointers: np.ndarray, read_urls: np.ndarray):
        model = self._model_for(stats)
        seed = self._config.seed
        metrics = beam.metrics.Metrics
        total, candidates = metrics.counter(NAMESPACE, "index_rows"), metrics.counter(NAMESPACE, "candidates")
        for columns in plan_index_batches(path):
            rows = list(index_rows(columns))
            total.inc(len(rows))
            keep = ~_in(read_pointers, _pointer_hashes(rows))
            self._skipped("already_read", len(rows) - int(keep.sum()))
            if self._config.skip_read_urls and read_urls.size:
                urls = np.fromiter((sources.url_hash(r.url) for r in rows), np.int64, len(rows))
                again = keep & _in(read_urls, urls)
                self._skipped("url_read", int(again.sum()))
                keep &= ~again
            chosen = []
            for i in np.flatnonzero(keep):
                row = rows[i]
                why = self._unreadable(row)
                if why:
                    self._skipped(why, 1)
                    continue
                chosen.append(row)
            if not chosen:
                continue
            scores, means = model.scores([r.domain for r in chosen], [r.host for r in chosen], [r.features for r in chosen])
            for row, score, mean in zip(chosen, scores.tolist(), means.tolist()):
                d = stats.domains.get(row.domain)
                candidates.inc()
                yield row.domain, Candidate(
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

    def _unreadable(self, row: IndexRow) -> str:
        if not row.warc_filename or row.offset < 0 or row.length <= 0:
            return "bad_pointer"
        if not row.domain:
            return "no_host"
        if row.status is not None and row.status != self._config.fetch_status:
            return "fetch_status"
        if row.mime and row.mime not in self._mimes:
            return "mime"
        return ""

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

    def _push(self, acc: dict[str, list], tag: str, c: Candidate) -> None:
        heap = acc.setdefault(tag, [])
        item = (rank(c), c)
        if len(heap) < self._limit(tag, c):
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)

    def add_input(self, acc: dict[str, list], element) -> dict[str, list]:
        for tag, c in self._tagged(element):
            self._push(acc, tag, c)
        return acc

    def merge_accumulators(self, accs) -> dict[str, list]:
        accs = iter(accs)
        merged = next(accs)
        for acc in accs:
            for tag, heap in acc.items():
                for _, c in heap:
                    self._push(merged, tag, c)
        return merged

    def extract_output(self, acc: dict[str, list]) -> dict[str, list[Candidate]]:
        return {tag: [c for _, c in sorted(heap, reverse=True)] for tag, heap in sorted(acc.items())}


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
        yield _ALL, c
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


def summary_path(output: str) -> str:
    """``pointers.parquet`` -> ``pointers.summary.json``, beside it."""
    base = output[: -len(".parquet")] if output.endswith(".parquet") else output
    return base + ".summary.json"


def pointers_table(chosen: Sequence[Candidate]) -> pa.Table:
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
    cap = domain_cap(budget, config.max_per_domain, config.max_domain_share)
    quotas = quota_counts(budget, config.languages)
    chosen = select(
        best.get(_ALL, []),
        {k: v for k, v in best.items() if k != _ALL},
        budget,
        cap,
        quotas,
        config.probe_pages,
        config.growth,
    )
    params = BanditParams(config.prior_strength, config.feature_strength, config.domain_weight, config.seed)
    summary = summarise(chosen, stats, budget, cap, quotas, config.languages, YieldModel(stats, params))
    summary.update(extra)
    sink = pa.BufferOutputStream()
    pq.write_table(pointers_table(chosen), sink, compression="zstd")
    _write_atomically(output, sink.getvalue().to_pybytes())
    _write_atomically(summary_path(output), (json.dumps(summary, indent=2, sort_keys=False) + "\n").encode())
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
            | "SortPointers" >> beam.Map(_sorted_unique)
        )
        read_urls = beam.pvalue.AsSingleton(
            pages
            | "UrlHashes" >> beam.Map(lambda page: sources.url_hash(page.url))
            | "AllUrls" >> beam.combiners.ToList()
            | "SortUrls" >> beam.Map(_sorted_unique)
        )

        # Pass 1: the index rows the runs read, joined to their outcomes.
        read_rows = (
            p
            | "IndexFilesRead" >> _IndexFiles(self._index)
            | "MatchReadRows" >> beam.ParDo(MatchReadRowsFn(), read_pointers)
        )
        stats = beam.pvalue.AsSingleton(
            {"page": pages | "KeyPages" >> beam.Map(lambda page: (page.pointer, page)), "row": read_rows}
            | "JoinReadRows" >> beam.CoGroupByKey()
            | "Observations" >> beam.FlatMap(_observation)
            | "AggregateYields" >> beam.CombineGlobally(YieldStatsFn())
        )

        # Pass 2: score what was not read; the best per domain, then overall.
        limits = {_ALL: budget + sum(quotas.values()), **{lang: 2 * n for lang, n in quotas.items()}}
        best = (
            p
            | "IndexFilesScore" >> _IndexFiles(self._index)
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
