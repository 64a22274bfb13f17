"""Settings of the extract stage: main content, images and page metadata.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mmcurate.stages.config.base import Section as _Section


class ExtractConfig(_Section):
    # "trafilatura" or a dotted path "package.module:callable" with the same
    # signature as mmcurate.stages.engines.extraction.trafilatura_adapter.extract_trafilatura.
    extractor: str = "trafilatura"
    # HTML larger than this is not parsed: an error row (HtmlTooLarge).
    max_html_bytes: int = Field(default=5 * 1024 * 1024, gt=0)
    # Per-document time limit. 0 runs in-process with no limit (for debugging).
    timeout_seconds: float = Field(default=20.0, ge=0)
    # How the limit is kept: "thread" extracts in the worker's process on a thread of
    # its own, stopped in place past the limit (a child process only after a page
    # that would not stop); "process" extracts every page in a child process that is
    # killed past the limit (sure to stop anything, at the cost of moving each page
    # and its result between processes and of a second interpreter per worker).
    isolation: Literal["thread", "process"] = "thread"
    # trafilatura's precision/recall trade-off: "precision", "recall" or "balanced".
    mode: Literal["precision", "recall", "balanced"] = "balanced"
    # Keep the text of tables in the main content (trafilatura's include_tables).
    include_tables: bool = True
    # trafilatura's fallback extractors (readability and jusText, compared with its
    # own result; off is its `fast` mode: "use faster heuristics and skip backup
    # extraction", trafilatura 2.3.1 bare_extraction). Off by default, ours: the
    # same extraction F1 on 23 real news pages with gold text (newspaper4k 0.9.6
    # tests/data, precision mode, every page identical; balanced mode one page
    # better) and on the labelled pages of benchmarks/bench_vs_datatrove.py, for
    # about half of trafilatura's time per page.
    fallback: bool = False
    # Images are placed from the page's DOM by position: those between the first and
    # last extracted text block always; with recover_images also those just before
    # or after the text (below) and the lead image.
    recover_images: bool = True
    # A dropped image before the first (after the last) extracted text block is
    # recovered when at most this much unextracted text (characters, whitespace
    # not counted) separates it from that block, inside the blocks' common ancestor.
    recover_lead_chars: int = Field(default=200, ge=0)
    # The same bound after the last extracted block (0: images after the text are not recovered).
    recover_trail_chars: int = Field(default=0, ge=0)
    # The lead image of a page (a header or hero image outside the block trafilatura
    # keeps): the image og:image / JSON-LD names, else the first large figure, before
    # the first extracted block. Logos and sitewide images never.
    lead_image: bool = True
    # How much page text (characters, whitespace not counted) may separate the lead
    # image from the first extracted block. Ours: room for a headline, a standfirst
    # and a byline.
    lead_image_max_chars: int = Field(default=1500, ge=0)
    # A lead figure with a declared side below this is not "large"; 150 px is
    # OBELICS's minimum image side, as nodes.min_declared_image_size.
    lead_image_min_size: int = Field(default=150, ge=0)
    # srcset / <picture>: the candidate a browser with this many device pixels per
    # CSS px loads (HTML's image source selection: the least dense candidate at or
    # above it, else the densest). Ours: 2 is the density of current phones and
    # HiDPI laptop screens, and the largest most sites publish (Wikipedia: 1.5x, 2x).
    srcset_density: float = Field(default=2.0, gt=0)
    # The browser window, in CSS px, that `sizes` and <source media> are judged for
    # (a `vw` size, a width descriptor without `sizes`). Ours: a common laptop width.
    srcset_viewport_width: int = Field(default=1280, gt=0)
    # Page metadata by trafilatura (author, date, sitename, description, ...) in
    # Document.metadata. Off by default: its date search adds 25-50% to extraction.
    with_metadata: bool = False
