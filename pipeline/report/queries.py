"""Every DuckDB query the report makes over a run's tables (the views
``pipeline.finished_run.connect`` registers). Each returns plain Python values; a
query over a table the run did not write returns nothing (an empty list)."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import duckdb

Views = Sequence[str]

# The pointer key of filters.sources.pointer_key (WARC base name ':' offset), in SQL.
POINTER_SQL = "regexp_replace({file}, '^.*/', '') || ':' || CAST({offset} AS VARCHAR)"
# The host of a URL, lower case (no user, port, path).
HOST_SQL = r"lower(regexp_extract(url, '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^:/?#]*)', 1))"


def _rows_as_dicts(relation: duckdb.DuckDBPyConnection) -> tuple[list[str], list[dict[str, Any]]]:
    names = [d[0] for d in relation.description]
    return names, [dict(zip(names, r)) for r in relation.fetchall()]


def row_counts(con: duckdb.DuckDBPyConnection, views: Views) -> dict[str, int]:
    return {v: con.execute(f"SELECT count(*) FROM {v}").fetchall()[0][0] for v in views}


# ------------------------------------------------------------------------ signals


def signal_values(con: duckdb.DuckDBPyConnection, views: Views, table: str, key: str) -> list[float]:
    """The finite values of signal ``key``: of kept documents (``documents``) or of
    rejected pages as measured when they were rejected (``decisions``)."""
    if table not in views:
        return []
    where = "WHERE subject = 'page' AND kind = 'rejected'" if table == "decisions" else ""
    rows = con.execute(
        f"SELECT e.value FROM (SELECT unnest(signals) AS e FROM {table} {where}) WHERE e.key = ? AND e.value IS NOT NULL",
        [key],
    ).fetchall()
    return [float(v) for (v,) in rows if math.isfinite(v)]


def images_per_document(con: duckdb.DuckDBPyConnection, views: Views) -> tuple[list[float], list[float]]:
    """Images per document: the final count for kept documents; for rejected pages the
    last count a stage measured (after retrieval when the images stage ran)."""
    kept: list[float] = []
    if "documents" in views:
        kept = [float(n) for (n,) in con.sql("SELECT num_images FROM documents").fetchall() if n is not None]
    rejected: list[float] = []
    if "decisions" in views:
        rows = con.sql(
            "SELECT coalesce(map_from_entries(signals)['images.count'], map_from_entries(signals)['content.image_count']) "
            "FROM decisions WHERE subject = 'page' AND kind = 'rejected'"
        ).fetchall()
        rejected = [float(v) for (v,) in rows if v is not None]
    return kept, rejected


def clip_scores(con: duckdb.DuckDBPyConnection, views: Views) -> list[float]:
    """CLIP image-text similarity of each image of the kept documents."""
    if "documents" not in views:
        return []
    return [
        float(v)
        for (v,) in con.sql(
            "SELECT m.clip_score FROM (SELECT unnest(image_meta) AS m FROM documents) WHERE m IS NOT NULL AND m.clip_score IS NOT NULL"
        ).fetchall()
    ]


def pair_similarities(con: duckdb.DuckDBPyConnection, views: Views) -> list[float]:
    if "pairs" not in views:
        return []
    return [float(v) for (v,) in con.sql("SELECT similarity FROM pairs WHERE similarity IS NOT NULL").fetchall()]


def kept_languages(con: duckdb.DuckDBPyConnection, views: Views, limit: int = 25) -> list[tuple[str, int]]:
    """(language, kept documents), most documents first."""
    if "documents" not in views:
        return []
    return con.execute(
        "SELECT coalesce(language, '(none)'), count(*) AS n FROM documents GROUP BY 1 ORDER BY n DESC, 1 LIMIT ?", [limit]
    ).fetchall()


# ------------------------------------------------------------------------ samples


def kept_documents(con: duckdb.DuckDBPyConnection, n: int) -> list[dict[str, Any]]:
    """The first ``n`` kept documents by doc_id, with what the page shows of them."""
    return _rows_as_dicts(
        con.execute(
            "SELECT doc_id, url, title, language, language_score, texts, images, image_meta, node_tags, num_images, signals "
            "FROM documents ORDER BY doc_id LIMIT ?",
            [n],
        )
    )[1]


def rejected_pages(con: duckdb.DuckDBPyConnection, per_reason: int) -> list[tuple]:
    """Up to ``per_reason`` page decisions per (stage, kind, reason): (stage, kind,
    reason, doc_id, url, value, threshold, detail, warc_file, warc_offset, rows of
    that reason), the most frequent reasons first, rejections before errors."""
    return con.execute(
        "SELECT stage, kind, reason, doc_id, url, value, threshold, detail, warc_file, warc_offset, n FROM ("
        " SELECT *, row_number() OVER (PARTITION BY stage, kind, reason ORDER BY doc_id) AS rn,"
        " count(*) OVER (PARTITION BY stage, kind, reason) AS n FROM decisions WHERE subject = 'page')"
        " WHERE rn <= ? ORDER BY kind DESC, n DESC, stage, reason, doc_id",
        [per_reason],
    ).fetchall()


def image_decisions(con: duckdb.DuckDBPyConnection, per_reason: int) -> list[tuple]:
    """Up to ``per_reason`` image decisions per (stage, kind, reason): (stage, kind,
    reason, url, detail, rows of that reason)."""
    return con.execute(
        "SELECT stage, kind, reason, url, detail, n FROM ("
        " SELECT *, row_number() OVER (PARTITION BY stage, kind, reason ORDER BY url) AS rn,"
        " count(*) OVER (PARTITION BY stage, kind, reason) AS n FROM decisions WHERE subject = 'image')"
        " WHERE rn <= ? ORDER BY n DESC, reason, url",
        [per_reason],
    ).fetchall()


def pairs_sample(con: duckdb.DuckDBPyConnection, n: int) -> tuple[int, list[str], list[dict[str, Any]]]:
    """(all pairs, the column names, the first ``n`` rows) of the pairs table."""
    total = con.sql("SELECT count(*) FROM pairs").fetchall()[0][0]
    names, rows = _rows_as_dicts(con.execute("SELECT * FROM pairs ORDER BY 1 LIMIT ?", [n]))
    return total, names, rows


def stored_images(con: duckdb.DuckDBPyConnection, views: Views, ids: set[str]) -> list[tuple]:
    """(image_id, format, bytes, path) of the retrieved images among ``ids``."""
    if "images" not in views or not ids:
        return []
    placeholders = ", ".join("?" for _ in ids)
    return con.execute(
        f"SELECT image_id, format, bytes, path FROM images WHERE status = 'ok' AND image_id IN ({placeholders})", sorted(ids)
    ).fetchall()


# ------------------------------------------------------------------------ sources


def load_index_languages(con: duckdb.DuckDBPyConnection, manifest: Mapping[str, Any]) -> bool:
    """Loads ``_source_languages(key, content_languages)`` from the CC-index pointer
    files a run read by ``run --index`` (when they are readable and have
    ``content_languages``); True when any row was loaded."""
    files = (manifest.get("index") or {}).get("files") or []
    selects = []
    for pattern in files:
        reader = "read_csv_auto" if pattern.lower().endswith((".csv", ".csv.gz", ".tsv")) else "read_parquet"
        select = (
            f"SELECT {POINTER_SQL.format(file='warc_filename', offset='warc_record_offset')} AS key, content_languages "
            f"FROM {reader}('{pattern.replace(chr(39), chr(39) * 2)}')"
        )
        try:
            con.execute(f"{select} LIMIT 0")
        except duckdb.Error:
            continue  # moved, remote, or without content_languages: languages stay unknown
        selects.append(select)
    if not selects:
        return False
    con.execute(f"CREATE OR REPLACE TEMP TABLE _source_languages AS {' UNION ALL '.join(selects)}")
    return con.execute("SELECT count(*) FROM _source_languages").fetchall()[0][0] > 0


def pages_by_host(con: duckdb.DuckDBPyConnection, views: Views, by_index: bool) -> list[tuple]:
    """Pages read (kept and rejected) grouped by (host, language): (host, language,
    pages, pages that became documents with >= 1 image, images in them). The language
    is the index's (``load_index_languages`` first) when ``by_index``, else the
    document's language ID (None for rejected pages)."""
    parts = []
    if "documents" in views:
        parts.append("SELECT url, warc_file, warc_offset, coalesce(num_images, 0) AS images, language FROM documents")
    if "decisions" in views:
        parts.append("SELECT url, warc_file, warc_offset, 0, NULL FROM decisions WHERE subject = 'page'")
    if not parts:
        return []
    pages = f"SELECT {HOST_SQL} AS host, images, language, " + POINTER_SQL.format(file="warc_file", offset="warc_offset")
    pages += f" AS key FROM ({' UNION ALL '.join(parts)})"
    if by_index:
        # first() of the index rows of one pointer (a pointer listed twice is read once)
        language = "(SELECT first(content_languages) FROM _source_languages s WHERE s.key = p.key)"
    else:
        language = "CASE WHEN images >= 1 THEN language END"
    return con.execute(
        f"SELECT host, {language} AS lang, count(*), count(*) FILTER (WHERE images >= 1), sum(images) "
        f"FROM ({pages}) p GROUP BY ALL"
    ).fetchall()
