"""fastText language ID with the lid.176.ftz that mmcurate ships as package data, offline."""

import dataclasses
from pathlib import Path

import pytest

from docfactory import PROSE, make_doc
from mmcurate.filters import language, reasons

TEXT_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "text"


@pytest.fixture(scope="module")
def model():
    return language.load_language_model()


def test_model_is_the_package_data_file_with_its_licence_notice():
    path = language.shipped_model_path()
    assert path == language.DATA_DIR / "lid.176.ftz" and path.is_file()
    assert language._sha256(path) == language.MODEL_SHA256
    notice = (language.DATA_DIR / "lid.176.NOTICE.md").read_text(encoding="utf-8")
    assert "Attribution-Share-Alike License 3.0" in notice and language.MODEL_SHA256 in notice


def test_a_shipped_model_with_other_bytes_is_refused(tmp_path, monkeypatch):
    (tmp_path / "lid.176.ftz").write_bytes(b"not the model")
    monkeypatch.setattr(language, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match="sha256 differs"):
        language.load_language_model()


@pytest.mark.parametrize("lang", ["en", "de", "zh", "ja", "ru", "ar"])
def test_identifies_each_fixture_language(model, lang):
    text = (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8")
    prediction = language.predict_language(model, text, max_chars=4000)
    assert prediction.language == lang and prediction.score > 0.9


def test_annotate_sets_language_and_score_without_touching_the_input(model):
    doc = make_doc("a", PROSE, images=1)
    out = language.annotate_language(doc, model=model, max_chars=4000)
    assert (doc.language, doc.language_score) == ("", None)
    assert out.language == "en" and out.language_score > 0.9


def test_not_allowed_and_low_score(model):
    german = dataclasses.replace(make_doc("de", "x"), language="de", language_score=0.99)
    verdict = language.language_allowed(german, allowed=frozenset({"en"}), min_score=0.65)
    assert (verdict.keep, verdict.reason, verdict.detail) == (False, reasons.LANGUAGE_NOT_ALLOWED, "de")
    assert language.language_allowed(german, allowed=frozenset(), min_score=0.65).keep

    mixed = language.annotate_language(make_doc("mx", "qzx vbn 12 kk ok fjord"), model=model, max_chars=4000)
    verdict = language.language_allowed(mixed, allowed=frozenset(), min_score=0.65)
    assert (verdict.keep, verdict.reason, verdict.threshold) == (False, reasons.LANGUAGE_LOW_SCORE, 0.65)
    assert verdict.value == pytest.approx(mixed.language_score) and verdict.signals[language.LANGUAGE_SCORE] < 0.65


def test_empty_text_has_no_language(model):
    assert language.predict_language(model, "  \n ", max_chars=100) == language.LanguagePrediction("", 0.0)


def test_a_missing_model_path_fails_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="language model not found"):
        language.load_language_model(tmp_path / "nope.ftz")
