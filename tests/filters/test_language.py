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


# -- one code scheme, macrolanguage groups, heliport (the optional extra) --------------

ALL_FIXTURES = sorted(p.stem for p in TEXT_DIR.glob("*.txt"))


@pytest.fixture(scope="module")
def heliport_identifier():
    pytest.importorskip("heliport", reason="the optional extra: pip install 'mmcurate[heliport]'")
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
    assert LanguageConfig().identifier == "cld2" == language.DEFAULT_IDENTIFIER and LanguageConfig().min_score is None


# -- cld2, the default -------------------------------------------------------------------


@pytest.fixture(scope="module")
def cld2_identifier():
    return language.load_identifier("cld2")


@pytest.mark.parametrize("lang", ALL_FIXTURES)
def test_cld2_keeps_every_clean_fixture_page_with_its_language(cld2_identifier, lang):
    doc = make_doc(f"clean-{lang}", (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8").split("\n\n"), images=1)
    out = language.annotate_language(doc, model=cld2_identifier, max_chars=4000, min_line_chars=40)
    assert out.language == language.canonical_language(lang) and out.language_score == 1.0
    # its own threshold, the minimum share, travels as the signal language_allowed reads
    assert out.signals[language.LANGUAGE_THRESHOLD] == language.CLD2_MIN_SHARE == 0.5
    assert language.language_allowed(out, allowed=frozenset(), min_score=None).keep


@pytest.mark.parametrize("text, expected", [
    ("Svi ljudi rađaju se slobodni i jednaki u dostojanstvu i pravima. Oni su obdareni razumom i svešću "
     "i treba jedni prema drugima da postupaju u duhu bratstva.", "hbs"),
    ("Сва људска бића рађају се слободна и једнака у достојанству и правима. Она су обдарена разумом и "
     "свешћу и треба једни према другима да поступају у духу братства.", "hbs"),
    ("人人生而自由，在尊嚴和權利上一律平等。他們賦有理性和良心，並應以兄弟關係的精神相對待。"
     "人人有資格享有本宣言所載的一切權利和自由，不分種族、膚色、性別、語言、宗教。", "zh"),
    ("כל בני אדם נולדו בני חורין ושווים בערכם ובזכויותיהם. כולם חוננו בתבונה ובמצפון, לפיכך חובה עליהם "
     "לנהוג איש ברעהו ברוח של אחוה.", "he"),
])
def test_cld2_labels_map_into_the_scheme(cld2_identifier, text, expected):
    """Serbian in either script and Croatian are hbs; CLD2's zh-Hant is zh, its iw is he."""
    assert cld2_identifier.identify(text).language == expected


def test_cld2_scores_the_share_of_the_text_so_a_page_in_three_languages_is_below_half(cld2_identifier):
    paragraphs = {lang: (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8").split("\n\n")[0] for lang in ("en", "de", "fr")}
    mixed = language.annotate_language(make_doc("mixed", list(paragraphs.values()), images=1),
                                       model=cld2_identifier, max_chars=4000)
    assert mixed.language in paragraphs and mixed.language_score < 0.5
    verdict = language.language_allowed(mixed, allowed=frozenset(), min_score=None)
    assert (verdict.keep, verdict.reason, verdict.threshold) == (False, reasons.LANGUAGE_LOW_SCORE, 0.5)
    # a configured min_score replaces the identifier's own
    assert language.language_allowed(mixed, allowed=frozenset(), min_score=0.3).keep


def test_cld2_gives_no_language_where_it_cannot_call_one(cld2_identifier):
    # a few words in each of several languages, and gibberish: CLD2 calls no chunk
    short = cld2_identifier.identify("Hello world. Bonjour le monde. Hallo Welt. Hola mundo. Ciao mondo.")
    gibberish = cld2_identifier.identify("asdkj qwe zxcm qwpeoi zmxnc qwpeoi asd lkj qwe " * 3)
    assert short == gibberish == language.LanguagePrediction("", 0.0)
    assert cld2_identifier.identify("") == cld2_identifier.identify("  ") == language.LanguagePrediction("", 0.0)
    doc = language.annotate_language(make_doc("e", "12 34 !!"), model=cld2_identifier, max_chars=4000)
    verdict = language.language_allowed(doc, allowed=frozenset(), min_score=None)
    assert (doc.language, verdict.reason) == ("", reasons.LANGUAGE_LOW_SCORE)


def test_cld2_reads_past_what_its_library_refuses_as_invalid_utf8(cld2_identifier):
    """Control characters, noncharacters and lone surrogates make pycld2 raise; they are
    taken out first, and anything else it raises on is no language, never a crash."""
    text = "The harbour \x00 was rebuilt \x85 after the flood \ud800 of the winter \ufffe storms along the coast"
    assert cld2_identifier.identify(text).language == "en"

    class Refusing:
        error = ValueError

        @staticmethod
        def detect(text):
            raise ValueError("input contains invalid UTF-8 around byte 3")

    assert language.Cld2Identifier(Refusing).identify("some text") == language.LanguagePrediction("", 0.0)


def test_cld2_keeps_clean_russian_news_that_its_own_reliability_flag_fails(cld2_identifier):
    """CLD2 calls 73% of this WMT reference Russian and the rest of its chunks nothing,
    so its document-level is_reliable is false; Russian is all of what it called."""
    text = (
        "Байден признался, что его потрясло число лесных пожаров, произошедших в стране за год, и выразил "
        "опасения, что главной причиной послужило глобальное потепление. «Поэтому мы должны действовать», "
        "сказал он. Байден заявил, что главное это спасение людей и забота о семьях, которые пострадали в "
        "результате бури. «Я обещаю вам. Все, что необходимо."
    )
    import pycld2

    reliable, _, details = pycld2.detect(text)
    assert reliable is False and [d[1:3] for d in details if d[1] != "un"] == [("ru", 73)]
    assert cld2_identifier.identify(text) == language.LanguagePrediction("ru", 1.0, 0.5)


def test_a_missing_optional_identifier_fails_naming_the_key_and_the_extra(monkeypatch):
    real = language.importlib.metadata.distribution

    def distribution(name):
        if name == "heliport":
            raise language.importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(language.importlib.metadata, "distribution", distribution)
    with pytest.raises(FileNotFoundError, match=r"identifier=heliport.*mmcurate\[heliport\].*identifier=cld2"):
        language.check_identifier_installed("heliport")
    language.check_identifier_installed("cld2")
    language.check_identifier_installed("lid176")
