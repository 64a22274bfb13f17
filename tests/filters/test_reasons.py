"""Every declared reason code has a fixture that the real filter or stage rejects
with exactly that code (the table: tests/reason_cases/)."""

import re

import pytest

from mmcurate.filters import reasons
from reason_cases import all_cases

CASES = all_cases()

# Declared codes that no fixture can reach, with the reason why. Keep it short: a
# code listed here that gains a case fails test_unreachable_codes_are_really_unreached.
UNREACHABLE: dict[str, str] = {}


def test_every_declared_constant_is_in_all_reasons():
    declared = {v for k, v in vars(reasons).items() if k.isupper() and isinstance(v, str)}
    assert declared == set(reasons.ALL_REASONS)


def test_codes_read_family_dot_condition():
    for code in reasons.ALL_REASONS:
        assert re.fullmatch(r"[a-z0-9]+\.[a-z0-9_]+", code), code


def test_every_declared_code_has_a_case():
    covered = {case.code for case in CASES}
    missing = sorted(set(reasons.ALL_REASONS) - covered - set(UNREACHABLE))
    assert not missing, f"declared reason codes without a (fixture, code) case in tests/reason_cases: {missing}"
    assert covered <= set(reasons.ALL_REASONS), sorted(covered - set(reasons.ALL_REASONS))


def test_unreachable_codes_are_really_unreached():
    assert not set(UNREACHABLE) & {case.code for case in CASES}
    assert set(UNREACHABLE) <= set(reasons.ALL_REASONS)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.code}:{c.fixture[:40]}" for c in CASES])
def test_fixture_is_rejected_with_exactly_its_code(case):
    assert case.outcome() == [case.code], case.fixture
