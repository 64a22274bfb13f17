"""Which image reasons are failures (`error` rows) and which are rejections."""

from __future__ import annotations

import pytest

from mmcurate.filters import reasons
from mmcurate.stages.engines.image_result import (
    FAILURE_REASONS,
    REJECTION_REASONS,
    ImageResult,
    image_decision,
    reason_counter,
    reason_kind,
)

# image.* codes other stages own: URL safety (extract), NSFW (scoring), and the page
# rules of the images stage (subject page, not image).
NOT_IMAGE_ROWS_OF_THIS_STAGE = {
    reasons.IMAGE_BLOCKLISTED_DOMAIN,
    reasons.IMAGE_BLOCKLISTED_PREFIX,
    reasons.IMAGE_BLOCKLISTED_SUBSTRING,
    reasons.IMAGE_NSFW,
}
IMAGE_STAGE_CODES = {
    value
    for name, value in vars(reasons).items()
    if name.startswith("IMAGE_") and isinstance(value, str) and not value.startswith("image.document_")
} - NOT_IMAGE_ROWS_OF_THIS_STAGE


def test_every_image_reason_is_either_a_failure_or_a_rejection():
    assert not FAILURE_REASONS & REJECTION_REASONS
    assert IMAGE_STAGE_CODES == FAILURE_REASONS | REJECTION_REASONS


@pytest.mark.parametrize(
    "reason, kind, counter",
    [
        (reasons.IMAGE_TIMEOUT, "error", "image.errors.image.timeout"),
        (reasons.IMAGE_REFUSED_ADDRESS, "error", "image.errors.image.refused_address"),
        (reasons.IMAGE_UNDECODABLE, "error", "image.errors.image.undecodable"),
        # Not in the WARCs and images.http off: the run's settings decided, nothing failed.
        (reasons.IMAGE_NOT_CAPTURED, "rejected", "image.reason.image.not_captured"),
        (reasons.IMAGE_HOST_GIVEN_UP, "error", "image.errors.image.host_given_up"),
        ("FileNotFoundError", "error", "image.errors.FileNotFoundError"),  # an exception nobody foresaw
        (reasons.IMAGE_TOO_SMALL, "rejected", "image.reason.image.too_small"),
        (reasons.IMAGE_TOO_FREQUENT, "rejected", "image.reason.image.too_frequent"),
        (reasons.IMAGE_DUPLICATE_IN_DOCUMENT, "rejected", "image.reason.image.duplicate_in_document"),
        (reasons.IMAGE_ROBOTS_DISALLOWED, "rejected", "image.reason.image.robots_disallowed"),
    ],
)
def test_kind_and_counter_of_a_reason(reason, kind, counter):
    assert reason_kind(reason) == kind
    assert reason_counter(reason) == counter
    row = image_decision(ImageResult(url="https://x.example/a.jpg", status="failed", reason=reason))
    assert (row.kind, row.reason, row.stage, row.subject) == (kind, reason, "images", "image")
