"""Records <-> Arrow rows: the one conversion each table has, both ways.

A table's typed row is ``Document`` (documents), ``Decision`` (decisions),
``ImageRow`` (images) or ``PairRow`` (pairs). ``to_arrow_row`` gives the dict the
Parquet writer casts to ``schemas.tables.SCHEMAS[table]``; ``from_arrow_row`` is
its inverse, for readers and tests. The WARC provenance columns of every table are
written by ``provenance_columns`` and read by ``provenance_from_columns``, nowhere
else.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Callable, Iterable, Mapping, Optional, Union

import pyarrow as pa

from mmcurate.schemas.document import Decision, Document, ImageNode, Provenance, TextNode
from mmcurate.schemas.rows import ImageRow, PairRow
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, IMAGES, PAIRS, SCHEMAS

Record = Union[Document, Decision, ImageRow, PairRow]


# The one provenance mapping: column of every table <- field of ``Provenance``.
PROVENANCE_COLUMNS = (
    ("warc_file", "warc_file"),
    ("warc_record_id", "record_id"),
    ("warc_date", "date"),
    ("warc_offset", "offset"),
    ("warc_length", "length"),
)


def provenance_columns(prov: Provenance) -> dict[str, Any]:
    """The five provenance columns (``schemas.tables.PROVENANCE_FIELDS``) of a record."""
    return {column: getattr(prov, name) for column, name in PROVENANCE_COLUMNS}


def provenance_from_columns(row: Mapping[str, Any]) -> Provenance:
    return Provenance(**{name: row[column] for column, name in PROVENANCE_COLUMNS})


def _entries(mapping: Mapping[str, Any], cast) -> list[dict[str, Any]]:
    return [{"key": k, "value": cast(v)} for k, v in sorted(mapping.items())]


def _finite(value: Any) -> Optional[float]:
    """NaN and infinities are stored as null."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _image_meta(node: ImageNode) -> dict[str, Any]:
    return {
        "alt": node.alt,
        "caption": node.caption,
        "title": node.title,
        "declared_width": node.declared_width,
        "declared_height": node.declared_height,
        "image_id": node.image_id,
        "width": node.width,
        "height": node.height,
        "phash": node.phash,
        "clip_score": node.clip_score,
        "candidates": list(node.candidates),
    }


def document_to_row(doc: Document) -> dict[str, Any]:
    """OBELICS layout: ``texts`` and ``images`` of equal length, one null per position."""
    texts: list[Optional[str]] = []
    images: list[Optional[str]] = []
    image_meta: list[Optional[dict[str, Any]]] = []
    tags: list[str] = []
    for node in doc.nodes:
        if isinstance(node, TextNode):
            texts.append(node.text)
            images.append(None)
            image_meta.append(None)
            tags.append(node.tag)
        else:
            texts.append(None)
            images.append(node.src)
            image_meta.append(_image_meta(node))
            tags.append("img")
    return {
        "doc_id": doc.doc_id,
        "url": doc.url,
        "title": doc.title,
        "language": doc.language,
        "language_score": _finite(doc.language_score),
        "texts": texts,
        "images": images,
        "image_meta": image_meta,
        "node_tags": tags,
        "num_texts": len(texts) - texts.count(None),
        "num_images": len(images) - images.count(None),
        "hreflang": [{"lang": lang, "url": url} for lang, url in doc.hreflang],
        "signals": _entries(doc.signals, _finite),
        "metadata": _entries(doc.metadata, str),
        **provenance_columns(doc.provenance),
    }


def row_to_document(row: Mapping[str, Any]) -> Document:
    nodes: list[Union[TextNode, ImageNode]] = []
    for text, src, meta, tag in zip(row["texts"], row["images"], row["image_meta"], row["node_tags"]):
        if text is not None:
            nodes.append(TextNode(text=text, tag=tag))
        else:
            meta = dict(meta or {})
            meta["candidates"] = tuple(meta.get("candidates") or ())
            nodes.append(ImageNode(src=src, **meta))
    return Document(
        doc_id=row["doc_id"],
        url=row["url"],
        provenance=provenance_from_columns(row),
        nodes=tuple(nodes),
        title=row["title"],
        language=row["language"],
        language_score=row["language_score"],
        hreflang=tuple((h["lang"], h["url"]) for h in row["hreflang"]),
        signals={e["key"]: e["value"] for e in row["signals"]},
        metadata={e["key"]: e["value"] for e in row["metadata"]},
    )


def decision_to_row(decision: Decision) -> dict[str, Any]:
    """The decision without its ``document`` (that travels to recycling only)."""
    return {
        "doc_id": decision.doc_id,
        "url": decision.url,
        "subject": decision.subject,
        "stage": decision.stage,
        "kind": decision.kind,
        "reason": decision.reason,
        "value": _finite(decision.value),
        "threshold": _finite(decision.threshold),
        "detail": decision.detail,
        "signals": _entries(decision.signals, _finite),
        **provenance_columns(decision.provenance),
    }


def row_to_decision(row: Mapping[str, Any]) -> Decision:
    return Decision(
        doc_id=row["doc_id"],
        url=row["url"],
        stage=row["stage"],
        kind=row["kind"],
        reason=row["reason"],
        provenance=provenance_from_columns(row),
        value=row["value"],
        threshold=row["threshold"],
        detail=row["detail"],
        signals={e["key"]: e["value"] for e in row["signals"]},
        subject=row["subject"],
    )


_IMAGE_COLUMNS = tuple(f.name for f in fields(ImageRow) if f.name != "provenance")
_PAIR_COLUMNS = tuple(f.name for f in fields(PairRow) if f.name != "provenance")


def image_to_row(image: ImageRow) -> dict[str, Any]:
    row = {name: getattr(image, name) for name in _IMAGE_COLUMNS}
    row["urls"] = list(image.urls)
    return {**row, **provenance_columns(image.provenance)}


def row_to_image(row: Mapping[str, Any]) -> ImageRow:
    values = {name: row[name] for name in _IMAGE_COLUMNS}
    values["urls"] = tuple(row["urls"] or ())
    return ImageRow(**values, provenance=provenance_from_columns(row))


def pair_to_row(pair: PairRow) -> dict[str, Any]:
    row = {name: getattr(pair, name) for name in _PAIR_COLUMNS}
    return {**row, "sha256": pair.image_id, **provenance_columns(pair.provenance)}


def row_to_pair(row: Mapping[str, Any]) -> PairRow:
    return PairRow(**{name: row[name] for name in _PAIR_COLUMNS}, provenance=provenance_from_columns(row))


ROW_TYPES: dict[str, type] = {DOCUMENTS: Document, DECISIONS: Decision, IMAGES: ImageRow, PAIRS: PairRow}
_TO_ROW: dict[type, Callable[[Any], dict[str, Any]]] = {
    Document: document_to_row,
    Decision: decision_to_row,
    ImageRow: image_to_row,
    PairRow: pair_to_row,
}
_FROM_ROW: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    DOCUMENTS: row_to_document,
    DECISIONS: row_to_decision,
    IMAGES: row_to_image,
    PAIRS: row_to_pair,
}


def to_arrow_row(record: Record) -> dict[str, Any]:
    """The Arrow row (a dict with every column of its table) of a typed row."""
    return _TO_ROW[type(record)](record)


def from_arrow_row(table: str, row: Mapping[str, Any]) -> Record:
    """The typed row of one Arrow row of ``table`` (every column must be present)."""
    return _FROM_ROW[table](row)


def table_row(record: Record, table: str) -> dict[str, Any]:
    """``to_arrow_row`` of a typed row that must be ``table``'s (a hand-built dict or
    another table's row fails here, not as a wrong value in Parquet)."""
    expected = ROW_TYPES[table]
    if type(record) is not expected:
        raise TypeError(f"{table} holds {expected.__name__} rows, not {type(record).__name__}")
    return to_arrow_row(record)


def records_to_table(records: Iterable[Record], table: str) -> pa.Table:
    """Typed rows as an Arrow table of ``table``'s schema."""
    return pa.Table.from_pylist([table_row(record, table) for record in records], schema=SCHEMAS[table])


def table_to_records(arrow: pa.Table, table: str) -> list[Record]:
    """Every row of an Arrow table of ``table`` as its typed row."""
    return [from_arrow_row(table, row) for row in arrow.to_pylist()]
