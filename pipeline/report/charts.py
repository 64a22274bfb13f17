"""SVG charts of the report, drawn here so the page needs no script or network: a
histogram of kept and rejected items with threshold lines, and horizontal bars of
a categorical count. The colours are the page's (kept green, rejected red)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from mmcurate.pipeline.report.markup import esc, fmt

KEPT_COLOUR = "#2e7d32"
REJECTED_COLOUR = "#c62828"
ERROR_COLOUR = "#424242"
THRESHOLD_COLOUR = "#1565c0"


@dataclass
class Distribution:
    """One signal's values for kept and rejected items, and the thresholds to draw on its histogram."""

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
        parts.append(f'<text x="{left - 6}" y="{y + 4:.2f}" text-anchor="end" class="axis ytick">{fmt(count)}</text>')
    for value in nice_ticks(edges[0], edges[-1], 6, integer=dist.integer):
        x = x_of(value)
        parts.append(f'<line x1="{x:.2f}" y1="{top + plot_h}" x2="{x:.2f}" y2="{top + plot_h + 4}" class="axisline tick"/>')
        parts.append(f'<text x="{x:.2f}" y="{top + plot_h + 15}" text-anchor="middle" class="axis xtick">{fmt(value)}</text>')
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
        span_txt = f"{fmt(edges[i])}–{fmt(edges[i + 1])}"
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
            f'stroke-dasharray="4 3" stroke-width="1.5"><title>{esc(label)} = {fmt(value)}</title></line>'
        )
        parts.append(
            f'<text x="{left}" y="{top + plot_h + below + 14 * j}" class="thr">┆ {esc(label)} = {fmt(value)}</text>'
        )
    parts.append("</svg>")
    caption = [f"{len(dist.kept)} kept, {len(dist.rejected)} rejected {esc(dist.unit)}"]
    if beyond:
        caption.append("beyond the plot: " + ", ".join(f"{esc(l)} = {fmt(v)}" for v, l in beyond))
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

