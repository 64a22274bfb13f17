"""One page to one document: the page's facts and the extractor's nodes, title,
``hreflang`` and metadata, with what extraction measured (``extract.seconds``,
``extract.html_bytes``, the elements each boilerplate rule removed,
``extract.removed.<rule>``, the machine-translation markers of the raw HTML). HTML
over ``max_html_bytes`` is not parsed (``HtmlTooLarge``)."""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional

from mmcurate.filters.mt_page import page_markers, utf8_of
from mmcurate.schemas import Document, Page
from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.result import Extraction, with_canonical_urls

SIGNAL_SECONDS = "extract.seconds"
SIGNAL_HTML_BYTES = "extract.html_bytes"
SIGNAL_REMOVED = "extract.removed"  # + ".<rule>": elements a boilerplate rule removed


def removed_signal(rule: str) -> str:
    return f"{SIGNAL_REMOVED}.{rule}"


class HtmlTooLarge(Exception):
    """The page's HTML is larger than ``max_html_bytes``; it was not parsed."""


def page_metadata(page: Page, config: ExtractConfig) -> dict[str, str]:
    """The page's facts every document carries in ``metadata``."""
    return {
        "charset": page.charset,
        "charset_source": page.charset_source,
        "content_type": page.content_type,
        "http_status": str(page.http_status),
        "extractor": config.extractor,
    }


def extract_document(
    page: Page, config: ExtractConfig, extract: Callable[[str, str], Extraction]
) -> tuple[Document, Optional[Exception]]:
    """The document of ``page`` by ``extract(html, url)``, and None; or, when the page
    cannot be extracted, the document without nodes (its facts and signals, for the
    error row) and the exception."""
    started = time.perf_counter()
    shell = Document(doc_id=page.doc_id, url=page.url, provenance=page.provenance, metadata=page_metadata(page, config))
    utf8 = utf8_of(page.html)  # its size, and the machine-translation markers look at it
    signals: dict[str, float] = {SIGNAL_HTML_BYTES: float(len(utf8))}
    try:
        if signals[SIGNAL_HTML_BYTES] > config.max_html_bytes:
            raise HtmlTooLarge(
                f"{signals[SIGNAL_HTML_BYTES]:.0f} bytes of HTML, more than max_html_bytes={config.max_html_bytes}"
            )
        extraction = extract(page.html, page.url)
    except Exception as exc:  # one page's failure is one error row, never a crash
        signals[SIGNAL_SECONDS] = time.perf_counter() - started
        return shell.with_signals(signals), exc
    signals[SIGNAL_SECONDS] = time.perf_counter() - started
    signals.update({removed_signal(rule): float(n) for rule, n in extraction.removed.items()})
    # Machine-translation widgets and notices: only the raw HTML shows them.
    signals.update(page_markers(page.html, utf8))
    metadata = dict(extraction.metadata)
    metadata.update(shell.metadata)
    doc = dataclasses.replace(
        shell,
        nodes=with_canonical_urls(extraction.nodes),
        title=extraction.title,
        hreflang=tuple(extraction.hreflang),
        signals=signals,
        metadata=metadata,
    )
    return doc, None
