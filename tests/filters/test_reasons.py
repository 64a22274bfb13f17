"""Every declared reason code must have a test that asserts it on a fixture."""

import re
from pathlib import Path

from mmcurate.filters import reasons

TESTS = Path(__file__).resolve().parents[1]


def _constant_names() -> dict[str, str]:
    return {value: name for name, value in vars(reasons).items() if isinstance(value, str) and value in reasons.ALL_REASONS}


def test_every_declared_constant_is_in_all_reasons():
    declared = {v for k, v in vars(reasons).items() if k.isupper() and isinstance(v, str)}
    assert declared == set(reasons.ALL_REASONS)


def test_codes_read_family_dot_condition():
    for code in reasons.ALL_REASONS:
        assert re.fullmatch(r"[a-z0-9]+\.[a-z0-9_]+", code), code


def test_every_reason_code_is_asserted_by_some_test():
    sources = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.rglob("test_*.py") if p.name != "test_reasons.py")
    missing = [
        code
        for code, name in _constant_names().items()
        if f"reasons.{name}" not in sources and f'"{code}"' not in sources
    ]
    assert not missing, f"reason codes without a test case: {missing}"
