"""One Arrow schema per output table, and the conversions between records and rows.

Every writer casts to these schemas and every reader (tests, analyst tools) reads
with them. Maps of signals and metadata are stored as ``list<struct<key, value>>``:
the physical layout of an Arrow map, which Hugging Face ``datasets`` can load
(it rejects the map type itself) and DuckDB turns into a map with
``map_from_entries(signals)['content.word_count']``.

Bump ``SCHEMA_VERSION`` on any change to a schema; never rename a column.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional

import pyarrow as pa

from mmcurate.schemas.document import Decision, Document, ImageNode, Provenance, TextNode

SCHEMA_VERSION = "4"  # 2: the images table; 3: the pairs table; 4: image_meta.candidates
SCHEMA_VERSION_KEY = b"mmcurate.schema_version"
TABLE_KEY = b"mmcurate.table"

DOCUMENTS = "documents"
DECISIONS = "decisions"
IMAGES = "images"
PAIRS = "pairs"
TABLES = (DOCUMENTS, DECISIONS, IMAGES, PAIRS)

SIGNALS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.float64())]))
METADATA_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))

IMAGE_META_TYPE = pa.struct(
    [
        ("alt", pa.string()),
        ("caption", pa.string()),
        ("title", pa.string()),
        ("declared_width", pa.int32()),
        ("declared_height", pa.int32()),
        ("image_id", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("phash", pa.string()),
        ("clip_score", pa.float32()),
        # Other srcset / <picture> URLs of the image, most preferred first.
        ("candidates", pa.list_(pa.string())),
    ]
)

PROVENANCE_FIELDS = [
    pa.field("warc_file", pa.string()),
    pa.field("warc_record_id", pa.string()),
    pa.field("warc_date", pa.string()),
    pa.field("warc_offset", pa.int64()),
    pa.field("warc_length", pa.int64()),
]


def _with_metadata(fields: list[pa.Field], table: str) -> pa.Schema:
    return pa.schema(fields, metadata={SCHEMA_VERSION_KEY: SCHEMA_VERSION.encode(), TABLE_KEY: table.encode()})


# Interleaved documents in the OBELICS convention: `texts` and `images` are lists of
# equal length with exactly one null at each position; `image_meta` follows
# `images` (null where `images` is null) and `node_tags` names each position's
# block kind ("img" for images).
DOCUMENTS_SCHEMA = _with_metadata(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("url", pa.string()),
        pa.field("title", pa.string()),
        pa.field("language", pa.string()),
        pa.field("language_score", pa.float64()),
        pa.field("texts", pa.list_(pa.string())),
        pa.field("images", pa.list_(pa.string())),
        pa.field("image_meta", pa.list_(IMAGE_META_TYPE)),
        pa.field("node_tags", pa.list_(pa.string())),
        pa.field("num_texts", pa.int32()),
        pa.field("num_images", pa.int32()),
        pa.field("hreflang", pa.list_(pa.struct([("lang", pa.string()), ("url", pa.string())]))),
        pa.field("signals", SIGNALS_TYPE),
        pa.field("metadata", METADATA_TYPE),
        *PROVENANCE_FIELDS,
    ],
    DOCUMENTS,
)

# One row per rejected or failed page (and, from the image stage on, image).
DECISIONS_SCHEMA = _with_metadata(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("url", pa.string()),
        pa.field("subject", pa.string()),
        pa.field("stage", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("threshold", pa.float64()),
        pa.field("detail", pa.string()),
        pa.field("signals", SIGNALS_TYPE),
        *PROVENANCE_FIELDS,
    ],
    DECISIONS,
)

# One row per retrieved image (keyed by image_id, the sha256 of the stored bytes,
# with every URL it was found at), and one row per URL whose retrieval failed or
# whose image was rejected (image_id null unless the bytes were decoded). `status`:
# ok, failed (not retrieved), rejected (retrieved, then refused by a rule) or
# skipped (kept in documents by URL only, e.g. SVG under images.svg=keep_url).
# Provenance columns name the WARC record of a captured image (empty for HTTP).
IMAGES_SCHEMA = _with_metadata(
    [
        pa.field("image_id", pa.string()),
        pa.field("urls", pa.list_(pa.string())),
        pa.field("status", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("detail", pa.string()),
        pa.field("source", pa.string()),  # "warc" or "http"
        pa.field("content_type", pa.string()),
        pa.field("format", pa.string()),
        pa.field("width", pa.int32()),
        pa.field("height", pa.int32()),
        pa.field("num_bytes", pa.int64()),
        pa.field("phash", pa.string()),
        # The near-duplicate this image was merged with (null: none).
        pa.field("duplicate_of", pa.string()),
        # Documents of this run using this image or one of its near-duplicates.
        pa.field("doc_frequency", pa.int32()),
        pa.field("bytes", pa.binary()),  # images.store=bytes
        pa.field("path", pa.string()),  # images.store=path
        *PROVENANCE_FIELDS,
    ],
    IMAGES,
)

# Image-text pairs (stage recycle) in the img2dataset/LAION convention: url,
# caption, similarity, width, height, sha256 as those tools name them; then where
# the caption came from (alt, figcaption, title, nearest_sentence), the image_id
# joining the images table (= sha256), the bytes when recycle.store_bytes, and the
# source document: its id, URL, whether it was kept, the stage and reason code that
# rejected it, and its WARC record. One row per distinct image.
PAIRS_SCHEMA = _with_metadata(
    [
        pa.field("url", pa.string()),
        pa.field("caption", pa.string()),
        pa.field("caption_source", pa.string()),
        pa.field("similarity", pa.float64()),  # CLIP cosine; null when scoring is off
        pa.field("width", pa.int32()),
        pa.field("height", pa.int32()),
        pa.field("format", pa.string()),
        pa.field("sha256", pa.string()),
        pa.field("image_id", pa.string()),
        pa.field("bytes", pa.binary()),
        pa.field("doc_id", pa.string()),
        pa.field("doc_url", pa.string()),
        pa.field("source_kept", pa.bool_()),
        pa.field("source_stage", pa.string()),
        pa.field("rejection_reason", pa.string()),
        *PROVENANCE_FIELDS,
    ],
    PAIRS,
)

SCHEMAS = {DOCUMENTS: DOCUMENTS_SCHEMA, DECISIONS: DECISIONS_SCHEMA, IMAGES: IMAGES_SCHEMA, PAIRS: PAIRS_SCHEMA}


def _entries(mapping: Mapping[str, Any], cast) -> list[dict[str, Any]]:
    return [{"key": k, "value": cast(v)} for k, v in sorted(mapping.items())]


def _finite(value: Any) -> Optional[float]:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _provenance_columns(prov: Provenance) -> dict[str, Any]:
    return {
        "warc_file": prov.warc_file,
        "warc_record_id": prov.record_id,
        "warc_date": prov.date,
        "warc_offset": prov.offset,
        "warc_length": prov.length,
    }


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
        **_provenance_columns(doc.provenance),
    }


def decision_to_row(decision: Decision) -> dict[str, Any]:
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
        **_provenance_columns(decision.provenance),
    }


def row_to_document(row: Mapping[str, Any]) -> Document:
    """The inverse of ``document_to_row`` (for readers and round-trip tests)."""
    nodes: list[TextNode | ImageNode] = []
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
        provenance=Provenance(
            warc_file=row["warc_file"],
            record_id=row["warc_record_id"],
            date=row["warc_date"],
            offset=row["warc_offset"],
            length=row["warc_length"],
        ),
        nodes=tuple(nodes),
        title=row["title"],
        language=row["language"],
        language_score=row["language_score"],
        hreflang=tuple((h["lang"], h["url"]) for h in row["hreflang"]),
        signals={e["key"]: e["value"] for e in row["signals"]},
        metadata={e["key"]: e["value"] for e in row["metadata"]},
    )


def to_table(rows: Iterable[Mapping[str, Any]], table: str) -> pa.Table:
    """Rows cast to the table's schema (fails loudly on a row that does not fit)."""
    return pa.Table.from_pylist(list(rows), schema=SCHEMAS[table])
