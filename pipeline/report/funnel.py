"""The funnel: one bar per stage on one scale (kept, then a segment per reason code
and one for errors), the legend of its colours, and the table of what each reason
removed."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from mmcurate.pipeline.report.charts import ERROR_COLOUR, KEPT_COLOUR
from mmcurate.pipeline.report.manifest_view import funnel_rows
from mmcurate.pipeline.report.markup import esc

# Reason segments of the funnel cycle through these (ColorBrewer Set2/Dark2 hues).
PALETTE = (
    "#e6550d", "#fdae6b", "#756bb1", "#bcbddc", "#d62728", "#e7969c", "#8c6d31", "#e7ba52",
    "#17becf", "#9edae5", "#ad494a", "#7b4173", "#ce6dbd", "#637939", "#b5cf6b", "#843c39",
)


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

