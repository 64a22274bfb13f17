"""Scripts of text and of languages, and language ID asked again when a page's main
script contradicts its identified language (filters/scripts.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from docfactory import make_doc
from mmcurate.filters import language, scripts
from mmcurate.filters.language import LanguagePrediction
from mmcurate.stages.config import HeuristicsConfig

TEXT_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "text"
FIXTURE_LANGUAGES = sorted(p.stem for p in TEXT_DIR.glob("*.txt"))

# The shape of a Chinese porn-spam home page once extracted: two long lines of English
# boilerplate, then short link lines of Han characters (ordinary words here: what
# matters is the script and the line lengths).
ENGLISH = [
    "Welcome to our free video site, updated every day with new movies for our members.",
    "Bookmark this page and share it with your friends, the address may change without notice.",
]
HAN_LINES = [
    "日本高清在线观看", "国产自拍视频", "最新电影排行", "免费在线播放", "热门连续剧全集", "经典动画大全",
    "欧美大片推荐", "韩国电影精选", "中文字幕专区", "每日更新列表", "网友推荐影片", "高清完整版",
] * 3


def paragraphs(lang: str) -> list[str]:
    return [p for p in (TEXT_DIR / f"{lang}.txt").read_text(encoding="utf-8").split("\n\n") if p.strip()]


@pytest.mark.parametrize(
    "text, script",
    [
        ("这是一个关于港口历史的测试 hello", "Hani"),
        ("これは港の歴史についての文章です", "Kana"),
        ("항구의 역사에 관한 글입니다", "Hang"),
        ("Гавань была построена в восемнадцатом веке", "Cyrl"),
        ("Grüße aus München, über die Brücke", "Latn"),
        ("The harbour", "Latn"),
        ("12 34 !! 56", None),
    ],
)
def test_main_script(text, script):
    assert scripts.main_script(text)[0] == script


def test_languages_and_their_scripts_come_from_cldr():
    assert scripts.language_scripts("ja") >= {"Hani", "Kana"}
    assert scripts.language_scripts("ko") >= {"Hang", "Hani"}
    assert scripts.language_scripts("zh") >= {"Hani"} and "Latn" not in scripts.language_scripts("zh")
    assert scripts.language_scripts("hbs") >= {"Latn", "Cyrl"}  # Serbian's Cyrillic and Latin, Croatian's Latin
    assert scripts.language_scripts("sr") == scripts.language_scripts("hbs")
    assert "Latn" in scripts.language_scripts("en") and "Arab" in scripts.language_scripts("ur")
    assert scripts.language_scripts("pa") >= {"Guru", "Arab"}
    assert scripts.language_scripts("qqq") == frozenset()
    han = scripts.languages_written_in("Hani")
    assert {"zh", "ja", "ko"} <= han and "en" not in han
    assert scripts.languages_written_in("Kana") >= {"ja"} and "zh" not in scripts.languages_written_in("Kana")


class Among:
    """An identifier that offers the best label among given languages."""

    def __init__(self, ranked: list[tuple[str, float]]):
        self.ranked = ranked
        self.asked: list[tuple[str, frozenset]] = []

    def identify(self, sample: str) -> LanguagePrediction:
        return LanguagePrediction(*self.ranked[0])

    def identify_among(self, sample: str, languages: frozenset) -> LanguagePrediction:
        self.asked.append((sample, languages))
        return next((LanguagePrediction(c, s) for c, s in self.ranked if c in languages), LanguagePrediction("", 0.0))


class Plain:
    """An identifier with ``identify`` only, answering ``answer`` on any sample."""

    def __init__(self, answer: str, score: float = 0.9):
        self.answer = LanguagePrediction(answer, score)
        self.samples: list[str] = []

    def identify(self, sample: str) -> LanguagePrediction:
        self.samples.append(sample)
        return self.answer


def spam_doc(lang: str = "en", score: float = 1.0):
    return dataclasses.replace(make_doc("spam", ENGLISH + HAN_LINES, images=1), language=lang, language_score=score)


def reidentify(doc, model, min_share=0.5):
    return scripts.reidentify_by_script(doc, model=model, max_chars=4000, min_share=min_share)


def test_han_identified_as_english_is_asked_again_among_han_languages():
    among = Among([("en", 0.9), ("zh", 0.08), ("ja", 0.02)])
    out = reidentify(spam_doc(), among)
    assert (out.language, out.language_score) == ("zh", 0.08)
    assert out.signals[scripts.REIDENTIFIED] == 1.0 and out.signals[scripts.SCRIPT_SHARE] > 0.5
    sample, languages = among.asked[0]
    assert "Welcome" not in sample and HAN_LINES[0] in sample  # the lines in that script
    assert languages == scripts.languages_written_in("Hani")


def test_an_identifier_without_identify_among_is_asked_on_the_scripts_lines():
    plain = Plain("zh", 0.97)
    out = reidentify(spam_doc(), plain)
    assert (out.language, out.language_score) == ("zh", 0.97)
    assert "Welcome" not in plain.samples[0]
    # an answer outside the script's languages changes nothing
    stubborn = reidentify(spam_doc(), Plain("en"))
    assert (stubborn.language, stubborn.language_score, scripts.REIDENTIFIED in stubborn.signals) == ("en", 1.0, False)


def test_no_contradiction_no_question():
    plain = Plain("zh")
    japanese = dataclasses.replace(make_doc("ja", paragraphs("ja"), images=1), language="ja", language_score=0.9)
    serbian = dataclasses.replace(make_doc("sr", paragraphs("sr"), images=1), language="hbs", language_score=0.9)
    english = dataclasses.replace(make_doc("en", paragraphs("en"), images=1), language="en", language_score=0.9)
    for doc in (japanese, serbian, english):
        assert reidentify(doc, plain) is doc
    assert reidentify(spam_doc(), plain, min_share=1.0).language == "en"  # main script under the share asked for
    assert plain.samples == []


def test_a_latin_page_identified_as_russian_is_asked_among_latin_languages():
    doc = dataclasses.replace(make_doc("de", paragraphs("de"), images=1), language="ru", language_score=0.7)
    out = reidentify(doc, Among([("ru", 0.7), ("de", 0.2), ("nl", 0.1)]))
    assert out.language == "de"


@pytest.fixture(scope="module")
def default_identifier():
    name = HeuristicsConfig().language.identifier
    language.check_identifier_installed(name)
    return language.load_identifier(name)


def test_the_default_identifier_calls_the_spam_page_chinese_once_asked_again(default_identifier):
    cfg = HeuristicsConfig().language
    doc = make_doc("spam", ENGLISH + HAN_LINES, images=1)
    first = language.annotate_language(doc, model=default_identifier, max_chars=cfg.max_chars, min_line_chars=cfg.min_line_chars)
    assert first.language == "en"  # its sample is the long lines: the English ones
    again = reidentify(first, default_identifier, min_share=cfg.script_min_share)
    assert again.language == "zh" and again.signals[scripts.REIDENTIFIED] == 1.0


@pytest.mark.parametrize("lang", FIXTURE_LANGUAGES)
def test_clean_fixture_pages_keep_the_language_they_were_identified_with(default_identifier, lang):
    cfg = HeuristicsConfig().language
    doc = make_doc(lang, paragraphs(lang), images=1)
    first = language.annotate_language(doc, model=default_identifier, max_chars=cfg.max_chars, min_line_chars=cfg.min_line_chars)
    assert reidentify(first, default_identifier, min_share=cfg.script_min_share) is first
