"""Settings of the write stage: Parquet shards.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mmcurate.stages.config.base import Section as _Section


class WriteConfig(_Section):
    # Files per table. 0: in a run of one phase (its tables assembled from per-range
    # parts, docs/scale.md) one file per 128 MB of parts (ours:
    # stages/engines/table_assembly.TARGET_FILE_BYTES); elsewhere the runner chooses.
    num_shards: int = Field(default=0, ge=0)
    # Rows per Parquet row group.
    row_group_size: int = Field(default=1000, gt=0)
    # Parquet compression codec.
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"
