import pytest

from docfactory import PROSE, make_doc
from mmcurate.filters import content, reasons
from mmcurate.filters.text import count_words, fold_for_hash

CHINESE = "港口位于山谷的尽头，建于十八世纪。渔船在黎明前出海，下午早些时候返回，码头上的市场出售他们带回来的鱼。"
JAPANESE = "谷の奥にある港は十八世紀に築かれました。漁船は夜明け前に出港し、午後の早い時間に戻ってきます。"


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


@pytest.mark.parametrize("text, expected", [(CHINESE, 46), (JAPANESE, 44)])
def test_unspaced_scripts_count_per_character_not_as_one_word(text, expected):
    assert count_words(text) == expected
    assert content.min_words(make_doc("zh", text, images=1), min_words=40).keep


def test_word_count_splits_on_punctuation_and_keeps_contractions():
    assert count_words("Don't stop: state-of-the-art, 42 times.") == 5
    assert count_words("Привет, мир! مرحبا بالعالم") == 4


def test_fold_for_hash_ignores_case_space_and_punctuation():
    assert fold_for_hash("Hello,  World!\n") == fold_for_hash("hello world") == "hello world"
    assert fold_for_hash("Hello World") != fold_for_hash("Hello Word")
