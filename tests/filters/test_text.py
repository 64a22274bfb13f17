"""filters/text.py: the unspaced-script word segmentation's contract with ICU."""

import icu

from mmcurate.filters.text import _UNSPACED_CHAR, count_words, tokens, word_units


def test_every_character_icu_calls_kana_or_ideographic_is_an_unspaced_script_character():
    # _unspaced_words takes a word with ICU status 300-499 as unspaced without looking
    # at its first character: that holds only while every such character is in _UNSPACED.
    breaker = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
    outside = []
    for cp in range(0x20, 0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        breaker.setText(ch + ch)
        next(iter(breaker))
        if breaker.getRuleStatus() >= 300 and not _UNSPACED_CHAR.match(ch):
            outside.append(hex(cp))
    assert outside == []


def test_offsets_stay_right_after_characters_beyond_the_bmp():
    # ICU counts UTF-16 code units: an emoji is two of them and one Python character
    text = "😀😀表情很好，𠀀我们 Emoji 👍 好"
    assert word_units(text) == ["表情", "很好", "𠀀", "我们", "Emoji", "好"]
    assert count_words(text) == 6
    assert tokens(text) == ["😀😀", "表情", "很好", "𠀀", "我们", "Emoji", "👍", "好"]


def test_punctuation_of_unspaced_scripts_is_no_word_and_marks_stay_with_their_word():
    # Katakana middle dot, Tibetan tsheg and shad separate words and are none
    assert word_units("コーヒー・ショップ") == ["コーヒー", "ショップ"]
    assert word_units("བོད་ཡིག།") == ["བོད", "ཡིག"]
    # Thai abbreviation mark ฯ and repetition mark ๆ belong to the word before them
    assert word_units("กรุงเทพฯ") == ["กรุงเทพฯ"]
    assert word_units("ไปๆ มาๆ") == ["ไปๆ", "มาๆ"]


def test_re_with_the_word_class_written_out_gets_regexs_words_on_any_bmp_text():
    import random

    import regex

    from mmcurate.filters import text

    every = "".join(map(chr, range(0x10000)))
    word = text._bmp_word()
    # the class, one character at a time, is regex's on every character of the BMP
    assert word.findall(every) == regex.findall(f"(?:{text._SPACED_WORD.pattern})", every, regex.V1)
    assert {"é", "ß", "ж", "λ", "\u0301", "\u093f"} <= set("".join(word.findall(every)))
    assert word.findall("x²y 漢 ก_1") == ["x", "y", "_1"]  # re's \\w holds ², the unspaced scripts are left out
    rng = random.Random(3)
    pool = "abcXYZ019_ '’-.,;\n\t\u00a0éßжλ—“”€²\u0301\u093f\x1c漢字カナ、。ไทย" + "".join(rng.sample(every, 300))
    for _ in range(1500):
        sample = "".join(rng.choice(pool) for _ in range(rng.randint(0, 120)))
        assert text._word_pattern(sample) is word
        assert word.findall(sample) == text._SPACED_WORD.findall(sample), sample
        assert [m.span() for m in word.finditer(sample)] == [m.span() for m in text._SPACED_WORD.finditer(sample)]
        if text._UNSPACED_CHAR.search(sample):
            assert word_units(sample) == text._merge_unspaced(sample, text._SPACED_WORD, text._unspaced_words(sample))
        else:
            assert word_units(sample) == text._SPACED_WORD.findall(sample), sample
            assert tokens(sample) == text._SPACED_TOKEN.findall(sample), sample
    # A character beyond the BMP sends the text to regex.
    assert text._word_pattern("naïve 😀") is text._SPACED_WORD


def test_str_split_is_res_whitespace_tokens():
    """tokens() takes str.split for re's findall of \\S+: the same white space."""
    import re

    every = "".join(map(chr, range(0x110000)))
    assert re.findall(r"\s", every) == [ch for ch in every if ch.isspace()]
    sample = "a\x1cb\u3000c\u00a0d \u2028e\u200bf\tg\x85h"
    assert sample.split() == re.findall(r"\S+", sample) == ["a", "b", "c", "d", "e\u200bf", "g", "h"]


def test_unspaced_ratio_is_the_share_of_letters_in_unspaced_scripts():
    from mmcurate.filters.text import unspaced_ratio

    for text in ("", "The harbour was built.", "Café naïve", "Москва", "42 — 17%", "🙂 ½"):
        assert unspaced_ratio(text) == 0.0
    assert unspaced_ratio("日本語の文章") == 1.0
    assert unspaced_ratio("abcdef 日本") == 2 / 8
    # 〇 (U+3007) is of an unspaced block but no letter (Nl): 3 over 2 letters, capped at 1
    assert unspaced_ratio("〇〇〇 ab") == 1.0


def test_re_reads_the_token_class_as_regex_does_but_for_four_spaces():
    """tokens() of a text with an unspaced script takes re's reading of _SPACED_TOKEN
    when the text holds none of U+001C-U+001F, the only characters the two class apart."""
    import re

    import regex

    from mmcurate.filters import text

    every = "".join(map(chr, range(0x110000)))
    theirs = set(regex.findall(text._SPACED_TOKEN.pattern[:-1], every, regex.V1))  # the class, without "+"
    ours = set(re.findall(text._UNSPACED_TEXT_TOKEN.pattern[:-1], every))
    assert theirs ^ ours == set("\x1c\x1d\x1e\x1f")
    sample = "日本語の文章、Ｌ１ abc\u3000x-y\u00a0naïve 😀"
    spans = text.unspaced_word_spans(sample)
    assert tokens(sample) == text._merge_unspaced(sample, text._SPACED_TOKEN, spans)
    odd = sample + "\x1cz"
    assert tokens(odd) == text._merge_unspaced(odd, text._SPACED_TOKEN, text.unspaced_word_spans(odd))
    assert tokens(odd)[-1] == "😀\x1cz" and text._UNSPACED_TEXT_TOKEN.findall(odd)[-2:] == ["😀", "z"]
