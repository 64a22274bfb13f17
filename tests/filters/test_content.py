import random
import unicodedata

import pytest

from docfactory import PROSE, make_doc
from mmcurate.filters import content, reasons
from mmcurate.filters.text import count_words, fold_for_hash, word_units

CHINESE = "港口位于山谷的尽头，建于十八世纪。渔船在黎明前出海，下午早些时候返回，码头上的市场出售他们带回来的鱼。"
JAPANESE = "谷の奥にある港は十八世紀に築かれました。漁船は夜明け前に出港し、午後の早い時間に戻ってきます。"
THAI = "เมืองเล็ก ๆ ริมทะเลมีชาวประมงจำนวนมากที่ออกเรือทุกเช้าก่อนพระอาทิตย์ขึ้น"


@pytest.mark.parametrize(
    "filter_fn, doc, reason, value, threshold",
    [
        (content.not_empty, make_doc("e", []), reasons.CONTENT_EMPTY, 0, 1),
        (content.not_empty, make_doc("e", ["  ", "\n"]), reasons.CONTENT_EMPTY, 0, 1),
        (content.has_text, make_doc("a", [], images=2), reasons.CONTENT_NO_TEXT, 0, 1),
        (content.has_text, make_doc("a", ["   "], images=2), reasons.CONTENT_NO_TEXT, 0, 1),
        (lambda d: content.min_words(d, min_words=50), make_doc("b", "Too short to keep.", images=1), reasons.CONTENT_TOO_FEW_WORDS, 4, 50),
        (lambda d: content.min_images(d, min_images=1), make_doc("c", PROSE), reasons.CONTENT_TOO_FEW_IMAGES, 0, 1),
        (lambda d: content.min_images(d, min_images=3), make_doc("d", PROSE, images=2), reasons.CONTENT_TOO_FEW_IMAGES, 2, 3),
    ],
)
def test_rejects_with_reason_value_and_threshold(filter_fn, doc, reason, value, threshold):
    verdict = filter_fn(doc)
    assert (verdict.keep, verdict.reason, verdict.value, verdict.threshold) == (False, reason, value, threshold)


def test_a_page_with_text_or_images_is_not_empty():
    assert content.not_empty(make_doc("t", PROSE)).keep
    assert content.not_empty(make_doc("i", [], images=1)).keep


def test_clean_document_is_kept_and_signals_recorded():
    doc = make_doc("ok", PROSE, images=2)
    assert content.has_text(doc).keep
    words = content.min_words(doc, min_words=50)
    assert words.keep and words.signals[content.WORD_COUNT] == count_words(PROSE) == 83
    assert content.min_images(doc, min_images=1).signals[content.IMAGE_COUNT] == 2


@pytest.mark.parametrize(
    "text, expected",
    [
        (CHINESE, "港口 位于 山谷 的 尽头 建 于 十八 世纪 渔船 在 黎明 前 出海 下午 早些 时候 返回 码头 上 的 市场 出售 他们 带回来 的 鱼"),
        (JAPANESE, "谷 の 奥 に ある 港 は 十八 世紀 に 築 か れ ま した 漁船 は 夜明け 前 に 出港 し 午後 の 早い 時間 に 戻 って き ます"),
        (THAI, "เมือง เล็ก ๆ ริม ทะเล มี ชาว ประมง จำนวน มาก ที่ ออก เรือ ทุก เช้า ก่อน พระอาทิตย์ ขึ้น"),
        ("人々は時々東京タワーに行きます。", "人々 は 時々 東京タワー に 行き ます"),
        ("2004年提出了L型构想。", "2004 年 提出 了 L 型 构想"),
        ("表情😀很好😀我们", "表情 很好 我们"),
    ],
)
def test_unspaced_scripts_count_dictionary_words_not_characters(text, expected):
    assert word_units(text) == expected.split()
    assert count_words(text) == len(expected.split())


def test_unspaced_words_count_far_below_characters():
    # 46 and 44 characters; a page is not "too long" for being written without spaces
    assert (count_words(CHINESE), count_words(JAPANESE)) == (27, 31)
    assert content.min_words(make_doc("zh", CHINESE, images=1), min_words=25).keep


def test_word_units_and_count_words_agree_in_every_script():
    for text in (CHINESE, JAPANESE, THAI, PROSE, "Привет, мир! مرحبا بالعالم", "한국어 문장입니다. 漢字도", "ét́é 中文 e\u0301"):
        assert len(word_units(text)) == count_words(text)
    # Korean is written with spaces: its words are the space-separated runs, Hanja by the dictionary
    assert word_units("한국어 문장입니다. 漢字도") == ["한국어", "문장입니다", "漢字", "도"]


def test_word_count_splits_on_punctuation_and_keeps_contractions():
    assert count_words("Don't stop: state-of-the-art, 42 times.") == 5
    assert count_words("Привет, мир! مرحبا بالعالم") == 4


def test_fold_for_hash_ignores_case_space_and_punctuation():
    assert fold_for_hash("Hello,  World!\n") == fold_for_hash("hello world") == "hello world"
    assert fold_for_hash("Hello World") != fold_for_hash("Hello Word")


def _fold_by_category(text: str) -> str:
    """fold_for_hash as defined: each character's category asked of unicodedata."""
    text = unicodedata.normalize("NFKC", text).casefold()
    kept = [" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in text]
    return " ".join("".join(kept).split())


def test_fold_for_hash_is_its_definition_on_every_script_and_category():
    rng = random.Random(11)
    # Letters of many scripts, digits, marks, punctuation, symbols, separators, controls,
    # private use, surrogates' neighbours and unassigned code points.
    blocks = [(0x20, 0x7F), (0xA0, 0x250), (0x300, 0x370), (0x370, 0x530), (0x590, 0x700), (0x900, 0xE80),
              (0x1100, 0x1200), (0x2000, 0x2BFF), (0x3000, 0x30FF), (0x4E00, 0x4F00), (0xAC00, 0xAD00),
              (0xE000, 0xE100), (0xFB00, 0xFFFF), (0x1F300, 0x1F6FF), (0xE0000, 0xE0080), (0x10FF00, 0x10FFFF)]
    for _ in range(300):
        text = "".join(chr(rng.randrange(*rng.choice(blocks))) for _ in range(rng.randrange(0, 80)))
        assert fold_for_hash(text) == _fold_by_category(text), ascii(text)
    assert fold_for_hash("Ｆｕｌｌ\u00a0WIDTH\u2028ſtraße — «ok»\x00") == "full width strasse ok"
