"""The precomputed code table (filters/language_codes.py) is python-iso639's mapping,
and holds every label the three identifiers can return."""

from __future__ import annotations

import iso639
import pytest

from mmcurate.filters import language
from mmcurate.filters.language_codes import CANONICAL


def test_every_entry_is_what_python_iso639_gives():
    wrong = {code: (canonical, language.iso639_canonical(code)) for code, canonical in CANONICAL.items()
             if canonical != language.iso639_canonical(code)}
    assert wrong == {}


def test_every_iso639_1_code_is_listed():
    part1 = {lang.part1 for lang in iso639.ALL_LANGUAGES if lang.part1}
    assert len(part1) > 180 and part1 <= CANONICAL.keys()


def test_every_lid176_label_is_listed():
    model = language.load_language_model()
    labels = {label[len("__label__"):] for label in model.get_labels()}
    assert len(labels) == 176 and labels <= CANONICAL.keys()


def test_every_cld2_label_is_listed():
    import pycld2

    labels = {language._CLD2_CODES.get(code, code).lower() for name, code in pycld2.LANGUAGES
              if name in pycld2.DETECTED_LANGUAGES and code != "un" and not code.startswith("xx-")}
    assert len(labels) > 150 and labels <= CANONICAL.keys()


def test_every_heliport_label_is_listed():
    heliport = pytest.importorskip("heliport")
    labels = set(heliport.Identifier().get_confidence_all())
    assert len(labels) > 200 and labels <= CANONICAL.keys()


@pytest.mark.parametrize("code, expected", [("SWH", "sw"), ("prs", "fa"), ("ekk", "et"), ("ain", "ain"), ("zzz-unknown", "zzz-unknown")])
def test_a_code_outside_the_table_still_maps_through_python_iso639(code, expected):
    assert code.lower() not in CANONICAL
    assert language.canonical_language(code) == expected
