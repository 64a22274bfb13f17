"""A run whose images stage meets images that are neither captured in its WARCs nor
fetchable (``images.http`` off) says so at the end, in one line, with the count and
the setting that fetches them; the rows are rejections, not errors."""

from __future__ import annotations

from mmcurate.filters import reasons
from shared_runs import DEMO, run_direct


def test_the_summary_names_the_uncaptured_images_and_the_key_to_set(tmp_path):
    run = run_direct([DEMO], tmp_path / "out", "--stages", "images")
    manifest = run.manifest
    uncaptured = manifest["image_decisions"][f"images.rejected.{reasons.IMAGE_NOT_CAPTURED}"]
    assert uncaptured > 0
    assert f"images.error.{reasons.IMAGE_NOT_CAPTURED}" not in manifest["image_decisions"]
    lines = [line for line in run.stdout.splitlines() if reasons.IMAGE_NOT_CAPTURED in line]
    assert lines == [
        f"images neither in the WARCs nor fetched: {uncaptured} ({reasons.IMAGE_NOT_CAPTURED});"
        " --set images.http=true fetches them over HTTP"
    ]
