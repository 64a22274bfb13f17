"""The records that flow between stages.

Plain dataclasses: Beam pickles them between workers, filters read them, and
``schemas.arrow_rows`` turns them into Arrow rows. A ``Document`` is immutable by
convention: a transform that edits one (node cleanup, image retrieval) returns a
new one with ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

# Where a decision row comes from: a page (an HTML record or a document built from
# one), an image, or a fault in the input that belongs to no page.
SUBJECT_PAGE = "page"
SUBJECT_IMAGE = "image"

KIND_REJECTED = "rejected"
KIND_ERROR = "error"


@dataclass(frozen=True)
class Provenance:
    """Where a record sits in the input: enough to read it again."""

    warc_file: str
    record_id: str = ""
    date: str = ""  # WARC-Date as written in the record (ISO 8601 when valid)
    offset: int = -1  # byte offset of the record in the (compressed) file
    length: int = -1  # bytes the record occupies in the file, -1 if unknown
    # The input range (start, end) whose reading produced the record, set by the first phase's
    # staged readers (stages/range_staging.py); not a column of any table, not compared.
    range: tuple = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Page:
    """One HTML response or resource record, decoded, before extraction."""

    doc_id: str
    url: str
    html: str
    provenance: Provenance
    http_status: int = 0
    content_type: str = ""
    charset: str = ""
    charset_source: str = ""  # "http", "meta", "bom" or "detected"
    payload_bytes: int = 0


@dataclass(frozen=True)
class CapturedImage:
    """An ``image/*`` payload found in the input WARCs, kept aside for retrieval."""

    url: str
    content_type: str
    payload: bytes
    provenance: Provenance
    # A capture over read.max_image_bytes: its size and that limit; payload is empty,
    # so the images stage can say why the URL was not retrieved from the WARC.
    oversize: int = 0
    limit: int = 0


@dataclass(frozen=True)
class TextNode:
    text: str
    tag: str = "p"  # block kind: p, h1..h6, li, blockquote, pre, table, ...


@dataclass(frozen=True)
class ImageNode:
    # Absolute URL: the candidate a browser at ~2x density loads (srcset, <picture>),
    # in canonical form (filters/url_forms.canonical_url, applied once at extraction):
    # the URL that is fetched, reported and joined on; never canonicalised again.
    src: str
    alt: str = ""
    caption: str = ""  # <figcaption>
    title: str = ""
    # The size of `src` in image pixels as the page declares it: width/height
    # attributes, scaled to the chosen srcset candidate (a 100 px wide image whose
    # 2x candidate is chosen is 200 px wide).
    declared_width: Optional[int] = None
    declared_height: Optional[int] = None
    # Other URLs of the same picture (srcset and <picture> candidates, src), most
    # preferred first, canonical like `src` and without it: retrieval tries them in
    # order when `src` is not captured.
    candidates: tuple[str, ...] = ()
    # Filled in by retrieval and scoring.
    image_id: Optional[str] = None  # sha256 of the stored bytes
    width: Optional[int] = None
    height: Optional[int] = None
    phash: Optional[str] = None
    clip_score: Optional[float] = None


Node = Union[TextNode, ImageNode]


@dataclass(frozen=True)
class Document:
    doc_id: str
    url: str
    provenance: Provenance
    nodes: tuple[Node, ...] = ()
    title: str = ""
    language: str = ""
    language_score: Optional[float] = None
    # hreflang alternates of the page: (language, absolute URL) pairs.
    hreflang: tuple[tuple[str, str], ...] = ()
    # Every figure a rule or stage measured, by name.
    signals: Mapping[str, float] = field(default_factory=dict)
    # Free-form page facts: charset, content type, extractor name, ...
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def text_nodes(self) -> list[TextNode]:
        return [n for n in self.nodes if isinstance(n, TextNode)]

    @property
    def image_nodes(self) -> list[ImageNode]:
        return [n for n in self.nodes if isinstance(n, ImageNode)]

    @property
    def text(self) -> str:
        """The main text: text nodes joined by blank lines, in reading order."""
        return "\n\n".join(n.text for n in self.nodes if isinstance(n, TextNode))

    def with_signals(self, signals: Mapping[str, float]) -> "Document":
        """A copy whose signals are this document's updated with ``signals``."""
        if not signals:
            return self
        merged = dict(self.signals)
        merged.update(signals)
        return dataclasses.replace(self, signals=merged)


@dataclass(frozen=True)
class Decision:
    """A page (or image) that left the funnel: rejected by a rule, or failed."""

    doc_id: str
    url: str
    stage: str
    kind: str  # KIND_REJECTED or KIND_ERROR
    reason: str  # a reason code, or the exception type for errors
    provenance: Provenance
    value: Optional[float] = None
    threshold: Optional[float] = None
    detail: str = ""
    signals: Mapping[str, float] = field(default_factory=dict)
    subject: str = SUBJECT_PAGE
    # The rejected document itself, for recycling; not written to the table.
    document: Optional[Document] = field(default=None, compare=False, repr=False)


def make_doc_id(record_id: str = "", url: str = "", date: str = "") -> str:
    """A stable id: the hash of the WARC record id, or of URL and date without one."""
    key = record_id if record_id else f"{url}\x00{date}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
