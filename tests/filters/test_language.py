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


# -- one code scheme, macrolanguage groups, heliport (the default) ---------------------

ALL_FIXTURES = sorted(p.stem for p in TEXT_DIR.glob("*.txt"))


@pytest.fixture(scope="module")
def heliport_identifier():
    return language.load_identifier("heliport")


@pytest.mark.parametrize(
    "code, expected",
    [("hr", "hbs"), ("hrv", "hbs"), ("bs", "hbs"), ("sr", "hbs"), ("sh", "hbs"), ("hbs", "hbs"),
     ("nb", "no"), ("nno", "no"), ("nob", "no"), ("id", "ms"), ("zsm", "ms"), ("msa", "ms"),
     ("cmn", "zh"), ("zh", "zh"), ("arz", "ar"), ("eng", "en"), ("deu", "de"), ("so", "so"), ("yor", "yo"),
     ("EN", "en"), ("", ""), ("bh", "bh")],
)
def test_codes_map_into_one_scheme(code, expected):
    assert language.canonical_language(code) == expected


@pytest.mark.parametrize("lang", ALL_FIXTURES)
def test_heliport_keeps_every_clean_fixture_page(heliport_identifier, lang):
    doc = make_doc(f"clean-{lang}", (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8").split("\n\n"), images=1)
    out = language.annotate_language(doc, model=heliport_identifier, max_chars=4000, min_line_chars=40)
    assert out.language == language.canonical_language(lang)
    assert language.language_allowed(out, allowed=frozenset(), min_score=None).keep
    assert out.signals[language.LANGUAGE_THRESHOLD] >= 0


@pytest.mark.parametrize("lang", ["hr", "bs", "nb", "ms", "id"])
def test_lid176_sums_a_macrolanguage_before_the_threshold(model, lang):
    """lid.176 splits a Croatian page among hr/sh/sr/bs: no one member reaches 0.65, the group does."""
    text = (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8")
    top = language.predict_language(model, text, max_chars=4000)
    doc = language.annotate_language(make_doc(lang, text.split("\n\n"), images=1), model=model, max_chars=4000)
    assert doc.language == language.canonical_language(lang) and doc.language_score >= 0.65
    assert doc.language_score > top.score
    assert language.language_allowed(doc, allowed=frozenset(), min_score=0.65).keep


def test_heliport_rejects_text_without_language_below_its_threshold(heliport_identifier):
    noise = language.annotate_language(make_doc("n", "qzx vbn kk ok fjord xq"), model=heliport_identifier, max_chars=4000)
    verdict = language.language_allowed(noise, allowed=frozenset(), min_score=None)
    assert (verdict.keep, verdict.reason) == (False, reasons.LANGUAGE_LOW_SCORE)
    assert verdict.threshold == noise.signals[language.LANGUAGE_THRESHOLD] > noise.language_score
    # a configured min_score applies to heliport's confidence too: 0 scores only
    assert language.language_allowed(noise, allowed=frozenset(), min_score=0.0).keep
    empty = language.annotate_language(make_doc("e", "12 34 !!"), model=heliport_identifier, max_chars=4000)
    assert (empty.language, empty.language_score) == ("", 0.0)


def test_sample_leaves_out_short_lines_urls_and_numbers():
    text = "Home\nMenu\n" + PROSE + " https://example.org/a?b=1 2024 12:30"
    sample = language.clean_sample(text, max_chars=4000, min_line_chars=40)
    assert "Home" not in sample and "https" not in sample and "2024" not in sample and sample.startswith("The harbour")
    assert language.clean_sample("Home\nMenu", max_chars=4000, min_line_chars=40) == "Home Menu"


def test_allowed_languages_in_config_use_the_scheme():
    from mmcurate.pipeline.config import LanguageConfig

    assert LanguageConfig(allowed=("hr", "nb", "eng")).allowed == ("hbs", "no", "en")
    assert LanguageConfig().identifier == "heliport" and LanguageConfig().min_score is None
