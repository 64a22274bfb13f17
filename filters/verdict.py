"""What a filter returns: keep or reject, with the reason and the figures measured.

A filter is a plain callable ``(document) -> Verdict`` whose thresholds are bound as
keyword arguments (``functools.partial`` over config values). It does no I/O and
does not change the document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from mmcurate.schemas import Document


@dataclass(frozen=True)
class Verdict:
    keep: bool
    reason: str = ""
    value: Optional[float] = None
    threshold: Optional[float] = None
    detail: str = ""
    # Every figure the filter measured, kept or not: they go on the document.
    signals: Mapping[str, float] = field(default_factory=dict)


def keep(**signals: float) -> Verdict:
    return Verdict(keep=True, signals=signals)


def reject(
    reason: str,
    value: Optional[float],
    threshold: Optional[float],
    detail: str = "",
    **signals: float,
) -> Verdict:
    return Verdict(
        keep=False,
        reason=reason,
        value=None if value is None else float(value),
        threshold=None if threshold is None else float(threshold),
        detail=detail,
        signals=signals,
    )


DocumentFilter = Callable[[Document], Verdict]
