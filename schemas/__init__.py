"""Data model of mmcurate's records and output tables.

``document``: the records that flow between stages (Document and its nodes,
Decision, Provenance, ...); ``rows``: the typed rows of the images and pairs tables;
``tables``: one Arrow schema per table; ``arrow_rows``: the one conversion of each
typed row to and from its Arrow row (provenance columns included).
"""

from mmcurate.schemas.document import (
    KIND_ERROR,
    KIND_REJECTED,
    SUBJECT_IMAGE,
    SUBJECT_PAGE,
    CapturedImage,
    Decision,
    Document,
    ImageNode,
    Node,
    Page,
    Provenance,
    TextNode,
    make_doc_id,
)
from mmcurate.schemas.rows import ImageRow, PairRow

__all__ = [
    "KIND_ERROR",
    "KIND_REJECTED",
    "SUBJECT_IMAGE",
    "SUBJECT_PAGE",
    "CapturedImage",
    "Decision",
    "Document",
    "ImageNode",
    "Node",
    "Page",
    "ImageRow",
    "PairRow",
    "Provenance",
    "TextNode",
    "make_doc_id",
]
