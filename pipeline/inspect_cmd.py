"""``mmcurate inspect DIR``: look into a run's output from the terminal.

* ``--doc ID`` prints one document as interleaved text with ``[image N]`` markers
  (or, for a page that did not make it, the decisions about it); ID is a doc_id, the
  page's URL or the start of a doc_id;
* ``--reason CODE`` lists the decision rows with that reason code (or exception
  type); a code with no rows gets the closest codes as a suggestion;
* ``--sql QUERY`` runs a DuckDB query over the output tables, registered as views
  named ``documents``, ``decisions``, ``images`` and ``pairs`` (each when present);
* with none of them, a summary of the run: tables, totals, decisions by reason.

The module is not called ``inspect`` so that it never shadows the standard library's.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import textwrap
from typing import Any, Iterable, Optional, Sequence, TextIO

import duckdb
import wcwidth

from mmcurate.pipeline.run_output import VIEW_TABLES, OutputError, connect, load_manifest, local_copy

# Line breaks and tabs in a value would break the table's columns: each becomes a space.
ONE_LINE = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: 2 for each wide (CJK) character (wcwidth)."""
    return wcwidth.width(text)


def _cut(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` terminal columns, with an ellipsis."""
    if wcwidth.width(text) <= width:
        return text
    # fillchar "": a wide character that straddles the edge is dropped, not padded.
    return wcwidth.clip(text, 0, width - 1, fillchar="") + "…"


def _cell(value: Any, width: int) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, (bytes, bytearray, memoryview)):
        text = f"<{len(value)} bytes>"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    return _cut(text.translate(ONE_LINE), width)


def format_rows(columns: Sequence[str], rows: Iterable[Sequence[Any]], max_width: int = 60) -> str:
    """A plain-text table aligned in terminal columns (CJK characters take two);
    cells wider than ``max_width`` columns are cut with an ellipsis."""
    cells = [[_cell(v, max_width) for v in row] for row in rows]
    widths = [max([display_width(c)] + [display_width(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(wcwidth.ljust(c, w) for c, w in zip(columns, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(wcwidth.ljust(c, w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.append(f"({len(cells)} row{'s' if len(cells) != 1 else ''})")
    return "\n".join(lines)


def run_sql(con: duckdb.DuckDBPyConnection, query: str, max_width: int = 60) -> str:
    relation = con.sql(query)
    if relation is None:  # a statement without a result (CREATE, SET, ...)
        return "ok"
    return format_rows(relation.columns, relation.fetchall(), max_width)


def _signal_line(signals: list[dict[str, Any]], keys: Sequence[str]) -> str:
    values = {e["key"]: e["value"] for e in signals or []}
    shown = [f"{k}={values[k]:.4g}" for k in keys if values.get(k) is not None]
    return ", ".join(shown)


MAIN_SIGNALS = ("content.word_count", "language.score", "quality_score", "images.count")


def format_document(con: duckdb.DuckDBPyConnection, views: Sequence[str], doc_id: str, width: int = 100) -> Optional[str]:
    """A kept document as text with image markers, or the decisions about a page
    that was not kept; None when the id is in neither table."""
    out: list[str] = []
    row = None
    if "documents" in views:
        rel = con.execute("SELECT * FROM documents WHERE doc_id = ?", [doc_id])
        names = [d[0] for d in rel.description]
        found = rel.fetchall()
        row = dict(zip(names, found[0])) if found else None
    if row is not None:
        out.append(f"doc_id    {row['doc_id']}")
        out.append(f"url       {row['url']}")
        if row.get("title"):
            out.append(f"title     {row['title']}")
        out.append(f"language  {row['language']} ({row['language_score'] or 0:.3f})")
        out.append(f"nodes     {row['num_texts']} text, {row['num_images']} image")
        out.append(f"warc      {row['warc_file']} @ {row['warc_offset']}")
        line = _signal_line(row["signals"], MAIN_SIGNALS)
        if line:
            out.append(f"signals   {line}")
        out.append("")
        n_image = 0
        for text, src, meta, tag in zip(row["texts"], row["images"], row["image_meta"], row["node_tags"]):
            if text is not None:
                prefix = "# " if tag in ("h1", "h2", "h3", "h4", "h5", "h6") else ""
                out.append(textwrap.fill(prefix + text, width=width) if text.strip() else "")
                out.append("")
                continue
            n_image += 1
            meta = meta or {}
            parts = [f"[image {n_image}: {src}"]
            if meta.get("width") and meta.get("height"):
                parts.append(f" {meta['width']}x{meta['height']}")
            if meta.get("image_id"):
                parts.append(f" sha256={meta['image_id'][:12]}")
            if meta.get("clip_score") is not None:
                parts.append(f" clip={meta['clip_score']:.3f}")
            if meta.get("alt"):
                parts.append(f' alt="{meta["alt"]}"')
            if meta.get("caption"):
                parts.append(f' caption="{meta["caption"]}"')
            out.append("".join(parts) + "]")
            out.append("")
    if "decisions" in views:
        rows = con.execute(
            "SELECT subject, stage, kind, reason, value, threshold, detail, url FROM decisions "
            "WHERE doc_id = ? ORDER BY stage, subject, reason",
            [doc_id],
        ).fetchall()
        if rows:
            if row is None:
                out.append(f"doc_id    {doc_id}")
                out.append(f"url       {rows[0][7]}")
                out.append("not kept; decisions:")
            else:
                out.append("decisions with this doc_id:")
            out.append(format_rows(["subject", "stage", "kind", "reason", "value", "threshold", "detail"], [r[:7] for r in rows]))
    return "\n".join(out).rstrip() + "\n" if out else None


def find_documents(con: duckdb.DuckDBPyConnection, views: Sequence[str], key: str) -> list[str]:
    """The doc_ids ``key`` names: a doc_id, a page URL (kept or not), or the start of
    a doc_id. Exact matches win over prefixes."""
    tables = [t for t in ("documents", "decisions") if t in views]
    if not tables or not key:
        return []

    def ids(where: str, arg: str) -> list[str]:
        union = " UNION ".join(f"SELECT doc_id FROM {t} WHERE {where}" for t in tables)
        return [r[0] for r in con.execute(f"SELECT DISTINCT doc_id FROM ({union}) ORDER BY doc_id", [arg] * len(tables)).fetchall()]

    for where, arg in (("doc_id = ?", key), ("url = ?", key)):
        found = ids(where, arg)
        if found:
            return found
    return ids("starts_with(doc_id, ?)", key)


def suggest_reason(con: duckdb.DuckDBPyConnection, reason: str) -> str:
    """A hint naming the reason codes closest to a mistyped ``reason`` (difflib), among
    the codes with rows in this run and every declared code."""
    from mmcurate.filters.reasons import ALL_REASONS

    present = [r for (r,) in con.execute("SELECT DISTINCT reason FROM decisions WHERE reason IS NOT NULL").fetchall()]
    close = difflib.get_close_matches(reason, sorted(set(present) | ALL_REASONS), n=3, cutoff=0.6)
    if close:
        named = [code if code in present else f"{code} (declared, no rows in this run)" for code in close]
        return "did you mean " + " or ".join(named) + "?"
    return "codes in this run: " + (", ".join(sorted(present)[:12]) or "none") + (" ..." if len(present) > 12 else "")


def format_reason(con: duckdb.DuckDBPyConnection, reason: str, limit: int) -> Optional[str]:
    total = con.execute("SELECT count(*) FROM decisions WHERE reason = ?", [reason]).fetchall()[0][0]
    if not total:
        return None
    rows = con.execute(
        "SELECT doc_id, subject, stage, kind, value, threshold, url, detail FROM decisions "
        "WHERE reason = ? ORDER BY stage, doc_id LIMIT ?",
        [reason, limit],
    ).fetchall()
    head = f"{reason}: {total} decision row{'s' if total != 1 else ''}" + (f" (first {limit})" if total > limit else "")
    return head + "\n" + format_rows(["doc_id", "subject", "stage", "kind", "value", "threshold", "url", "detail"], rows)


def format_summary(directory: str, con: duckdb.DuckDBPyConnection, views: Sequence[str]) -> str:
    manifest = load_manifest(directory)
    totals = manifest.get("totals", {})
    out = [
        f"run {manifest.get('run_id')}  ({manifest.get('runner')}, {manifest.get('finished')})",
        "pages {pages} = kept {kept} + rejected {rejected} + errors {errors}".format(**{k: totals.get(k, "?") for k in ("pages", "kept", "rejected", "errors")}),
        "views: " + ", ".join(f"{v} ({con.execute(f'SELECT count(*) FROM {v}').fetchall()[0][0]} rows)" for v in views),
        "",
    ]
    if "decisions" in views:
        rows = con.sql(
            "SELECT subject, stage, kind, reason, count(*) AS n FROM decisions GROUP BY ALL ORDER BY subject DESC, n DESC, reason"
        ).fetchall()
        out.append(format_rows(["subject", "stage", "kind", "reason", "rows"], rows))
    return "\n".join(out) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mmcurate inspect",
        description="Look into a run's output: one document, the decisions for one reason, or any DuckDB query "
        "over the tables (views: " + ", ".join(VIEW_TABLES) + ").",
        epilog="examples:\n"
        "  mmcurate inspect out --doc 5baf9a2093106e30ae486b399d897602\n"
        "  mmcurate inspect out --reason gopher.too_few_words\n"
        "  mmcurate inspect out --sql \"SELECT language, count(*) FROM documents GROUP BY 1\"\n"
        "  mmcurate inspect out --sql \"SELECT map_from_entries(signals)['quality_score'] AS q, url FROM documents ORDER BY q\"",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("directory", metavar="DIR", help="a run's output directory (local, or gs://, s3://, ... "
                        "through Beam's filesystems: its tables are then copied to a temporary directory)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--doc", metavar="ID", help="print a document as interleaved text with image markers; ID is a "
                      "doc_id, the page's URL, or the start of a doc_id")
    what.add_argument("--reason", metavar="CODE", help="list decision rows with this reason code (or exception type)")
    what.add_argument("--sql", metavar="QUERY", help="run a DuckDB query over the output tables")
    parser.add_argument("--limit", type=int, default=50, help="rows --reason lists (default 50)")
    parser.add_argument("--width", type=int, default=60, help="longest cell in a printed table (default 60)")
    return parser


def cmd_inspect(argv: Sequence[str], out: Optional[TextIO] = None) -> int:
    out = out or sys.stdout
    args = _parser().parse_args(list(argv))
    try:
        with local_copy(args.directory) as local:
            return _inspect(args, local, out)
    except OutputError as exc:
        print(f"mmcurate inspect: {exc}", file=sys.stderr)
        return 2


def _inspect(args: argparse.Namespace, directory: str, out: TextIO) -> int:
    con, views = connect(directory)
    try:
        if args.sql:
            try:
                out.write(run_sql(con, args.sql, args.width) + "\n")
            except duckdb.Error as exc:
                print(f"mmcurate inspect: {exc}", file=sys.stderr)
                return 1
        elif args.doc:
            matches = find_documents(con, views, args.doc)
            if len(matches) > 1:
                shown = ", ".join(matches[:10]) + (f" and {len(matches) - 10} more" if len(matches) > 10 else "")
                print(f"mmcurate inspect: {args.doc} names {len(matches)} documents: {shown}", file=sys.stderr)
                return 1
            text = format_document(con, views, matches[0]) if matches else None
            if text is None:
                print(f"mmcurate inspect: no document or decision with doc_id, URL or doc_id prefix {args.doc}",
                      file=sys.stderr)
                return 1
            out.write(text)
        elif args.reason:
            if "decisions" not in views:
                print("mmcurate inspect: this output has no decisions table", file=sys.stderr)
                return 1
            text = format_reason(con, args.reason, args.limit)
            if text is None:
                print(f"mmcurate inspect: no decision with reason {args.reason}; {suggest_reason(con, args.reason)}",
                      file=sys.stderr)
                return 1
            out.write(text + "\n")
        else:
            out.write(format_summary(directory, con, views))
    finally:
        con.close()
    return 0


if __name__ == "__main__":
    sys.exit(cmd_inspect(sys.argv[1:]))
