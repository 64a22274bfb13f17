"""One Arrow schema per output table (the conversions: ``schemas.arrow_rows``).

Every writer casts to these schemas and every reader (tests, analyst tools) reads
with them. Maps of signals and metadata are stored as ``list<struct<key, value>>``:
the physical layout of an Arrow map, which Hugging Face ``datasets`` can load
(it rejects the map type itself) and DuckDB turns into a map with
``map_from_entries(signals)['content.word_count']``.

Bump ``SCHEMA_VERSION`` on any change to a schema; never rename a column.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pyarrow as pa

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


def to_table(rows: Iterable[Mapping[str, Any]], table: str) -> pa.Table:
    """Rows cast to the table's schema (fails loudly on a row that does not fit)."""
    return pa.Table.from_pylist(list(rows), schema=SCHEMAS[table])
