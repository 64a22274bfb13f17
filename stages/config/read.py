"""Settings of the read stage: WARC records and payload limits.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations


from pydantic import Field

from mmcurate.stages.config.base import Section as _Section


class ReadConfig(_Section):
    # A record whose payload is larger than this is an error row, not a page.
    max_payload_bytes: int = Field(default=20 * 1024 * 1024, gt=0)
    # Keep image/* payloads aside for image retrieval.
    keep_images: bool = True
    # An image/* payload larger than this is not kept aside for retrieval.
    max_image_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    # Cut each WARC into ranges of whole records spread over workers, so that
    # extraction spreads across workers (only the ranges cross a shuffle).
    reshuffle: bool = True
    # Read only the first N pages (files in path order), for sampling; 0: all.
    limit: int = Field(default=0, ge=0)
