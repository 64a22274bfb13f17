"""One fixture per declared reason code, each run through the real filter or stage.

A ``ReasonCase`` names the code, says what the fixture is, and runs it: ``outcome()``
returns every reason code the filter or stage gave the fixture (an empty list:
kept). ``tests/filters/test_reasons.py`` runs every case, asserts that the outcome
is exactly ``[code]``, and fails for a declared code without a case.

Modules by where the code is decided: ``text_rules`` (heuristics steps),
``quality_rules`` (quality-stage filters), ``image_rules`` (decoding and the
images stage's rules), ``retrieval`` (HTTP fetches against a local server),
``pair_rules`` (captions, CLIP, NSFW, judge, recycle) and ``stage_runs`` (codes only
a corpus-wide step gives: tiny Beam runs of the read, extract, dedup, images and
recycle stages, each run once per test session).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from mmcurate.filters.verdict import Verdict


@dataclass(frozen=True)
class ReasonCase:
    code: str
    fixture: str  # what the fixture is, in words
    outcome: Callable[[], list[str]]  # the codes the real filter/stage gave it

    @property
    def id(self) -> str:
        return self.code


def rejected_by(verdict: Optional[Verdict]) -> list[str]:
    """A filter's verdict as the list of codes it gave (empty: kept)."""
    return [] if verdict is None or verdict.keep else [verdict.reason]


def all_cases() -> list[ReasonCase]:
    from reason_cases import image_rules, pair_rules, quality_rules, retrieval, stage_runs, text_rules

    return [
        *text_rules.CASES,
        *quality_rules.CASES,
        *image_rules.CASES,
        *retrieval.CASES,
        *pair_rules.CASES,
        *stage_runs.CASES,
    ]
