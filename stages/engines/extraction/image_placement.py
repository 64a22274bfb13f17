"""Which of the page's images belong to the main content, and the text and image
nodes merged in DOM order.

Images between the first and last located text block are kept. With
``recover_images``, images trafilatura dropped are put back at their DOM position
when they lie within ``recover_lead_chars`` / ``recover_trail_chars`` of
unextracted text before the first / after the last block inside the blocks'
common ancestor, and the lead image (``lead_image``), which goes before the first
text node even where the page shows it under the headline. Images
inside nav, aside, form, header or footer are never recovered (header and footer
only when they are not part of an article or main), unless the main content itself
sits inside that element. When trafilatura keeps no text at all, every image
outside those regions is recovered, so a page with pictures and little text keeps
its pictures."""

from __future__ import annotations

from typing import Optional

from mmcurate.schemas import Node
from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.html_tree import tag_of
from mmcurate.stages.engines.extraction.lead_image import LeadHints, is_teaser, lead_image
from mmcurate.stages.engines.extraction.page_index import ImageRecord, PageIndex
from mmcurate.stages.engines.extraction.regions import TEXT_BLOCK_TAGS, common_ancestor, in_boilerplate, is_descendant
from mmcurate.stages.engines.extraction.text_nodes import TextItem


def place_images(
    items: list[TextItem], index: PageIndex, config: ExtractConfig, lead: "LeadHints"
) -> tuple[list[ImageRecord], Optional[ImageRecord]]:
    """The page's images that belong to the main content (see the module docstring),
    and the one of them that goes before the first text node (the lead image)."""
    images = index.images
    if not images:
        return [], None
    located = [item for item in items if item.order is not None]
    if not items:
        return [r for r in images if not in_boilerplate(r.element, None) and r.usable], None
    if not located:
        return [], None
    first_order = min(item.order for item in located)
    last_order = max(item.end_order for item in located)
    first_offset = min(item.start_offset for item in located)
    last_end = max(item.end_offset for item in located)
    content_root = common_ancestor([el for item in located for el in (item.owner, item.end_owner)])
    # A single block's own element is no container: its images sit beside it.
    while tag_of(content_root) in TEXT_BLOCK_TAGS and content_root.getparent() is not None:
        content_root = content_root.getparent()
    placed = []
    for record in images:
        if first_order <= record.order <= last_order:
            inside = True
        elif not config.recover_images:
            inside = False
        elif record.order < first_order:
            inside = first_offset - record.flat_offset <= config.recover_lead_chars and is_descendant(
                record.element, content_root
            )
        else:
            inside = record.flat_offset - last_end <= config.recover_trail_chars and is_descendant(
                record.element, content_root
            )
        if inside and not in_boilerplate(record.element, content_root) and record.usable and not is_teaser(record, lead):
            placed.append(record)
    first = None
    if config.recover_images and config.lead_image and not any(r.order < first_order for r in placed):
        blocks = [(item.order, item.node.tag, item.owner) for item in located]
        first = lead_image(images, first_order, first_offset, lead, config, placed, blocks)
        if first is not None and not any(r is first for r in placed):
            placed.append(first)
    return placed, first


def merge_nodes(items: list[TextItem], images: list[ImageRecord], lead: Optional[ImageRecord] = None) -> list[Node]:
    """trafilatura's text nodes with the images inserted by DOM position, the ``lead``
    image first."""
    pending = sorted((r for r in images if r is not lead), key=lambda r: r.order)
    nodes: list[Node] = [lead.node()] if lead is not None else []
    at = 0
    for item in items:
        if item.order is not None:
            while at < len(pending) and pending[at].order < item.order:
                nodes.append(pending[at].node())
                at += 1
        nodes.append(item.node)
    nodes.extend(record.node() for record in pending[at:])
    return nodes
