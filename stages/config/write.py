"""Settings of the write stage: Parquet shards.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mmcurate.stages.config.base import Section as _Section


class WriteConfig(_Section):
    # Files per table. 0: Beam's file sink chooses (one per bundle that wrote rows).
    num_shards: int = Field(default=0, ge=0)
    # Rows per Parquet row group.
    row_group_size: int = Field(default=1000, gt=0)
    # Parquet compression codec.
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"
