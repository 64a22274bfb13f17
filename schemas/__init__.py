"""Data model and Arrow schemas of mmcurate's records and output tables."""

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
    "Provenance",
    "TextNode",
    "make_doc_id",
]
