"""The report page: its sections in order, the run summary at the top, the CSS
(``report.css``, shipped with the package) and the Content-Security-Policy that
keeps the page from loading anything."""

from __future__ import annotations

import os
from importlib import resources
from typing import Any, Mapping, Sequence

from mmcurate.pipeline.report import queries
from mmcurate.pipeline.report.distributions import distributions
from mmcurate.pipeline.report.funnel import funnel_legend_html, funnel_svg, funnel_table
from mmcurate.pipeline.report.images_pairs import image_decisions, pairs_section
from mmcurate.pipeline.report.markup import esc
from mmcurate.pipeline.report.samples import kept_samples, rejected_samples
from mmcurate.pipeline.report.sources import sources_section
from mmcurate.pipeline.run_output import connect, load_manifest
from mmcurate.pipeline.safety_summary import safety_html

# The browser may load nothing but inline styles and data: images.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = resources.files(__package__).joinpath("report.css").read_text(encoding="utf-8")
# Recycled pairs shown.
PAIRS_SHOWN = 24


def summary_table(manifest: Mapping[str, Any], row_counts: Mapping[str, int]) -> str:
    """The run at a glance: id, runner and times, inputs, totals and whether
    conservation holds, stages, tables, config hash and versions."""
    totals = manifest.get("totals", {})
    conserved = totals.get("conserved")
    check = '<span class="ok">conservation holds</span>' if conserved else '<span class="bad">conservation does NOT hold</span>'
    tables = ", ".join(f"{v} ({n} rows)" for v, n in row_counts.items())
    versions = ", ".join(f"{k} {v}" for k, v in (manifest.get("versions") or {}).items())
    rows = [
        ("run", f"{esc(manifest.get('run_id'))} on {esc(manifest.get('runner'))}, {esc(manifest.get('started'))} → "
         f"{esc(manifest.get('finished'))} ({esc(manifest.get('wall_seconds'))} s)"),
        ("inputs", "<br>".join(f"<code>{esc(p)}</code>" for p in manifest.get("inputs", [])[:20])
         + (f"<br>… {len(manifest['inputs']) - 20} more" if len(manifest.get("inputs", [])) > 20 else "")),
        ("pages", f'<span id="totals">{totals.get("pages")} = kept {totals.get("kept")} + rejected {totals.get("rejected")} '
         f'+ errors {totals.get("errors")}</span> — {check}'),
        ("stages run", esc(", ".join(manifest.get("stages_run", [])))),
        ("stages off", esc(", ".join(manifest.get("stages_off", [])) or "none")),
        ("tables", esc(tables)),
        ("schema version", esc(manifest.get("schema_version"))),
        ("config sha256", f"<code>{esc(manifest.get('config_sha256'))}</code>"),
        ("versions", esc(versions)),
    ]
    if manifest.get("counter_mismatches"):
        rows.append(("counter mismatches", f'<span class="bad">{esc(manifest["counter_mismatches"])}</span>'))
    return '<table class="summary">' + "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows) + "</table>"


def render(
    directory: str, kept_sample: int = 8, rejected_per_reason: int = 3, max_chars: int = 1500, source: str = ""
) -> str:
    """The report page for the run in the local ``directory``, as a string
    (``source``: the directory to name on the page, when ``directory`` is a local
    copy of it)."""
    manifest = load_manifest(directory)
    con, views = connect(directory)
    try:
        sections = _sections(con, views, manifest, directory, source, kept_sample, rejected_per_reason, max_chars)
    finally:
        con.close()
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>mmcurate report {esc(manifest.get('run_id'))}</title><style>\n{STYLE}</style></head><body>"
        + "".join(sections)
        + "</body></html>\n"
    )


def _sections(
    con: Any, views: Sequence[str], manifest: Mapping[str, Any], directory: str, source: str,
    kept_sample: int, rejected_per_reason: int, max_chars: int,
) -> list[str]:
    dists = distributions(con, views, manifest)
    return [
        f"<h1>mmcurate run report</h1><p>Output directory <code>{esc(source or os.path.abspath(directory))}</code></p>",
        summary_table(manifest, queries.row_counts(con, views)),
        '<h2 id="funnel">Funnel</h2><p>Pages entering each stage, on one scale: the part kept (green), and a segment '
        "per reason code for what the stage removed, coloured as in the legend (hover for counts). The table gives "
        "each reason's share of the stage's input and of all pages.</p>",
        f'<div class="legend">{funnel_legend_html(manifest)}</div>',
        funnel_svg(manifest),
        funnel_table(manifest),
        '<h2 id="safety">Safety</h2><p>Adult URL lists, flagged words, NSFW images and personal-data redaction: '
        "their settings and what they removed or replaced in this run.</p>",
        safety_html(manifest),
        '<h2 id="distributions">Signal distributions</h2><p>Kept documents in green, rejected pages in red (their '
        "signals as measured when they were rejected), stacked; dashed blue lines are the run's thresholds from "
        "manifest.json.</p>",
        f'<div class="dists">{"".join(dists) if dists else "<p>No signals in this run.</p>"}</div>',
        f'<h2 id="kept">Kept documents (first {kept_sample} by doc_id)</h2>',
        kept_samples(con, views, directory, kept_sample, max_chars),
        f'<h2 id="rejected">Rejected and failed pages (up to {rejected_per_reason} per reason)</h2>'
        "<p>Page text is the start of the visible text of the page's WARC record (tags stripped), "
        "not the extracted main content.</p>",
        rejected_samples(con, views, rejected_per_reason, max_chars // 3),
        '<h2 id="image-decisions">Image decisions</h2>',
        image_decisions(con, views, rejected_per_reason),
        '<h2 id="pairs">Recycled pairs</h2>',
        pairs_section(con, views, directory, manifest, PAIRS_SHOWN),
        '<h2 id="sources">Sources</h2>',
        sources_section(con, views, manifest),
    ]
