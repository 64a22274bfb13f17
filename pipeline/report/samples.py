"""Samples of the run on the report page: kept documents rendered interleaved with
their images, and rejected or failed pages per reason with the start of their text."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional, Sequence

import duckdb

from mmcurate.pipeline.report import queries
from mmcurate.pipeline.report.markup import esc, fmt
from mmcurate.pipeline.report.thumbnails import image_lookup, placeholder
from mmcurate.pipeline.report.warc_page_text import page_text

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


HEADINGS_AND_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "pre")


def kept_samples(con: duckdb.DuckDBPyConnection, views: Sequence[str], directory: str, n: int, max_chars: int) -> str:
    """The first ``n`` kept documents by doc_id, each with its first ``max_chars``
    characters of text and its images in their places."""
    if "documents" not in views:
        return "<p>No documents table in this run.</p>"
    docs = queries.kept_documents(con, n)
    if not docs:
        return "<p>No document was kept.</p>"
    ids = {m["image_id"] for d in docs for m in (d["image_meta"] or []) if m and m.get("image_id")}
    data_urls = image_lookup(con, views, directory, ids)
    return "".join(_document(d, data_urls, max_chars) for d in docs)


def _document(d: dict[str, Any], data_urls: dict[str, str], max_chars: int) -> str:
    signals = {e["key"]: e["value"] for e in d["signals"] or []}
    facts = [f"language {esc(d['language'])} ({(d['language_score'] or 0):.2f})", f"{d['num_images']} images"]
    for key in ("content.word_count", "quality_score"):
        if signals.get(key) is not None:
            facts.append(f"{key} {signals[key]:.4g}")
    body, used = [], 0
    for position, (text, src, meta, tag) in enumerate(zip(d["texts"], d["images"], d["image_meta"], d["node_tags"])):
        if text is None:
            body.append(_image(src, meta or {}, data_urls))
            continue
        if position == 0 and repeats_title(text, tag, d["title"]):
            continue  # the header above already shows it
        if used >= max_chars:
            continue
        shown = text[: max_chars - used]
        used += len(shown)
        more = "…" if len(shown) < len(text) else ""
        element = tag if tag in HEADINGS_AND_BLOCKS else "p"
        body.append(f'<{element} class="node">{esc(shown)}{more}</{element}>')
    if used >= max_chars:
        body.append(f'<p class="cut">(text cut at {max_chars} characters)</p>')
    return (
        f'<article class="doc kept-doc" id="doc-{esc(d["doc_id"])}"><header><h3>{esc(d["title"] or d["url"])}</h3>'
        f'<div class="url"><code>{esc(d["url"])}</code></div><div class="facts">doc_id <code>{esc(d["doc_id"])}</code> · '
        f'{" · ".join(facts)}</div></header><div class="body">{"".join(body)}</div></article>'
    )


def _image(src: Optional[str], meta: dict[str, Any], data_urls: dict[str, str]) -> str:
    image_id = meta.get("image_id")
    caption = meta.get("caption") or meta.get("alt") or ""
    clip = f" · CLIP {meta['clip_score']:.3f}" if meta.get("clip_score") is not None else ""
    size = f" · {meta['width']}×{meta['height']}" if meta.get("width") else ""
    if image_id and image_id in data_urls:
        img = f'<img src="{data_urls[image_id]}" alt="{esc(meta.get("alt"))}" title="{esc(src)}">'
    else:
        img = placeholder(src, meta.get("alt"), "no bytes in the images table" if image_id else "not retrieved in this run")
    return f'<figure class="docimg">{img}<figcaption>{esc(caption)}<span class="meta">{size}{clip}</span></figcaption></figure>'


def rejected_samples(con: duckdb.DuckDBPyConnection, views: Sequence[str], per_reason: int, max_chars: int) -> str:
    """Up to ``per_reason`` rejected or failed pages per reason, with the start of each page's text."""
    if "decisions" not in views:
        return "<p>No decisions table in this run.</p>"
    rows = queries.rejected_pages(con, per_reason)
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
                measured = f"value {fmt(value)}" + (f" vs threshold {fmt(threshold)}" if threshold is not None else "")
            text = page_text(warc_file, offset, max_chars)
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

