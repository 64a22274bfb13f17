"""The typed rows of the images and pairs tables.

Documents and decisions have their records already (``Document``, ``Decision``);
these two tables had none, so stages passed hand-built dicts between them. An
``ImageRow`` or ``PairRow`` is what a stage yields, what the next stage reads
(``row.retrieved``, ``row.image_id``) and what the writer turns into an Arrow row
(``schemas.arrow_rows.to_arrow_row``). Attribute names are the column names;
``provenance`` stands for the five WARC columns (``schemas.arrow_rows.provenance_columns``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mmcurate.schemas.document import Provenance

# The images table's `status`: what became of one image URL.
STATUS_OK = "ok"  # retrieved, validated, stored
STATUS_FAILED = "failed"  # not retrieved (network, policy, not captured)
STATUS_REJECTED = "rejected"  # retrieved, then refused by a rule or by dedup
STATUS_SKIPPED = "skipped"  # kept in documents by URL only (images.svg=keep_url)
STATUSES = (STATUS_OK, STATUS_FAILED, STATUS_REJECTED, STATUS_SKIPPED)

# The images table's `source`: where the bytes came from ("" when none arrived).
SOURCE_WARC = "warc"
SOURCE_HTTP = "http"
SOURCES = ("", SOURCE_WARC, SOURCE_HTTP)

NO_PROVENANCE = Provenance(warc_file="")  # an image fetched over HTTP, or never retrieved


@dataclass(frozen=True)
class ImageRow:
    """One row of the images table: a retrieved image (one per ``image_id``, with
    every URL it was found at) or one URL whose image was not retrieved or was
    refused (``image_id`` null unless its bytes were decoded)."""

    image_id: Optional[str]
    urls: tuple[str, ...]
    status: str
    reason: str = ""
    detail: str = ""
    source: str = ""
    content_type: str = ""
    format: str = ""
    width: Optional[int] = None
    height: Optional[int] = None
    num_bytes: Optional[int] = None
    phash: Optional[str] = None
    duplicate_of: Optional[str] = None  # the near-duplicate it was merged with
    doc_frequency: Optional[int] = None  # documents of the run using it or a near-duplicate
    bytes: Optional[bytes] = field(default=None, repr=False)  # images.store=bytes
    path: Optional[str] = None  # images.store=path
    provenance: Provenance = NO_PROVENANCE  # the WARC record of a captured image

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"images.status {self.status!r} is not one of {STATUSES}")
        if self.source not in SOURCES:
            raise ValueError(f"images.source {self.source!r} is not one of {SOURCES}")
        if not isinstance(self.urls, tuple):
            object.__setattr__(self, "urls", tuple(self.urls))

    @property
    def retrieved(self) -> bool:
        """An image downstream stages may use: status ok, with an id."""
        return self.status == STATUS_OK and bool(self.image_id)


@dataclass(frozen=True)
class PairRow:
    """One row of the pairs table: an image-text pair recycled from a document.
    The table's ``sha256`` column is ``image_id`` (img2dataset's name for it)."""

    url: str
    caption: str
    caption_source: str  # alt, figcaption, title, nearest_sentence
    doc_id: str
    doc_url: str
    provenance: Provenance  # the source document's WARC record
    similarity: Optional[float] = None  # CLIP cosine; None when scoring is off
    width: Optional[int] = None
    height: Optional[int] = None
    format: str = ""
    image_id: Optional[str] = None
    bytes: Optional[bytes] = field(default=None, repr=False)  # recycle.store_bytes
    source_kept: bool = False
    source_stage: str = ""  # the stage that rejected the source document
    rejection_reason: str = ""
