"""The faster ways filters/text.py, gopher.py and language.py count and split text
give what the plain ways give, on random texts of many scripts."""

import random
from bisect import bisect_right

import pytest

from mmcurate.filters import text
from mmcurate.filters.language import _URLISH, _sample_line
from mmcurate.filters.ngram_keys import token_ids
from mmcurate.filters.text import TextView, count_sentences, count_with_letter

# Latin, accented Latin, Greek, Cyrillic, Arabic, Hebrew, Devanagari (with its vowel
# signs and virama), Thai, Hangul, kana, ideographs, full-width forms, CJK
# punctuation, emoji, combining marks, digits of several scripts, the apostrophes
# and hyphens words join on, URLs' and addresses' marks, and white space of every kind.
_POOL = (
    "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_ '’-.,;:!?#…*•@/"
    "éßøñçÉ" "αβγΩ" "жзиЖ" "مرحبا" "שלום" "नमस्ते" "ि्ं" "สวัสดีครับ" "ສະບາຍດີ" "한국어문장"
    "ひらがなカタカナ" "漢字中文語" "ＡＢＣ１２３" "、。「」！？" "😀👍𠀀" "\u0301\u0308" "²½٣३"
    "\n\n\n\t\u00a0\u3000\x1c"
)


def has_letter(token: str) -> bool:
    """The plain way: whether ``token`` holds an alphabetic character."""
    return any(map(str.isalpha, token))


def _texts(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        pool = "".join(rng.sample(_POOL, rng.randint(5, 40)))
        yield "".join(rng.choice(pool) for _ in range(rng.randint(0, 300)))
    yield from ("", "a", "http://x.org/a b@c.de 12 ab", "漢", "\n\n", "abc\n\nabc", "新作入荷！【1/23 更新】\nマージ Ｌ")


def _merge_reference(sample: str, spaced, words):
    """The merge of the unspaced words and the spaced matches outside them, by bisect."""
    starts = [s for s, _ in words]
    extra = []
    for m in spaced.finditer(sample):
        i = bisect_right(starts, m.start()) - 1
        if i < 0 or m.start() >= words[i][1]:
            extra.append(m)
    out, i = [], 0
    for m in extra:
        while i < len(words) and words[i][0] < m.start():
            out.append(sample[words[i][0] : words[i][1]])
            i += 1
        out.append(m.group())
    out.extend(sample[s:e] for s, e in words[i:])
    return out


def test_the_one_pass_merge_is_the_bisect_merge():
    checked = 0
    for sample in _texts(7, 1500):
        words = text._unspaced_words(sample)
        for pattern in (text._SPACED_WORD, text._SPACED_TOKEN, text._UNSPACED_TEXT_TOKEN):
            merged = _merge_reference(sample, pattern, words)
            assert text._merge_unspaced(sample, pattern, words) == merged, sample
        checked += bool(words)
    assert checked > 500  # most samples hold an unspaced-script word


@pytest.mark.parametrize("seed", [1, 2])
def test_shared_views_and_counts_are_the_plain_ones(seed):
    for sample in _texts(seed, 1000):
        view = TextView(sample)
        assert view.spaced_words == text.spaced_words(sample), sample
        assert view.word_units == text.word_units(sample)
        assert view.folded_words == [w.casefold() for w in text.word_units(sample)]
        assert view.line_ends == [text.ends_sentence(line) for line in text.lines(sample)]
        toks = text.tokens(sample)
        assert count_with_letter(toks) == sum(map(has_letter, toks))
        letters = sum(map(str.isalpha, sample))
        unspaced = len(text._UNSPACED_CHAR.findall(sample))
        assert text.unspaced_ratio(sample) == (min(1.0, unspaced / letters) if unspaced and letters else 0.0)
        # the language sample's lines: every token of the line through has_letter
        for line in sample.split("\n"):
            assert _sample_line(line) == " ".join(filter(has_letter, _URLISH.sub(" ", line).split())), line


def _count_sentences_reference(line: str) -> int:
    count = 0
    for part in text._SENTENCE_END.split(line):
        if not part.strip(" " + text._CLOSING):
            continue
        spaced = [chunk for chunk in part.split() if len(text._SPACE_SCRIPT.findall(chunk)) >= 2]
        count += max(1, len(spaced))
    return count


def _token_ids_reference(words):
    index = {}
    return [index.setdefault(w, len(index) + 1) for w in words]


def test_sentence_counts_and_word_ids_are_the_plain_ones():
    thai = 0
    for sample in _texts(4, 1500):
        for line in text.lines(sample):
            assert count_sentences(line) == _count_sentences_reference(line), line
            thai += bool(text._SPACE_SCRIPT.search(line))
        words = text.word_units(sample)
        assert token_ids(words).tolist() == _token_ids_reference(words)
    assert thai > 200  # both ways of counting were taken


def test_c4_line_fractions_are_counted_line_by_line():
    """c4.rules looks into each line for "javascript" and the policy phrases only when
    the whole text holds one; the fractions are those of a look into every line."""
    from functools import partial

    from docfactory import make_doc
    from mmcurate.filters import c4
    from mmcurate.pipeline.config import C4Config

    rules = partial(c4.rules, **C4Config().model_dump(exclude={"enabled"}))
    rng = random.Random(5)
    pieces = ["Enable JavaScript to read on.", "See our Privacy Policy", "This site USES COOKIES.", "terms of",
              "use apply.", "A plain sentence here.", "javascript", "cookie policy and more words here", "Ok."]
    for _ in range(300):
        paragraphs = [" ".join(rng.sample(pieces, rng.randint(1, 3))) for _ in range(rng.randint(1, 6))]
        doc = make_doc("c4", ["\n".join(rng.sample(paragraphs, len(paragraphs)))] + paragraphs, images=0)
        lines = text.lines(doc.text)
        words = [text.count_words(line) for line in lines]
        total = sum(words) or 1
        js = sum(w for line, w in zip(lines, words) if "javascript" in line.casefold()) / total
        policy = sum(w for line, w in zip(lines, words) if any(p in line.casefold() for p in c4.POLICY_PHRASES)) / total
        signals = rules(doc).signals
        assert (signals[c4.JAVASCRIPT_FRACTION], signals[c4.POLICY_FRACTION]) == (js, policy), doc.text
