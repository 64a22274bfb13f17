"""``extract_trafilatura`` takes the text from trafilatura (its XML tree) and does its
own DOM work for images, because trafilatura's image support has gaps: it reads
neither ``srcset`` nor ``<picture>``, keeps only URLs ending in an image
extension, and drops images that sit outside the blocks it keeps (a product grid's
covers, a hero image before the first paragraph). So, on a parsed copy of the page:

1. Before trafilatura, every ``<img>`` is normalised: its URL is resolved against
   ``<base href>`` and the page URL; a missing or placeholder ``src`` (``data:``
   URIs, 1x1 gifs, "blank"/"placeholder"/"spacer"/"lazy" names) is replaced by the
   first usable lazy-load attribute or the largest ``srcset`` / ``<picture>``
   candidate. Images with no usable http(s) URL and declared 1x1 pixels are
   removed. Each image's alt, ``<figcaption>``, title and declared size are
   recorded with its position in document order.
2. trafilatura extracts the main content. Each text block it returns is located
   in the page's text (whitespace-insensitive, in order), which gives its DOM
   position; each image it kept is matched to its DOM record by URL.
3. With ``recover_images``, images trafilatura dropped are put back at their DOM
   position when they lie in the main content: between the first and last located
   text block, or within ``recover_lead_chars`` / ``recover_trail_chars`` of
   unextracted text before the first / after the last block inside the blocks'
   common ancestor. Images inside nav, aside, form, header or footer are never
   recovered (header and footer only when they are not part of an article or
   main), unless the main content itself sits inside that element. When
   trafilatura keeps no text at all, every image outside those regions is
   recovered, so a page with pictures and little text keeps its pictures.
"""

from __future__ import annotations

import copy
import functools
import logging

from lxml import etree

from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.boilerplate import strip_boilerplate
from mmcurate.stages.engines.extraction.captions import find_captions
from mmcurate.stages.engines.extraction.html_tree import document_base, hreflang_links, page_title, parse_html, squash
from mmcurate.stages.engines.extraction.image_placement import merge_nodes, place_images
from mmcurate.stages.engines.extraction.lead_image import LeadHints, lead_hints
from mmcurate.stages.engines.extraction.page_index import index_page
from mmcurate.stages.engines.extraction.page_scan import scan_page
from mmcurate.stages.engines.extraction.result import Extraction
from mmcurate.stages.engines.extraction.text_nodes import NodeBuilder, locate_text
from mmcurate.stages.engines.extraction.xpath_screen import install as screen_xpaths
from mmcurate.stages.engines.extraction.xpath_screen import screening


_METADATA_FIELDS = ("author", "date", "sitename", "description", "hostname", "categories", "tags", "license")
_prepared = False


def _prepare_trafilatura() -> None:
    """Once per process: trafilatura logs a warning per page it finds nothing in, which
    is not news here; its XPath expressions' attribute tests are decided per page
    (xpath_screen: same selections, a fraction of the work)."""
    global _prepared
    if not _prepared:
        import trafilatura  # noqa: F401  (its modules must be loaded to be screened)

        logging.getLogger("trafilatura").setLevel(logging.ERROR)
        screen_xpaths("trafilatura")
        _prepared = True


def _options_template(config: ExtractConfig):
    """The ``trafilatura.settings.Extractor`` for ``config``'s pages, without the page's URL."""
    return _template_for(config.mode, config.include_tables, config.with_metadata, config.fallback)


@functools.lru_cache(maxsize=16)
def _template_for(mode: str, include_tables: bool, with_metadata: bool, fallback: bool):
    """``_options_template`` by the settings it reads (hashing the whole config costs more).
    Building an ``Extractor`` reads trafilatura's settings (a ``ConfigParser``), about
    70 us; ``bare_extraction`` would build one per page."""
    from trafilatura.settings import Extractor

    return Extractor(
        output_format="xml",
        fast=not fallback,
        precision=mode == "precision",
        recall=mode == "recall",
        comments=False,
        tables=include_tables,
        # Text only: with images on, trafilatura also keeps figure captions and photo
        # credits as text lines and keeps lists of image teasers (related stories),
        # whose lines repeat. Images come from the DOM (place_images); a caption is
        # the image node's, not a text line.
        images=False,
        formatting=False,
        links=False,
        dedup=False,
        with_metadata=with_metadata,
    )


def _page_options(url: str, config: ExtractConfig):
    """The ``Extractor`` that ``bare_extraction`` would build for this page from the
    same settings passed one by one: the template's copy, with what depends on the
    page or the day set as ``Extractor.__init__`` sets it (URL, source, the date
    parameters; fresh empty blacklists). tests/stages/engines/test_trafilatura_options.py
    compares the two slot by slot."""
    from trafilatura.settings import set_date_params

    template = _options_template(config)
    options = copy.copy(template)
    options.url = url or None
    options.source = options.url and options.url.encode("utf-8", "replace").decode("utf-8")
    options.author_blacklist = set()
    options.url_blacklist = set()
    options.date_params = set_date_params(template.date_params["extensive_search"])
    return options


def _trafilatura_document(root: etree._Element, url: str, config: ExtractConfig):
    import trafilatura

    _prepare_trafilatura()
    with screening(root):
        return trafilatura.bare_extraction(root, url=url or None, options=_page_options(url, config))


def _metadata_of(document: object) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for name in _METADATA_FIELDS:
        value = getattr(document, name, None)
        if isinstance(value, (list, tuple)):
            value = ";".join(str(v) for v in value if v)
        if value:
            metadata[name] = squash(str(value))
    return metadata


def extract_trafilatura(html: str, url: str, config: ExtractConfig) -> Extraction:
    """Main content of ``html`` (fetched from ``url``) by trafilatura, images completed from the DOM."""
    root = parse_html(html)
    if root is None:
        return Extraction()
    base = document_base(root, url)
    scan = scan_page(root)
    removed = strip_boilerplate(root, scan.named)
    captions = find_captions(root, scan)
    index = index_page(root, base, config, captions.by_image)
    lead = lead_hints(root, base, url) if index.images and config.recover_images and config.lead_image else LeadHints(page_url=url)
    metadata: dict[str, str] = {}
    html_lang = squash(root.get("lang"))
    if html_lang:
        metadata["html_lang"] = html_lang
    title = page_title(root)

    document = _trafilatura_document(root, url, config)
    builder = NodeBuilder()
    if document is not None and document.body is not None:
        builder.block(document.body, "p")
        metadata.update(_metadata_of(document))
        if not title and document.title:
            title = squash(document.title)
    items = builder.items
    locate_text(items, index)
    placed, first = place_images(items, index, config, lead)
    nodes = merge_nodes(items, placed, first)
    return Extraction(
        nodes=tuple(nodes), title=title, hreflang=hreflang_links(root, base), metadata=metadata, removed=removed
    )
