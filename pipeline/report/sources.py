"""The sources section of the report: yield per registered domain (highest and
lowest) and multimodal share per language -- what ``mmcurate plan`` learns from a run."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

import duckdb

from mmcurate.filters.sources import first_language, normalise_language, registered_domain
from mmcurate.pipeline.report import queries
from mmcurate.pipeline.report.markup import esc

SOURCE_MIN_PAGES = 3  # domains with fewer pages read are left out of top/bottom


def source_yields(con: duckdb.DuckDBPyConnection, views: Sequence[str], manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Per registered domain and per language: pages read, pages that became
    documents with >= 1 image, images in them. DuckDB groups the pages by host and
    language; hosts become registered domains (Public Suffix List) here."""
    if "documents" not in views and "decisions" not in views:
        return {"domains": [], "languages": [], "language_source": None}
    by_index = queries.load_index_languages(con, manifest)
    domains: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    languages: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for host, lang, n, successes, images in queries.pages_by_host(con, views, by_index):
        counts = (n, successes, int(images or 0))
        for table, key in (
            (domains, (registered_domain(host) if host else "") or "(no host)"),
            (languages, (first_language(lang) if by_index else normalise_language(lang)) or "unknown"),
        ):
            if table is languages and not by_index and not successes:
                continue  # without the index, only documents have a language
            entry = table[key]
            for i, c in enumerate(counts if table is domains or by_index else (successes, successes, counts[2])):
                entry[i] += c

    def rows(table: Mapping[str, list[int]]) -> list[dict[str, Any]]:
        return [
            {"key": k, "pages": n, "multimodal": s, "share": s / n if n else 0.0, "images_per_document": i / s if s else None}
            for k, (n, s, i) in table.items()
        ]

    return {
        "domains": rows(domains),
        "languages": sorted(rows(languages), key=lambda r: (-r["pages"], r["key"])),
        "language_source": "index" if by_index else "documents",
    }


def _yield_table(table_id: str, label: str, rows: Sequence[Mapping[str, Any]]) -> str:
    out = [f'<table id="{table_id}"><thead><tr><th>{label}</th><th>pages read</th><th>documents with images</th>'
           "<th>share</th><th>images per document</th></tr></thead><tbody>"]
    for r in rows:
        ipd = "" if r["images_per_document"] is None else f"{r['images_per_document']:.1f}"
        out.append(f"<tr><td>{esc(r['key'])}</td><td>{r['pages']}</td><td>{r['multimodal']}</td>"
                   f"<td>{r['share']:.1%}</td><td>{ipd}</td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def sources_section(con: duckdb.DuckDBPyConnection, views: Sequence[str], manifest: Mapping[str, Any], n: int = 10) -> str:
    """Yield per registered domain (top and bottom) and multimodal share per language:
    what ``mmcurate plan`` learns from this run."""
    found = source_yields(con, views, manifest)
    domains = found["domains"]
    if not domains:
        return '<p id="no-sources">no pages in this run</p>'
    measured = [r for r in domains if r["pages"] >= SOURCE_MIN_PAGES]
    if len(measured) < n:
        measured = domains
    best = sorted(measured, key=lambda r: (-r["share"], -r["pages"], r["key"]))
    top = best[:n]
    bottom = [r for r in sorted(measured, key=lambda r: (r["share"], -r["pages"], r["key"])) if r not in top][:n]
    out = [
        f"<p>{len(domains)} registered domains; the share of pages read that became documents with at least one "
        f"image (domains with at least {SOURCE_MIN_PAGES} pages read, when there are {n} such). <code>mmcurate plan</code> "
        "learns from these figures which sources to read next (docs/sources.md).</p>",
        "<h3>Highest yield</h3>",
        _yield_table("sources-top", "domain", top),
    ]
    if bottom:
        out += ["<h3>Lowest yield</h3>", _yield_table("sources-bottom", "domain", bottom)]
    if found["language_source"] == "index":
        note = "Languages are the first of the CC index's <code>content_languages</code> of each page read."
    else:
        note = ("Languages of rejected pages are unknown to a run over whole WARC files, so this lists the documents "
                "with images per language (their language ID); a run by <code>run --index</code> over pointers with "
                "<code>content_languages</code> shows the share per language.")
    out += [f'<h3>Multimodal share per language</h3><p>{note}</p>', _yield_table("sources-languages", "language", found["languages"])]
    return "".join(out)
