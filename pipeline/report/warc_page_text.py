"""The start of a rejected page's visible text, read back from its WARC record, so
the report can show what a rule judged (the record by the read engine's range read,
``stages.engines.warc.range_reads``). Local WARC files only: a remote run's samples
say the text is not available."""

from __future__ import annotations

import os
from typing import Optional

from lxml import html as lxml_html

from mmcurate.stages.engines.warc.range_reads import record_payload_at

# The most of a record's payload read back (a page's text starts well before).
MAX_PAYLOAD = 2_000_000


def page_text(warc_file: Optional[str], offset: Optional[int], max_chars: int) -> Optional[str]:
    """The first ``max_chars`` characters of the visible text (tags, scripts and styles
    stripped) of the record at ``offset`` of ``warc_file``; None when it cannot be read."""
    if not warc_file or offset is None or "://" in warc_file or not os.path.isfile(warc_file):
        return None
    try:
        with open(warc_file, "rb") as fh:
            payload = record_payload_at(fh, offset, max_bytes=MAX_PAYLOAD, cut=True)
        if payload is None:
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
