"""A Common Crawl columnar-index extract as ``mmcurate plan`` reads it.

Parquet or CSV/TSV with the cc-index-table column names; ``url`` and the three
pointer columns are required, ``url_host_name``, ``url_host_registered_domain``,
``url_host_tld``, ``url_path``, ``content_mime_detected``, ``content_languages`` and
``fetch_status`` are used when present and derived from ``url`` when not. These
files are read by ``index_files`` (``stages/plan_inputs.py`` opens them through
Beam's filesystems); these functions check their columns and turn batches of
columns into ``IndexRow``s with the planner's features (``filters.sources``).
"""

from __future__ import annotations

from typing import Iterator, Mapping, NamedTuple, Optional, Sequence

import numpy as np
import pyarrow as pa

from mmcurate.filters import sources

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
# The integer columns, typed when read from CSV (``index_files.csv_batches``).
CSV_TYPES = {"warc_record_offset": pa.int64(), "warc_record_length": pa.int64(), "fetch_status": pa.int64()}


class BadPlanIndex(ValueError):
    """An index that is not Parquet/CSV or lacks a required column."""


def plan_columns(path: str, names: Sequence[str]) -> list[str]:
    """The columns ``plan`` reads of an index with columns ``names``; BadPlanIndex if
    one it needs is missing."""
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise BadPlanIndex(f"index {path}: no column {', '.join(missing)} (needs {', '.join(REQUIRED_COLUMNS)})")
    return [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in names]


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


def contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of ``keys`` are in the sorted array ``sorted_keys`` (vectorised)."""
    if sorted_keys.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    at = np.searchsorted(sorted_keys, keys)
    at[at == sorted_keys.size] = 0
    return sorted_keys[at] == keys


def pointer_hashes(rows: Sequence[IndexRow]) -> np.ndarray:
    """The pointer hash of each row (``sources.key_hash`` of its pointer key)."""
    return np.fromiter((sources.key_hash(sources.pointer_key(r.warc_filename, r.offset)) for r in rows), np.int64, len(rows))


def url_hashes(rows: Sequence[IndexRow]) -> np.ndarray:
    return np.fromiter((sources.url_hash(r.url) for r in rows), np.int64, len(rows))


def sorted_unique(values: list[int]) -> np.ndarray:
    """Hashes as a sorted int64 array without repeats (for ``contains``)."""
    return np.unique(np.asarray(values, dtype=np.int64))
