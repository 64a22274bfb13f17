"""What a run makes of a finished Beam pipeline: its counters, and the error raised
when a pipeline did not finish (``phases``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional


class RunError(RuntimeError):
    """The pipeline did not finish, or its output does not add up."""


def query_counters(result: Any) -> Optional[dict[tuple[str, str], int]]:
    """Every user counter of the run, summed over steps: {(namespace, name): value};
    None when the runner reports no metrics (Beam's DaskRunner raises
    NotImplementedError for ``metrics()``)."""
    try:
        queried = result.metrics().query()["counters"]
    except NotImplementedError:
        return None
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for counter in queried:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[(counter.key.metric.namespace, counter.key.metric.name)] += int(value or 0)
    if not totals:
        return None  # every run counts read.files or read.ranges: no counters means no metrics
    return dict(totals)
