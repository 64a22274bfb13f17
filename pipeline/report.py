"""``mmcurate report DIR``: one self-contained HTML page about a finished run.

``DIR/report.html`` shows the funnel (pages -> kept per stage, and the share of
pages each reason code removed), the distributions of the main signals for kept and
rejected pages with the run's thresholds drawn on them, a sample of kept documents
rendered interleaved with their images, a sample of rejected pages per reason (with
the start of each page's text, read back from its WARC record), image and error
decisions, and recycled pairs when the run wrote a ``pairs`` table.

The page needs no network when it is viewed: CSS is inline, the plots are SVG
written here, images are ``data:`` URLs made from the images table's bytes (or a
placeholder naming the URL when the run stored none), and a Content-Security-Policy
forbids the browser any other load. Thresholds come from the config stamped in
``manifest.json``.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import math
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

import duckdb

from mmcurate.pipeline import remote_output
from mmcurate.pipeline.inspect_cmd import OutputError, check_remote, connect, load_manifest
from mmcurate.pipeline.safety_summary import safety_html

REPORT = "report.html"
# The browser may load nothing but inline styles and data: images.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

KEPT_COLOUR = "#2e7d32"
REJECTED_COLOUR = "#c62828"
ERROR_COLOUR = "#424242"
THRESHOLD_COLOUR = "#1565c0"
# Reason segments of the funnel cycle through these (ColorBrewer Set2/Dark2 hues).
PALETTE = (
    "#e6550d", "#fdae6b", "#756bb1", "#bcbddc", "#d62728", "#e7969c", "#8c6d31", "#e7ba52",
    "#17becf", "#9edae5", "#ad494a", "#7b4173", "#ce6dbd", "#637939", "#b5cf6b", "#843c39",
)

# Inline images larger than this are re-encoded as a thumbnail to keep the page small.
MAX_INLINE_BYTES = 150_000
THUMBNAIL_SIDE = 320


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def config_value(manifest: Mapping[str, Any], path: str) -> Any:
    node: Any = manifest.get("config", {})
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def stage_ran(manifest: Mapping[str, Any], stage: str) -> bool:
    return bool(manifest.get("stages", {}).get(stage, {}).get("enabled"))


# ----------------------------------------------------------------------------- funnel


def funnel_rows(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per stage in funnel order: in, kept, each reason's count, errors."""
    rows = []
    for stage, entry in manifest.get("stages", {}).items():
        if not entry.get("enabled"):
            rows.append({"stage": stage, "enabled": False})
            continue
        rows.append(
            {
                "stage": stage,
                "enabled": True,
                "in": entry.get("in", 0),
                "kept": entry.get("kept", 0),
                "reasons": sorted(entry.get("rejected_by_reason", {}).items(), key=lambda kv: (-kv[1], kv[0])),
                "errors": sorted(entry.get("errors_by_type", {}).items(), key=lambda kv: (-kv[1], kv[0])),
                "seconds": entry.get("seconds"),
            }
        )
    return rows


def reason_colours(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    colours: dict[str, str] = {}
    for row in rows:
        for reason, _ in row.get("reasons", ()):
            colours.setdefault(reason, PALETTE[len(colours) % len(PALETTE)])
    return colours


def funnel_svg(manifest: Mapping[str, Any]) -> str:
    """Horizontal bars, one per stage, on one scale (all pages): the kept part, then
    a segment per reason code and one for errors."""
    rows = funnel_rows(manifest)
    colours = reason_colours(rows)
    pages = max(1, manifest.get("totals", {}).get("pages", 0) or max((r.get("in", 0) for r in rows), default=1))
    label_w, bar_w, row_h, top = 90, 560, 30, 24
    width = label_w + bar_w + 130
    height = top + row_h * len(rows) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="funnel-plot" class="plot" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="funnel: pages in and kept per stage">',
        f'<text x="{label_w}" y="14" class="axis">0</text>',
        f'<text x="{label_w + bar_w}" y="14" class="axis" text-anchor="end">{pages} pages</text>',
    ]
    scale = bar_w / pages
    for i, row in enumerate(rows):
        y = top + i * row_h
        parts.append(f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end" class="stage">{esc(row["stage"])}</text>')
        if not row["enabled"]:
            parts.append(f'<text x="{label_w}" y="{y + 17}" class="off">(off)</text>')
            continue
        x = float(label_w)
        segments = [("kept", row["kept"], KEPT_COLOUR, f'{row["stage"]}: kept {row["kept"]} of {row["in"]}')]
        for reason, n in row["reasons"]:
            segments.append(("rejected", n, colours[reason], f'{row["stage"]}: {reason} removed {n}'))
        for exc, n in row["errors"]:
            segments.append(("error", n, ERROR_COLOUR, f'{row["stage"]}: error {exc} {n}'))
        for kind, n, colour, title in segments:
            if not n:
                continue
            w = n * scale
            parts.append(
                f'<rect class="bar {kind}" data-stage="{esc(row["stage"])}" data-count="{n}" x="{x:.2f}" y="{y + 4}" '
                f'width="{max(w, 0.8):.2f}" height="{row_h - 8}" fill="{colour}"><title>{esc(title)}</title></rect>'
            )
            x += w
        parts.append(
            f'<text x="{x + 6:.2f}" y="{y + 17}" class="count">{row["kept"]} / {row["in"]} kept</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def funnel_legend_html(manifest: Mapping[str, Any]) -> str:
    """What each colour of the funnel means: kept, each reason code (the colour of
    its segment and of its swatch in the table), errors."""
    entries = [("kept", KEPT_COLOUR, "kept by the stage")]
    entries += [(reason, colour, "rejected: " + reason) for reason, colour in reason_colours(funnel_rows(manifest)).items()]
    entries.append(("error", ERROR_COLOUR, "failed with an exception (error rows)"))
    return "".join(
        f'<span class="key" data-key="{esc(key)}"><span class="swatch" style="background:{colour}"></span>'
        f"{esc(text)}</span>"
        for key, colour, text in entries
    )


def funnel_table(manifest: Mapping[str, Any]) -> str:
    rows = funnel_rows(manifest)
    colours = reason_colours(rows)
    pages = manifest.get("totals", {}).get("pages", 0) or 0
    out = [
        '<table id="funnel-table"><thead><tr><th>stage</th><th>in</th><th>kept</th><th>removed by</th>'
        "<th>pages</th><th>share of stage input</th><th>share of all pages</th><th>ms/page</th></tr></thead><tbody>"
    ]
    for row in rows:
        if not row["enabled"]:
            out.append(f'<tr class="off"><td>{esc(row["stage"])}</td><td colspan="7">off</td></tr>')
            continue
        ms = (1000 * row["seconds"] / row["in"]) if row.get("seconds") is not None and row["in"] else None
        removed = [(r, n, colours[r]) for r, n in row["reasons"]] + [(f"error: {e}", n, ERROR_COLOUR) for e, n in row["errors"]]
        span = max(1, len(removed))
        first = (
            f'<td rowspan="{span}">{esc(row["stage"])}</td><td rowspan="{span}" class="num">{row["in"]}</td>'
            f'<td rowspan="{span}" class="num">{row["kept"]}</td>'
        )
        tail = f'<td rowspan="{span}" class="num">{"" if ms is None else f"{ms:.2f}"}</td>'
        if not removed:
            out.append(f"<tr>{first}<td>—</td><td></td><td></td><td></td>{tail}</tr>")
            continue
        for j, (reason, n, colour) in enumerate(removed):
            cells = (
                f'<td><span class="swatch" style="background:{colour}"></span><code>{esc(reason)}</code></td>'
                f'<td class="num">{n}</td><td class="num">{100 * n / max(1, row["in"]):.1f}%</td>'
                f'<td class="num">{100 * n / max(1, pages):.1f}%</td>'
            )
            out.append(f"<tr>{first if j == 0 else ''}{cells}{tail if j == 0 else ''}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ----------------------------------------------------------------------- distributions


@dataclass
class Distribution:
    title: str
    kept: list[float]
    rejected: list[float]
    thresholds: list[tuple[float, str]] = field(default_factory=list)
    note: str = ""
    integer: bool = False
    # What one counted item is (the y axis counts them); the x axis is the title's measure.
    unit: str = "pages"


def _nice_bins(lo: float, hi: float, n: int, integer: bool) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    step = (hi - lo) / n
    if integer:
        step = max(1.0, math.ceil(step))
        lo = math.floor(lo)
        n = int(math.ceil((hi - lo) / step)) + (1 if (hi - lo) % step == 0 else 0)
        n = max(n, 1)
    return [lo + i * step for i in range(n + 1)]


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """About ``n`` round tick values (1, 2 or 5 times a power of ten apart) within [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 5, 10)), key=lambda candidate: abs(candidate - raw))
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _fmt(v: float) -> str:
    if v == int(v) and abs(v) < 1e9:
        return str(int(v))
    return f"{v:.3g}"


def histogram_svg(dist: Distribution, plot_id: str, bins: int = 30) -> str:
    """A histogram of kept (green) and rejected (red) pages, stacked, with a dashed
    vertical line per threshold; thresholds far off the data's range are named in a
    caption instead of squashing the plot."""
    values = dist.kept + dist.rejected
    lo, hi = min(values), max(values)
    span = max(hi - lo, 1e-9)
    drawn, beyond = [], []
    for value, label in dist.thresholds:
        if lo - span <= value <= hi + span:
            drawn.append((value, label))
        else:
            beyond.append((value, label))
    lo = min([lo] + [v for v, _ in drawn])
    hi = max([hi] + [v for v, _ in drawn])
    edges = _nice_bins(lo, hi, bins, dist.integer)
    n_bins = len(edges) - 1
    step = edges[1] - edges[0]

    def bucket(v: float) -> int:
        return min(n_bins - 1, max(0, int((v - edges[0]) / step)))

    kept_counts, rej_counts = [0] * n_bins, [0] * n_bins
    for v in dist.kept:
        kept_counts[bucket(v)] += 1
    for v in dist.rejected:
        rej_counts[bucket(v)] += 1
    peak = max(1, max(k + r for k, r in zip(kept_counts, rej_counts)))
    left, right, top, plot_h = 58, 16, 10, 150
    plot_w = 400
    below = 46  # x tick labels and the x axis title
    width, height = left + plot_w + right, top + plot_h + below + 14 * len(drawn)
    x_of = lambda v: left + (v - edges[0]) / (edges[-1] - edges[0]) * plot_w  # noqa: E731
    bar_w = plot_w / n_bins
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{plot_id}" class="plot hist" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" class="axisline"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" class="axisline"/>',
    ]
    # Ticks: counts on the y axis, the measure on the x axis; then both axis titles.
    for count in nice_ticks(0, peak, 4, integer=True):
        y = top + plot_h - count / peak * plot_h
        parts.append(f'<line x1="{left - 4}" y1="{y:.2f}" x2="{left}" y2="{y:.2f}" class="axisline tick"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.2f}" text-anchor="end" class="axis ytick">{_fmt(count)}</text>')
    for value in nice_ticks(edges[0], edges[-1], 6, integer=dist.integer):
        x = x_of(value)
        parts.append(f'<line x1="{x:.2f}" y1="{top + plot_h}" x2="{x:.2f}" y2="{top + plot_h + 4}" class="axisline tick"/>')
        parts.append(f'<text x="{x:.2f}" y="{top + plot_h + 15}" text-anchor="middle" class="axis xtick">{_fmt(value)}</text>')
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 32}" text-anchor="middle" class="axistitle xtitle">'
        f"{esc(dist.title)}</text>"
    )
    parts.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" class="axistitle ytitle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{esc(dist.unit)}</text>'
    )
    for i in range(n_bins):
        x = left + i * bar_w
        hk = kept_counts[i] / peak * plot_h
        hr = rej_counts[i] / peak * plot_h
        span_txt = f"{_fmt(edges[i])}–{_fmt(edges[i + 1])}"
        if kept_counts[i]:
            parts.append(
                f'<rect class="kept" x="{x:.2f}" y="{top + plot_h - hk:.2f}" width="{max(bar_w - 1, 0.5):.2f}" '
                f'height="{hk:.2f}" fill="{KEPT_COLOUR}"><title>{span_txt}: {kept_counts[i]} kept</title></rect>'
            )
        if rej_counts[i]:
            parts.append(
                f'<rect class="rejected" x="{x:.2f}" y="{top + plot_h - hk - hr:.2f}" width="{max(bar_w - 1, 0.5):.2f}" '
                f'height="{hr:.2f}" fill="{REJECTED_COLOUR}" opacity="0.75"><title>{span_txt}: {rej_counts[i]} rejected</title></rect>'
            )
    for j, (value, label) in enumerate(drawn):
        x = x_of(value)
        parts.append(
            f'<line class="threshold" x1="{x:.2f}" y1="{top}" x2="{x:.2f}" y2="{top + plot_h}" stroke="{THRESHOLD_COLOUR}" '
            f'stroke-dasharray="4 3" stroke-width="1.5"><title>{esc(label)} = {_fmt(value)}</title></line>'
        )
        parts.append(
            f'<text x="{left}" y="{top + plot_h + below + 14 * j}" class="thr">┆ {esc(label)} = {_fmt(value)}</text>'
        )
    parts.append("</svg>")
    caption = [f"{len(dist.kept)} kept, {len(dist.rejected)} rejected {esc(dist.unit)}"]
    if beyond:
        caption.append("beyond the plot: " + ", ".join(f"{esc(l)} = {_fmt(v)}" for v, l in beyond))
    if dist.note:
        caption.append(esc(dist.note))
    return (
        f'<figure class="dist"><figcaption><b>{esc(dist.title)}</b></figcaption>{"".join(parts)}'
        f'<div class="caption">{"; ".join(caption)}</div></figure>'
    )


def bars_svg(title: str, counts: Sequence[tuple[str, int]], plot_id: str, note: str = "") -> str:
    """Horizontal bars of a categorical count (e.g. kept documents by language)."""
    peak = max([n for _, n in counts] or [1])
    row_h, label_w, bar_w = 18, 70, 300
    height = row_h * len(counts) + 6
    width = label_w + bar_w + 50
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{plot_id}" class="plot bars" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">'
    ]
    for i, (name, n) in enumerate(counts):
        y = 3 + i * row_h
        w = n / peak * bar_w
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" class="stage">{esc(name)}</text>')
        parts.append(
            f'<rect class="kept" x="{label_w}" y="{y + 2}" width="{max(w, 0.8):.2f}" height="{row_h - 4}" fill="{KEPT_COLOUR}">'
            f"<title>{esc(name)}: {n}</title></rect>"
        )
        parts.append(f'<text x="{label_w + w + 4:.2f}" y="{y + 13}" class="count">{n}</text>')
    parts.append("</svg>")
    caption = f'<div class="caption">{esc(note)}</div>' if note else ""
    return f'<figure class="dist"><figcaption><b>{esc(title)}</b></figcaption>{"".join(parts)}{caption}</figure>'


def _signal_values(con: duckdb.DuckDBPyConnection, views: Sequence[str], table: str, key: str) -> list[float]:
    if table not in views:
        return []
    where = "WHERE subject = 'page' AND kind = 'rejected'" if table == "decisions" else ""
    rows = con.execute(
        f"SELECT e.value FROM (SELECT unnest(signals) AS e FROM {table} {where}) WHERE e.key = ? AND e.value IS NOT NULL",
        [key],
    ).fetchall()
    return [float(v) for (v,) in rows if math.isfinite(v)]


def _thresholds(manifest: Mapping[str, Any], specs: Iterable[tuple[str, str, Optional[str]]]) -> list[tuple[float, str]]:
    """(config path, label, the stage or sub-section whose `enabled` gates it)."""
    out = []
    for path, label, gate in specs:
        if gate is not None:
            if gate in manifest.get("stages", {}):
                if not stage_ran(manifest, gate):
                    continue
            elif config_value(manifest, gate) is False:
                continue
        value = config_value(manifest, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((float(value), label or path))
    return out


def distributions(con: duckdb.DuckDBPyConnection, views: Sequence[str], manifest: Mapping[str, Any]) -> list[str]:
    figures: list[str] = []
    heur = "heuristics"
    specs = [
        (
            "word count (content.word_count)",
            "content.word_count",
            [
                ("heuristics.min_words", "heuristics.min_words", heur),
                ("heuristics.gopher_quality.min_words", "gopher_quality.min_words", "heuristics.gopher_quality.enabled"),
                ("heuristics.gopher_quality.max_words", "gopher_quality.max_words", "heuristics.gopher_quality.enabled"),
                ("heuristics.obelics.min_words", "obelics.min_words", "heuristics.obelics.enabled"),
                ("heuristics.obelics.max_words", "obelics.max_words", "heuristics.obelics.enabled"),
            ],
            True,
        ),
        (
            "language ID score (language.score)",
            "language.score",
            [("heuristics.language.min_score", "language.min_score", heur)],
            False,
        ),
        (
            "flagged-word ratio (safety.flagged_words.ratio)",
            "safety.flagged_words.ratio",
            [
                (
                    "heuristics.flagged_words.max_document_ratio",
                    "flagged_words.max_document_ratio",
                    "heuristics.flagged_words.enabled",
                )
            ],
            False,
        ),
        ("quality score (quality_score)", "quality_score", [("quality.min_score", "quality.min_score", "quality")], False),
        ("machine-translation score (mt_score)", "mt_score", [("quality.mt.max_score", "quality.mt.max_score", "quality")], False),
        ("weak-model text score (llm_score)", "llm_score", [("quality.llm.max_score", "quality.llm.max_score", "quality")], False),
    ]
    for i, (title, key, thr, integer) in enumerate(specs):
        kept = _signal_values(con, views, "documents", key)
        rejected = _signal_values(con, views, "decisions", key)
        if not kept and not rejected:
            continue
        figures.append(histogram_svg(Distribution(title, kept, rejected, _thresholds(manifest, thr), integer=integer), f"dist-{i}"))

    # Images per document: the final count for kept documents; for rejected pages the
    # last count a stage measured (after retrieval when the images stage ran).
    kept_images = []
    if "documents" in views:
        kept_images = [float(n) for (n,) in con.sql("SELECT num_images FROM documents").fetchall() if n is not None]
    rejected_images: list[float] = []
    if "decisions" in views:
        rows = con.sql(
            "SELECT coalesce(map_from_entries(signals)['images.count'], map_from_entries(signals)['content.image_count']) "
            "FROM decisions WHERE subject = 'page' AND kind = 'rejected'"
        ).fetchall()
        rejected_images = [float(v) for (v,) in rows if v is not None]
    if kept_images or rejected_images:
        thr = _thresholds(
            manifest,
            [
                ("heuristics.min_images", "heuristics.min_images", heur),
                ("heuristics.obelics.max_images", "obelics.max_images", "heuristics.obelics.enabled"),
                ("images.min_images", "images.min_images", "images"),
                ("images.max_images", "images.max_images", "images"),
            ],
        )
        thr = [(v, l) for v, l in thr if not (l.endswith("max_images") and v == 0)]
        figures.append(
            histogram_svg(Distribution("images per document", kept_images, rejected_images, thr, integer=True), "dist-images")
        )

    # CLIP image-text similarity, per image of the kept documents (the scoring stage).
    if "documents" in views:
        clip = [
            float(v)
            for (v,) in con.sql(
                "SELECT m.clip_score FROM (SELECT unnest(image_meta) AS m FROM documents) WHERE m IS NOT NULL AND m.clip_score IS NOT NULL"
            ).fetchall()
        ]
        if clip:
            thr = _thresholds(
                manifest,
                [
                    ("scoring.image_min_similarity", "scoring.image_min_similarity", "scoring"),
                    ("scoring.share_threshold", "scoring.share_threshold", "scoring"),
                ],
            )
            figures.append(
                histogram_svg(Distribution("CLIP image-text similarity (per kept image)", clip, [], thr, unit="images"), "dist-clip")
            )
    if "pairs" in views:
        similarity = [float(v) for (v,) in con.sql("SELECT similarity FROM pairs WHERE similarity IS NOT NULL").fetchall()]
        if similarity:
            thr = _thresholds(manifest, [("scoring.pair_min_similarity", "scoring.pair_min_similarity", "recycle")])
            figures.append(
                histogram_svg(Distribution("CLIP similarity of recycled pairs", similarity, [], thr, unit="pairs"), "dist-pairs")
            )

    if "documents" in views:
        langs = con.sql("SELECT coalesce(language, '(none)'), count(*) AS n FROM documents GROUP BY 1 ORDER BY n DESC, 1 LIMIT 25").fetchall()
        if langs:
            allowed = config_value(manifest, "heuristics.language.allowed") or []
            note = "allowed: " + (", ".join(allowed) if allowed else "any language") if stage_ran(manifest, "heuristics") else ""
            figures.append(bars_svg("kept documents by language", langs, "dist-language", note))
    return figures


# --------------------------------------------------------------------------- samples


def _image_data_url(data: Optional[bytes], fmt: Optional[str]) -> Optional[str]:
    if not data:
        return None
    mime = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}.get((fmt or "").upper())
    if mime is None or len(data) > MAX_INLINE_BYTES:
        try:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as im:
                im.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
                buf = io.BytesIO()
                im.convert("RGB").save(buf, "JPEG", quality=80)
            data, mime = buf.getvalue(), "image/jpeg"
        except Exception:  # noqa: BLE001 - bytes the browser cannot show either: a placeholder
            return None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _image_lookup(con: duckdb.DuckDBPyConnection, views: Sequence[str], directory: str, ids: set[str]) -> dict[str, str]:
    """image_id -> data: URL, for the ids the images table holds bytes (or a local path) of."""
    if "images" not in views or not ids:
        return {}
    found: dict[str, str] = {}
    placeholders = ", ".join("?" for _ in ids)
    rows = con.execute(
        f"SELECT image_id, format, bytes, path FROM images WHERE status = 'ok' AND image_id IN ({placeholders})", sorted(ids)
    ).fetchall()
    for image_id, fmt, data, path in rows:
        if image_id in found:
            continue
        if not data and path:
            local = path if os.path.isabs(path) else os.path.join(directory, path)
            if os.path.isfile(local):
                with open(local, "rb") as fh:
                    data = fh.read()
        url = _image_data_url(bytes(data) if data else None, fmt)
        if url:
            found[image_id] = url
    return found


def _placeholder(src: Optional[str], alt: Optional[str], why: str) -> str:
    return (
        f'<div class="imgph" title="{esc(why)}"><span class="phlabel">image not stored ({esc(why)})</span>'
        f'<code>{esc(src)}</code>{f"<em>alt: {esc(alt)}</em>" if alt else ""}</div>'
    )


_TITLE_SEPARATORS = (" - ", " – ", " — ", " | ", " · ", " :: ", ": ")


def repeats_title(text: str, tag: Optional[str], title: Optional[str]) -> bool:
    """Whether a document's first node is a heading that says its title again (the
    page's <h1> and <title> are often the same words, or the title adds the site
    name after a separator), so the sample shows the title once."""
    if tag not in ("h1", "h2", "h3") or not title or not text:
        return False
    heading, full = " ".join(text.split()).casefold(), " ".join(title.split()).casefold()
    return heading == full or any(full.startswith(heading + sep.casefold()) or full.endswith(sep + heading)
                                  for sep in _TITLE_SEPARATORS)


def kept_samples(con: duckdb.DuckDBPyConnection, views: Sequence[str], directory: str, n: int, max_chars: int) -> str:
    if "documents" not in views:
        return "<p>No documents table in this run.</p>"
    rel = con.execute(
        "SELECT doc_id, url, title, language, language_score, texts, images, image_meta, node_tags, num_images, signals "
        "FROM documents ORDER BY doc_id LIMIT ?",
        [n],
    )
    names = [d[0] for d in rel.description]
    docs = [dict(zip(names, r)) for r in rel.fetchall()]
    if not docs:
        return "<p>No document was kept.</p>"
    ids = {m["image_id"] for d in docs for m in (d["image_meta"] or []) if m and m.get("image_id")}
    data_urls = _image_lookup(con, views, directory, ids)
    out = []
    for d in docs:
        signals = {e["key"]: e["value"] for e in d["signals"] or []}
        facts = [f"language {esc(d['language'])} ({(d['language_score'] or 0):.2f})", f"{d['num_images']} images"]
        for key in ("content.word_count", "quality_score"):
            if signals.get(key) is not None:
                facts.append(f"{key} {signals[key]:.4g}")
        body, used = [], 0
        for position, (text, src, meta, tag) in enumerate(zip(d["texts"], d["images"], d["image_meta"], d["node_tags"])):
            if text is not None:
                if position == 0 and repeats_title(text, tag, d["title"]):
                    continue  # the header above already shows it
                if used >= max_chars:
                    continue
                shown = text[: max_chars - used]
                used += len(shown)
                more = "…" if len(shown) < len(text) else ""
                element = tag if tag in ("h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "pre") else "p"
                element = "li" if element == "li" else element
                body.append(f'<{element} class="node">{esc(shown)}{more}</{element}>')
                continue
            meta = meta or {}
            image_id = meta.get("image_id")
            caption = meta.get("caption") or meta.get("alt") or ""
            clip = f" · CLIP {meta['clip_score']:.3f}" if meta.get("clip_score") is not None else ""
            size = f" · {meta['width']}×{meta['height']}" if meta.get("width") else ""
            if image_id and image_id in data_urls:
                img = f'<img src="{data_urls[image_id]}" alt="{esc(meta.get("alt"))}" title="{esc(src)}">'
            else:
                img = _placeholder(src, meta.get("alt"), "no bytes in the images table" if image_id else "not retrieved in this run")
            body.append(
                f'<figure class="docimg">{img}<figcaption>{esc(caption)}<span class="meta">{size}{clip}</span></figcaption></figure>'
            )
        if used >= max_chars:
            body.append(f'<p class="cut">(text cut at {max_chars} characters)</p>')
        out.append(
            f'<article class="doc kept-doc" id="doc-{esc(d["doc_id"])}"><header><h3>{esc(d["title"] or d["url"])}</h3>'
            f'<div class="url"><code>{esc(d["url"])}</code></div><div class="facts">doc_id <code>{esc(d["doc_id"])}</code> · '
            f'{" · ".join(facts)}</div></header><div class="body">{"".join(body)}</div></article>'
        )
    return "".join(out)


def _page_text(warc_file: Optional[str], offset: Optional[int], max_chars: int) -> Optional[str]:
    """The start of a page's visible text, read back from its WARC record (local files only)."""
    if not warc_file or offset is None or "://" in warc_file or not os.path.isfile(warc_file):
        return None
    try:
        from lxml import html as lxml_html
        from warcio.archiveiterator import ArchiveIterator

        with open(warc_file, "rb") as fh:
            fh.seek(offset)
            for record in ArchiveIterator(fh):
                payload = record.content_stream().read(2_000_000)
                break
            else:
                return None
        if not payload.strip():
            return ""
        tree = lxml_html.fromstring(payload)
        for bad in tree.xpath("//script|//style|//noscript"):
            bad.drop_tree()
        text = " ".join(tree.text_content().split())
    except Exception:  # noqa: BLE001 - the sample then shows no text, and says so
        return None
    return text[:max_chars] + ("…" if len(text) > max_chars else "")


def rejected_samples(con: duckdb.DuckDBPyConnection, views: Sequence[str], per_reason: int, max_chars: int) -> str:
    if "decisions" not in views:
        return "<p>No decisions table in this run.</p>"
    rows = con.execute(
        "SELECT stage, kind, reason, doc_id, url, value, threshold, detail, warc_file, warc_offset, n FROM ("
        " SELECT *, row_number() OVER (PARTITION BY stage, kind, reason ORDER BY doc_id) AS rn,"
        " count(*) OVER (PARTITION BY stage, kind, reason) AS n FROM decisions WHERE subject = 'page')"
        " WHERE rn <= ? ORDER BY kind DESC, n DESC, stage, reason, doc_id",
        [per_reason],
    ).fetchall()
    if not rows:
        return "<p>No page was rejected or failed.</p>"
    groups: dict[tuple[str, str, str], list[tuple]] = defaultdict(list)
    for row in rows:
        groups[(row[0], row[1], row[2])].append(row)
    out = []
    for (stage, kind, reason), items in groups.items():
        total = items[0][10]
        cards = []
        for _, _, _, doc_id, url, value, threshold, detail, warc_file, offset, _ in items:
            measured = ""
            if value is not None:
                measured = f"value {_fmt(value)}" + (f" vs threshold {_fmt(threshold)}" if threshold is not None else "")
            text = _page_text(warc_file, offset, max_chars)
            text_html = (
                f'<div class="pagetext">{esc(text)}</div>' if text else '<div class="pagetext none">(page text not available)</div>'
            )
            cards.append(
                f'<div class="rej"><div class="url"><code>{esc(url)}</code></div><div class="facts">doc_id <code>{esc(doc_id)}</code>'
                f'{" · " + esc(measured) if measured else ""}{" · " + esc(detail) if detail else ""}</div>{text_html}</div>'
            )
        out.append(
            f'<section class="reason" data-reason="{esc(reason)}"><h3><code>{esc(reason)}</code> <small>{esc(stage)} · '
            f'{esc(kind)} · {total} page{"s" if total != 1 else ""}</small></h3>{"".join(cards)}</section>'
        )
    return "".join(out)


def image_decisions(con: duckdb.DuckDBPyConnection, views: Sequence[str], per_reason: int) -> str:
    if "decisions" not in views:
        return ""
    rows = con.execute(
        "SELECT stage, kind, reason, url, detail, n FROM ("
        " SELECT *, row_number() OVER (PARTITION BY stage, kind, reason ORDER BY url) AS rn,"
        " count(*) OVER (PARTITION BY stage, kind, reason) AS n FROM decisions WHERE subject = 'image')"
        " WHERE rn <= ? ORDER BY n DESC, reason, url",
        [per_reason],
    ).fetchall()
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
    total = con.sql("SELECT count(*) FROM pairs").fetchall()[0][0]
    rel = con.execute("SELECT * FROM pairs ORDER BY 1 LIMIT ?", [n])
    names = [d[0] for d in rel.description]
    rows = [dict(zip(names, r)) for r in rel.fetchall()]
    if not rows:
        why = "" if stage_ran(manifest, "recycle") else " (the recycle stage did not run)"
        return f'<p id="no-pairs">the pairs table is empty{why}</p>'
    binary = [c for c in names if c == "bytes" or any(isinstance(r[c], (bytes, bytearray, memoryview)) for r in rows)]
    ids = {r["image_id"] for r in rows if r.get("image_id")}
    data_urls = _image_lookup(con, views, directory, ids)
    shown = [c for c in names if c not in binary and not isinstance(rows[0][c], (list, dict))]
    out = [f'<p>{total} pairs; the first {len(rows)}:</p><table id="pairs-table"><thead><tr><th>image</th>']
    out += [f"<th>{esc(c)}</th>" for c in shown]
    out.append("</tr></thead><tbody>")
    for r in rows:
        url = None
        for c in binary:
            if r[c]:
                url = _image_data_url(bytes(r[c]), r.get("format"))
                break
        if url is None and r.get("image_id"):
            url = data_urls.get(r["image_id"])
        cell = f'<img class="thumb" src="{url}" alt="{esc(r.get("caption"))}">' if url else _placeholder(r.get("url"), r.get("caption"), "no bytes")
        out.append(f"<tr><td>{cell}</td>" + "".join(f"<td>{esc(_fmt(r[c]) if isinstance(r[c], float) else r[c])}</td>" for c in shown) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# --------------------------------------------------------------------------- sources

SOURCE_MIN_PAGES = 3  # domains with fewer pages read are left out of top/bottom


# The pointer key of filters.sources.pointer_key (WARC base name ':' offset), in SQL.
_POINTER_SQL = "regexp_replace({file}, '^.*/', '') || ':' || CAST({offset} AS VARCHAR)"
# The host of a URL, lower case (no user, port, path).
_HOST_SQL = r"lower(regexp_extract(url, '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^:/?#]*)', 1))"


def _index_languages(con: duckdb.DuckDBPyConnection, manifest: Mapping[str, Any]) -> bool:
    """Loads ``_source_languages(key, content_languages)`` from the CC-index pointer
    files a run read by ``run --index`` (when they are readable and have
    ``content_languages``); True when any row was loaded."""
    files = (manifest.get("index") or {}).get("files") or []
    selects = []
    for pattern in files:
        reader = "read_csv_auto" if pattern.lower().endswith((".csv", ".csv.gz", ".tsv")) else "read_parquet"
        select = (
            f"SELECT {_POINTER_SQL.format(file='warc_filename', offset='warc_record_offset')} AS key, content_languages "
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


def source_yields(con: duckdb.DuckDBPyConnection, views: Sequence[str], manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Per registered domain and per language: pages read, pages that became
    documents with >= 1 image, images in them. DuckDB groups the pages by host and
    language; hosts become registered domains (Public Suffix List) here."""
    from mmcurate.filters.sources import first_language, normalise_language, registered_domain

    parts = []
    if "documents" in views:
        parts.append("SELECT url, warc_file, warc_offset, coalesce(num_images, 0) AS images, language FROM documents")
    if "decisions" in views:
        parts.append("SELECT url, warc_file, warc_offset, 0, NULL FROM decisions WHERE subject = 'page'")
    if not parts:
        return {"domains": [], "languages": [], "language_source": None}
    by_index = _index_languages(con, manifest)
    pages = f"SELECT {_HOST_SQL} AS host, images, language, " + _POINTER_SQL.format(file="warc_file", offset="warc_offset")
    pages += f" AS key FROM ({' UNION ALL '.join(parts)})"
    if by_index:
        # first() of the index rows of one pointer (a pointer listed twice is read once)
        language = "(SELECT first(content_languages) FROM _source_languages s WHERE s.key = p.key)"
    else:
        language = "CASE WHEN images >= 1 THEN language END"
    grouped = con.execute(
        f"SELECT host, {language} AS lang, count(*), count(*) FILTER (WHERE images >= 1), sum(images) "
        f"FROM ({pages}) p GROUP BY ALL"
    ).fetchall()
    domains: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    languages: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for host, lang, n, successes, images in grouped:
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


# ------------------------------------------------------------------------------ page

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","Noto Sans CJK JP","Noto Sans CJK KR","Source Han Sans SC","PingFang SC","Hiragino Sans","Microsoft YaHei","Yu Gothic","Malgun Gothic",sans-serif;margin:0 auto;max-width:1100px;padding:0 20px 60px;color:#222}
h1{margin:18px 0 4px}h2{margin-top:34px;border-bottom:1px solid #ddd;padding-bottom:4px}
code{font:12px ui-monospace,Menlo,Consolas,"Noto Sans Mono CJK SC","Noto Sans Mono",monospace;word-break:break-all}
table{border-collapse:collapse;margin:10px 0}td,th{border:1px solid #ddd;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.off td{color:#999}
.summary td:first-child{color:#666}.ok{color:#2e7d32;font-weight:600}.bad{color:#c62828;font-weight:600}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;vertical-align:middle}
svg.plot text{font-size:11px;font-family:inherit;fill:#333}svg .axistitle{fill:#555;font-style:italic}svg.plot .off{fill:#999;font-style:italic}
svg.plot .stage{font-weight:600}svg .axisline{stroke:#888}svg .thr{fill:#1565c0}
.dists{display:flex;flex-wrap:wrap;gap:18px}figure.dist{margin:0;padding:8px;border:1px solid #eee}
.caption{color:#666;font-size:12px;max-width:460px}
article.doc{border:1px solid #ddd;border-radius:6px;margin:14px 0;padding:10px 14px}
article.doc header h3{margin:0}.body h1,.body h2,.body h3{font-size:16px;margin:8px 0}.url{color:#555}.facts{color:#666;font-size:12px;margin:2px 0 6px}
figure.docimg{margin:8px 0;padding:0}figure.docimg img{max-width:320px;max-height:320px;border:1px solid #ccc}
figure.docimg figcaption{font-size:12px;color:#555}.meta{color:#999}
.imgph{display:inline-block;border:1px dashed #aaa;background:#fafafa;padding:8px;max-width:420px;font-size:12px}
.imgph code,.imgph em{display:block}.phlabel{color:#888}
section.reason{margin:12px 0}section.reason h3{margin:6px 0;font-size:15px}
.rej{border-left:3px solid #c62828;padding:4px 10px;margin:6px 0;background:#fffafa}
.pagetext{font-size:12px;color:#444;margin-top:4px}.pagetext.none{color:#999}
img.thumb{max-width:160px;max-height:160px}.legend .key{margin-right:14px;white-space:nowrap}
.legend{line-height:1.9}
"""


def _summary(manifest: Mapping[str, Any], views: Sequence[str], con: duckdb.DuckDBPyConnection) -> str:
    totals = manifest.get("totals", {})
    conserved = totals.get("conserved")
    check = '<span class="ok">conservation holds</span>' if conserved else '<span class="bad">conservation does NOT hold</span>'
    tables = ", ".join(f"{v} ({con.execute(f'SELECT count(*) FROM {v}').fetchall()[0][0]} rows)" for v in views)
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
    """The report page for the run in ``directory``, as a string (``source``: the
    directory to name on the page, when ``directory`` is a local copy of it)."""
    manifest = load_manifest(directory)
    con, views = connect(directory)
    try:
        funnel_legend = funnel_legend_html(manifest)
        dists = distributions(con, views, manifest)
        sections = [
            f"<h1>mmcurate run report</h1><p>Output directory <code>{esc(source or os.path.abspath(directory))}</code></p>",
            _summary(manifest, views, con),
            '<h2 id="funnel">Funnel</h2><p>Pages entering each stage, on one scale: the part kept (green), and a segment '
            "per reason code for what the stage removed, coloured as in the legend (hover for counts). The table gives "
            "each reason's share of the stage's input and of all pages.</p>",
            f'<div class="legend">{funnel_legend}</div>',
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
            pairs_section(con, views, directory, manifest, 24),
            '<h2 id="sources">Sources</h2>',
            sources_section(con, views, manifest),
        ]
    finally:
        con.close()
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>mmcurate report {esc(manifest.get('run_id'))}</title><style>{STYLE}</style></head><body>"
        + "".join(sections)
        + "</body></html>\n"
    )


def write_report(directory: str, **kwargs: Any) -> str:
    """Writes ``directory/report.html`` (``directory`` local or on any Beam
    filesystem) and returns its path."""
    check_remote(directory)
    with remote_output.local_copy(directory) as local:
        page = render(local, source=directory if local != directory else "", **kwargs).encode("utf-8")
    path = remote_output.join(directory, REPORT)
    remote_output.write_bytes(path, page, "text/html")
    return path


def cmd_report(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mmcurate report",
        description="Write DIR/report.html: one self-contained page (no network when viewed) with the funnel, signal "
        "distributions with thresholds, and samples of kept and rejected documents.",
    )
    parser.add_argument("directory", metavar="DIR", help="a run's output directory (local, or gs://, s3://, ... "
                        "through Beam's filesystems)")
    parser.add_argument("--kept", type=int, default=8, help="kept documents to show (default 8)")
    parser.add_argument("--per-reason", type=int, default=3, help="rejected pages to show per reason (default 3)")
    parser.add_argument("--max-chars", type=int, default=1500, help="text characters shown per kept document (default 1500)")
    args = parser.parse_args(list(argv))
    try:
        path = write_report(
            args.directory, kept_sample=args.kept, rejected_per_reason=args.per_reason, max_chars=args.max_chars
        )
    except OutputError as exc:
        print(f"mmcurate report: {exc}", file=sys.stderr)
        return 2
    size = remote_output.size(path)
    print(f"report: {path} ({size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(cmd_report(sys.argv[1:]))
