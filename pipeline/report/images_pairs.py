"""The image decisions section (rejected and failed images per reason, with
examples) and the recycled pairs section (a sample of the pairs table, each pair's
image inline) of the report page."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

import duckdb

from mmcurate.pipeline.report import queries
from mmcurate.pipeline.report.manifest_view import stage_ran
from mmcurate.pipeline.report.markup import esc, fmt
from mmcurate.pipeline.report.thumbnails import image_data_url, image_lookup, placeholder


def image_decisions(con: duckdb.DuckDBPyConnection, views: Sequence[str], per_reason: int) -> str:
    """A table of image reasons: stage, images, up to ``per_reason`` example URLs."""
    if "decisions" not in views:
        return ""
    rows = queries.image_decisions(con, per_reason)
    if not rows:
        return "<p>No image was rejected or failed.</p>"
    out = ['<table class="imgdec"><thead><tr><th>reason</th><th>stage</th><th>images</th><th>examples</th></tr></thead><tbody>']
    grouped: dict[tuple[str, str, str, int], list[tuple[str, str]]] = defaultdict(list)
    for stage, kind, reason, url, detail, n in rows:
        grouped[(reason, stage, kind, n)].append((url, detail))
    for (reason, stage, kind, n), examples in grouped.items():
        ex = "<br>".join(f"<code>{esc(u)}</code>{' — ' + esc(d) if d else ''}" for u, d in examples)
        out.append(f"<tr><td><code>{esc(reason)}</code></td><td>{esc(stage)} ({esc(kind)})</td><td class=\"num\">{n}</td><td>{ex}</td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def pairs_section(
    con: duckdb.DuckDBPyConnection, views: Sequence[str], directory: str, manifest: Mapping[str, Any], n: int
) -> str:
    """A sample of recycled pairs: every scalar column, and the image inline when the
    row carries its bytes or an image_id the images table holds."""
    if "pairs" not in views:
        return '<p id="no-pairs">no pairs table in this run</p>'
    total, names, rows = queries.pairs_sample(con, n)
    if not rows:
        why = "" if stage_ran(manifest, "recycle") else " (the recycle stage did not run)"
        return f'<p id="no-pairs">the pairs table is empty{why}</p>'
    binary = [c for c in names if c == "bytes" or any(isinstance(r[c], (bytes, bytearray, memoryview)) for r in rows)]
    ids = {r["image_id"] for r in rows if r.get("image_id")}
    data_urls = image_lookup(con, views, directory, ids)
    shown = [c for c in names if c not in binary and not isinstance(rows[0][c], (list, dict))]
    out = [f'<p>{total} pairs; the first {len(rows)}:</p><table id="pairs-table"><thead><tr><th>image</th>']
    out += [f"<th>{esc(c)}</th>" for c in shown]
    out.append("</tr></thead><tbody>")
    for r in rows:
        url = None
        for c in binary:
            if r[c]:
                url = image_data_url(bytes(r[c]), r.get("format"))
                break
        if url is None and r.get("image_id"):
            url = data_urls.get(r["image_id"])
        cell = f'<img class="thumb" src="{url}" alt="{esc(r.get("caption"))}">' if url else placeholder(r.get("url"), r.get("caption"), "no bytes")
        out.append(f"<tr><td>{cell}</td>" + "".join(f"<td>{esc(fmt(r[c]) if isinstance(r[c], float) else r[c])}</td>" for c in shown) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)
