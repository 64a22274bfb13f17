"""What became of one image URL: ``ImageResult``, its status, and whether a reason
is a failure (an ``error`` row) or a rule's refusal (a ``rejected`` row).

Retrieval (``image_fetch``), decoding (``image_decode``) and the Beam stages that
use them (``stages.image_retrieval``, ``stages.images``, ``stages.recycle``) all
speak this one shape.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Mapping, Optional

from mmcurate.filters import reasons
from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, SUBJECT_IMAGE, Decision, Provenance
from mmcurate.schemas.rows import NO_PROVENANCE, STATUS_OK

# The stage whose image decision rows and counters these are.
STAGE = "images"

# The image could not be retrieved or decoded: a failure (STYLE.md), so its
# decision row is of kind `error`, with the reason code as its cause.
FAILURE_REASONS = frozenset(
    {
        reasons.IMAGE_UNSUPPORTED_SCHEME,
        reasons.IMAGE_INVALID_URL,
        reasons.IMAGE_REFUSED_ADDRESS,
        reasons.IMAGE_HTTP_STATUS,
        reasons.IMAGE_TIMEOUT,
        reasons.IMAGE_CONNECTION_FAILED,
        # Not tried: its host kept failing (refused, timed out, TLS) just before.
        reasons.IMAGE_HOST_GIVEN_UP,
        reasons.IMAGE_WRONG_CONTENT_TYPE,
        reasons.IMAGE_REDIRECT_LOOP,
        reasons.IMAGE_TOO_MANY_REDIRECTS,
        reasons.IMAGE_NOT_AN_IMAGE,
        reasons.IMAGE_UNDECODABLE,
    }
)
# A rule, a limit or the publisher's policy refused the image: a decision, so its
# row is of kind `rejected`, with value and threshold where the rule has them.
# image.not_captured is one: the image is in no input WARC and the run's settings
# (images.http off) say not to fetch it; nothing failed.
REJECTION_REASONS = frozenset(
    {
        reasons.IMAGE_NOT_CAPTURED,
        reasons.IMAGE_ROBOTS_DISALLOWED,
        reasons.IMAGE_OPTED_OUT,
        reasons.IMAGE_TOO_MANY_BYTES,
        reasons.IMAGE_CAPTURE_TOO_LARGE,
        reasons.IMAGE_DECOMPRESSION_BOMB,
        reasons.IMAGE_DECODE_BUDGET,
        reasons.IMAGE_SVG,
        reasons.IMAGE_ANIMATED,
        reasons.IMAGE_FORMAT_NOT_ALLOWED,
        reasons.IMAGE_TOO_SMALL,
        reasons.IMAGE_TOO_LARGE,
        reasons.IMAGE_ASPECT_RATIO,
        reasons.IMAGE_TOO_FREQUENT,
        reasons.IMAGE_DUPLICATE_IN_DOCUMENT,
    }
)


def reason_kind(reason: str) -> str:
    """`rejected` for a rule's reason code, `error` for a failure's, and `error` for
    anything else: an exception nobody foresaw, named by its type."""
    return KIND_REJECTED if reason in REJECTION_REASONS else KIND_ERROR


@dataclass(frozen=True)
class ImageResult:
    """What became of one image URL: retrieved and measured, or why not."""

    url: str  # the image node's URL, as extraction wrote it
    status: str  # schemas.rows.STATUS_*: how far it got
    # The candidate (srcset / <picture>) URL the bytes came from, when not `url`.
    source_url: str = ""
    reason: str = ""  # a reason code, or the type name of an unforeseen exception
    value: Optional[float] = None
    threshold: Optional[float] = None
    detail: str = ""
    source: str = ""
    content_type: str = ""
    image_id: Optional[str] = None
    format: str = ""
    width: Optional[int] = None
    height: Optional[int] = None
    phash: Optional[str] = None
    num_bytes: int = 0
    data: Optional[bytes] = field(default=None, repr=False)
    provenance: Optional[Provenance] = None
    signals: Mapping[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    @property
    def kind(self) -> str:
        """The kind of its decision row (``reason_kind``); "" when it has no reason."""
        return reason_kind(self.reason) if self.reason else ""

    def summary(self) -> "ImageResult":
        """The same result without its bytes, for joins that do not need them."""
        return dataclasses.replace(self, data=None)


def reason_counter(reason: str) -> str:
    """The counter of an image decision: ``image.errors.<reason>`` for a failure,
    ``image.reason.<reason>`` for a rejection (``image.`` keeps image rows apart from
    the page counters ``errors.*``/``rejected.*`` the funnel adds up)."""
    return f"image.errors.{reason}" if reason_kind(reason) == KIND_ERROR else f"image.reason.{reason}"


def image_key(result: ImageResult) -> str:
    """The doc_id of an image decision row: its image_id, else a hash of its URL."""
    return result.image_id or hashlib.sha256(result.url.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def image_decision(result: ImageResult, reason: str = "", value=None, threshold=None, detail: str = "") -> Decision:
    """The decision row (subject ``image``) of a result: its own reason, or the
    ``reason`` (with value, threshold, detail) a later step gave it."""
    return Decision(
        doc_id=image_key(result),
        url=result.url,
        stage=STAGE,
        kind=reason_kind(reason or result.reason),
        reason=reason or result.reason,
        provenance=result.provenance or NO_PROVENANCE,
        value=value if reason else result.value,
        threshold=threshold if reason else result.threshold,
        detail=detail if reason else result.detail,
        signals=dict(result.signals),
        subject=SUBJECT_IMAGE,
    )
