"""Named sets of Beam flags, selected with ``mmcurate run --runner-preset NAME``.

A preset produces Beam command-line flags; flags given explicitly on the command
line come after the preset's and so win.
"""

from __future__ import annotations

import os
from typing import Callable


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def direct() -> list[str]:
    """DirectRunner in one process: the simplest to debug."""
    return ["--runner=DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory"]


def local() -> list[str]:
    """DirectRunner with one worker process per core (their own logging at WARNING)."""
    return [
        "--runner=DirectRunner",
        f"--direct_num_workers={_cores()}",
        "--direct_running_mode=multi_processing",
        "--default_sdk_harness_log_level=WARNING",
    ]


PRESETS: dict[str, Callable[[], list[str]]] = {"direct": direct, "local": local}


def preset_args(name: str) -> list[str]:
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"unknown runner preset {name!r}; presets are {', '.join(sorted(PRESETS))}") from None
