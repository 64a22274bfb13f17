r"""Text measures that work beyond English.

Words of scripts written without spaces between them (Chinese, Japanese, Thai, Lao,
Khmer, Myanmar, Tibetan) are found by ICU's dictionary-based word break (Unicode
UAX #29 word boundaries, extended by ICU with word dictionaries for Chinese and
Japanese, Thai, Lao, Khmer and Burmese): a 2,000-character Chinese article is about
1,000-1,300 words, as a reader would count them, not 2,000. On gold segmentations
from Universal Dependencies (UD_Chinese-GSDSimp, UD_Japanese-GSD, UD_Thai-PUD test
sets) the count is 0.96, 1.00 and 1.23 times the gold word count, against 1.59,
1.58 and 3.56 when each character was a word (README, "Words in scripts without
spaces"). Only text that holds such a script pays for the segmenter: ASCII text
and text of spaced scripts never reach it.

Everything else is counted by runs of letters, combining marks and digits (which
also splits on punctuation, not on spaces alone). Combining marks (Unicode Mn, Mc,
Me) belong to the word they sit in: Devanagari, Bengali and Tamil vowel signs and
viramas, Arabic harakat, Yoruba and Vietnamese tone marks written as combining
characters. Python's ``re`` does not count them as word characters, so these
patterns are written with the ``regex`` module's ``\p{M}``; pure-ASCII text (no
marks, no unspaced scripts) takes ``re``'s ``\w``, and other text of the Basic
Multilingual Plane ``re`` with the same class written out (``_bmp_word``): the same
result, faster.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import cache, cached_property
from itertools import filterfalse

import regex

# Unicode blocks of scripts written without word separators.
_UNSPACED = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u2e80-\u2eff"  # CJK radicals supplement
    "\u2f00-\u2fdf"  # Kangxi radicals
    "\u3005-\u3007"  # 々 〆 〇: ideographic iteration mark, closing mark, number zero
    "\u3021-\u3029"  # Hangzhou numerals
    "\u3031-\u3035"  # vertical kana repeat marks
    "\u3038-\u303b"  # Hangzhou numerals ten to thirty, vertical ideographic iteration mark
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\u32d0-\u32fe"  # circled Katakana
    "\u3300-\u3357"  # squared Katakana words
    "\U00020000-\U0002ebef"  # CJK extensions B-F
)
_UNSPACED_CHAR = re.compile(f"[{_UNSPACED}]")
# One unit of an unspaced script: a character and the combining marks after it.
_UNSPACED_UNIT = f"[{_UNSPACED}]\\p{{M}}*"
# A word of a spaced script: a run of letters, marks and digits (apostrophes and
# hyphens inside a word keep it whole: "don't", "state-of-the-art").
_WORD_CHAR = f"[[\\w\\p{{M}}]--[{_UNSPACED}]]"
_SPACED_WORD = regex.compile(f"{_WORD_CHAR}+(?:['’\\-]{_WORD_CHAR}+)*", regex.V1)
# The same on ASCII text, where \w has no marks and no unspaced script to leave out.
_ASCII_WORD = re.compile(r"\w+(?:['\-]\w+)*")


def count_words(text: str) -> int:
    """Words: spaced-script words plus the dictionary words of unspaced scripts
    (``len(word_units(text))``)."""
    if text.isascii():
        return len(_ASCII_WORD.findall(text))
    if not _UNSPACED_CHAR.search(text):
        return len(_word_pattern(text).findall(text))
    return len(_merge_unspaced(text, _word_pattern(text)))


def character_units(text: str) -> list[str]:
    """Spaced-script words and unspaced-script characters one each (with the marks
    that follow a character), in reading order: the units of character n-grams
    (MinHash shingles of Chinese or Japanese text), not words."""
    if text.isascii():
        return _ASCII_WORD.findall(text)
    return _CHARACTER_UNIT.findall(text)


def unspaced_ratio(text: str) -> float:
    """Share of letters that belong to unspaced scripts (0 for English, ~1 for Chinese)."""
    if text.isascii() or not _UNSPACED_CHAR.search(text):
        return 0.0  # no unspaced character: 0 of any number of letters
    letters = sum(map(str.isalpha, text))
    if not letters:
        return 0.0
    # subn counts the matches findall would list, without making a string of each
    return min(1.0, _UNSPACED_CHAR.subn("", text)[1] / letters)


class _SpacedOut(dict):
    """``str.translate``'s table for ``fold_for_hash``: a code point of a Unicode
    category P, S, Z or C (punctuation, symbols, separators, controls and the
    unassigned) to a space, any other to itself. Filled as code points are met, from
    ``unicodedata``: a text's alphabet is small, and a lookup costs a fifth of asking
    ``unicodedata.category`` for every character."""

    def __missing__(self, code: int) -> int:
        value = 32 if unicodedata.category(chr(code))[0] in "PSZC" else code
        self[code] = value
        return value


_SPACED_OUT = _SpacedOut()


def fold_for_hash(text: str) -> str:
    """Text with case, punctuation and whitespace folded, for exact-duplicate keys:
    NFKC, case-folded, every character of a category P, S, Z or C a space, runs of
    white space one space, none at either end."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().translate(_SPACED_OUT).split())


# One unit of ``character_units``: an unspaced-script character, or a spaced-script word.
_CHARACTER_UNIT = regex.compile(f"{_UNSPACED_UNIT}|{_SPACED_WORD.pattern}", regex.V1)
# Punctuation of CJK text, written without a space before the next character.
_CJK_PUNCT = "\u3000-\u3004\u3008-\u3020\u302a-\u3030\u3036\u3037\u303c-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
# A whitespace-delimited token as Gopher counts words, except that unspaced-script
# text is split into its dictionary words and CJK punctuation belongs to no token.
_SPACED_TOKEN = regex.compile(f"[^\\s{_UNSPACED}{_CJK_PUNCT}]+", regex.V1)
# The same class read by re, which differs from regex only in its white space: re's
# \s also holds U+001C-U+001F (tests/filters/test_text.py checks every code point), so
# a text without those gets the same matches from it, several times faster.
_UNSPACED_TEXT_TOKEN = re.compile(f"[^\\s{_UNSPACED}{_CJK_PUNCT}]+")
_RE_ONLY_SPACE = re.compile("[\x1c-\x1f]")


def _class_of(chars: str) -> str:
    """A character class (``[...]``) of exactly ``chars``, as ranges of code points."""
    points = sorted(map(ord, chars))
    ranges = []
    start = prev = points[0]
    for cp in points[1:]:
        if cp != prev + 1:
            ranges.append((start, prev))
            start = cp
        prev = cp
    ranges.append((start, prev))
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


@cache
def _bmp_word() -> re.Pattern:
    """``_SPACED_WORD`` for a text of the Basic Multilingual Plane, read by ``re``: its
    word class written out as the characters below U+10000 that ``regex`` puts in it
    (marks included, U+00B2 and other digits ``re`` calls word characters left out),
    so the same pattern over the same class: the same matches, in a third to a fifth
    of the time. Built on first use (about 30 ms), not at import."""
    every = "".join(map(chr, range(0x10000)))
    word = f"[{_class_of(''.join(regex.findall(_WORD_CHAR, every, regex.V1)))}]"
    return re.compile(f"{word}+(?:['’\\-]{word}+)*")


def _word_pattern(text: str):
    """``_SPACED_WORD``, or its ``re`` reading (``_bmp_word``) when ``text`` has no
    character beyond the BMP."""
    return _SPACED_WORD if _ASTRAL.search(text) else _bmp_word()


def _plain_tokens(text: str) -> list[str]:
    """``_SPACED_TOKEN.findall(text)`` of a text without an unspaced-script character:
    ``str.split`` where it also has no CJK punctuation and none of U+001C-U+001F (re's
    ``\\S+`` is ``str.split``, and re reads the class as regex does but for those four
    spaces: tests/filters/test_text.py checks both on every code point), else re's
    reading of the class, else regex."""
    if _SPLIT_APART.search(text) is None:
        return text.split()
    return (_SPACED_TOKEN if _RE_ONLY_SPACE.search(text) else _UNSPACED_TEXT_TOKEN).findall(text)


_SPLIT_APART = re.compile(f"[\x1c-\x1f{_CJK_PUNCT}]")

# Marks that end a sentence, across scripts: Latin, CJK (full and half width),
# Arabic, Devanagari, Armenian, Ethiopic, Myanmar, Khmer, Tibetan; a closing quote
# after them counts.
TERMINAL_PUNCTUATION = (
    ".", "!", "?", "\u2026",  # … (Latin)
    "\u3002", "\uff01", "\uff1f", "\uff0e", "\uff61",  # 。！？．｡
    "\u061f", "\u06d4",  # Arabic ؟ ۔
    "\u0964", "\u0965",  # Devanagari । ॥
    "\u0589", "\u1362", "\u104b",  # Armenian ։, Ethiopic ።, Myanmar ။
    "\u17d4", "\u17d5", "\u0f0d",  # Khmer ។ ៕, Tibetan །
)
_CLOSING = "\"'\u201d\u2019\u00bb\u300d\u300f\uff09)]\u3011"  # ” ’ » 」 』 ） ) ] 】
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f\uff61\u061f\u06d4\u0964\u0965\u0589\u1362\u104b\u17d4\u17d5\u0f0d]+")
# Thai and Lao end a sentence with a space, not a mark: a line that ends in their
# letters ends its sentence (The Unicode Standard, ch. 16: Thai and Lao separate
# phrases and sentences with spaces).
_SPACE_TERMINATED = re.compile("[\u0e01-\u0e4e\u0e81-\u0ece]$")
_SPACE_SCRIPT = re.compile("[\u0e01-\u0e4e\u0e81-\u0ece]")
_SENTENCE_STRIP = " " + _CLOSING


# ICU word-break rule status: at or above this, a segment is a word (number, letter,
# kana or ideograph); below it, spaces and punctuation (UBRK_WORD_NONE_LIMIT).
_WORD_STATUS = 100
_KANA_STATUS = 300
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_breakers = threading.local()


def _word_breaker():
    """This thread's ICU word-break iterator (made on first use; an iterator holds
    the text it walks, so threads of one worker never share one)."""
    breaker = getattr(_breakers, "words", None)
    if breaker is None:
        import icu

        breaker = _breakers.words = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
    return breaker


def _unspaced_words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each ICU word of ``text`` that begins with an unspaced-script
    character. ICU counts offsets in UTF-16 code units; they are mapped back to
    string indices when the text holds characters beyond the BMP (emoji)."""
    breaker = _word_breaker()
    breaker.setText(text)
    status = breaker.getRuleStatus
    unspaced = _UNSPACED_CHAR.match
    spans = []
    start = 0
    if _ASTRAL.search(text):
        index = []
        for i, ch in enumerate(text):
            index.append(i)
            if ch > "\uffff":
                index.append(i)
        index.append(len(text))
        for end in breaker:
            if status() >= _WORD_STATUS and unspaced(text, index[start]):
                spans.append((index[start], index[end]))
            start = end
        return spans
    for end in breaker:
        # a kana or ideographic word (status 300-499) starts with a character of
        # _UNSPACED (every such character of the BMP is in it); a letter or number
        # word may be of any script, so its first character is looked at
        st = status()
        if st >= _KANA_STATUS or (st >= _WORD_STATUS and unspaced(text, start)):
            spans.append((start, end))
        start = end
    return spans


def _merge_unspaced(text: str, spaced: "regex.Pattern", words: list[tuple[int, int]] | None = None) -> list[str]:
    """The unspaced-script words of ``text`` (``words``: their spans, when the caller
    has them) and the ``spaced`` matches outside them, in reading order, in one pass
    over both: the words are sorted and disjoint, so the word a match could start in
    is the last one that starts at or before it. (A word starts with an
    unspaced-script character, a match never does; were they to start at one place,
    the match would be inside the word and left out.)"""
    if words is None:
        words = _unspaced_words(text)
    out: list[str] = []
    append = out.append
    i, n = 0, len(words)
    end = -1
    for m in spaced.finditer(text):
        start = m.start()
        while i < n and words[i][0] <= start:
            s, end = words[i]
            append(text[s:end])
            i += 1
        if start >= end:
            append(m.group())
    out.extend([text[s:e] for s, e in words[i:]])
    return out


def unspaced_word_spans(text: str) -> list[tuple[int, int]] | None:
    """(start, end) of the unspaced-script words of ``text``; None when it has no
    unspaced-script character (``word_units`` and ``tokens`` can share one result)."""
    if text.isascii() or not _UNSPACED_CHAR.search(text):
        return None
    return _unspaced_words(text)


def word_units(text: str, spans: list[tuple[int, int]] | None = None) -> list[str]:
    """The words of ``text`` in reading order (see ``count_words``). ``spans``:
    ``unspaced_word_spans(text)`` when the caller has it."""
    if text.isascii():
        return _ASCII_WORD.findall(text)
    if spans is None and not _UNSPACED_CHAR.search(text):
        return _word_pattern(text).findall(text)
    return _merge_unspaced(text, _word_pattern(text), spans)


def tokens(text: str, spans: list[tuple[int, int]] | None = None) -> list[str]:
    """Whitespace-delimited tokens, with unspaced-script text split into its words."""
    if text.isascii():
        return text.split()
    if spans is None and not _UNSPACED_CHAR.search(text):
        return _plain_tokens(text)
    pattern = _SPACED_TOKEN if _RE_ONLY_SPACE.search(text) else _UNSPACED_TEXT_TOKEN
    return _merge_unspaced(text, pattern, spans)


def count_with_letter(tokens: list[str]) -> int:
    """The tokens that hold an alphabetic character (``str.isalpha``): those that
    are letters only are passed over in C (``filterfalse``), and only the others
    are looked into."""
    others = list(filterfalse(str.isalpha, tokens))
    return len(tokens) - len(others) + sum(1 for token in others if any(map(str.isalpha, token)))


def lines(text: str) -> list[str]:
    """Non-empty lines, stripped."""
    return [s for s in (line.strip() for line in text.split("\n")) if s]


# Invisible format characters a line may end with after its punctuation: the
# right-to-left, left-to-right and Arabic letter marks that right-to-left text puts
# after a full stop so that it shows on the right side, bidirectional embeddings and
# isolates closed at the line's end, zero-width spaces and joiners, the BOM.
_TRAILING_FORMAT = "\u200b\u200c\u200d\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff"
_LINE_END_STRIP = _CLOSING + _TRAILING_FORMAT


def ends_sentence(line: str) -> bool:
    """Whether ``line`` ends in terminal punctuation (a closing quote or an invisible
    format character may follow it), or, in Thai and Lao, in a letter: those scripts
    end a sentence with a space."""
    end = line.rstrip(_LINE_END_STRIP)
    return end.endswith(TERMINAL_PUNCTUATION) or bool(_SPACE_TERMINATED.search(end))


def count_sentences(line: str) -> int:
    """Sentences in one line: runs of terminal punctuation, plus an unterminated tail;
    in Thai and Lao, the space-separated runs of their letters (see ``ends_sentence``)."""
    parts = _SENTENCE_END.split(line)
    if _SPACE_SCRIPT.search(line) is None:  # no Thai or Lao letter: one sentence a part
        return sum(1 for part in parts if part.strip(_SENTENCE_STRIP))
    count = 0
    for part in parts:
        if not part.strip(_SENTENCE_STRIP):
            continue
        spaced = [chunk for chunk in part.split() if len(_SPACE_SCRIPT.findall(chunk)) >= 2]
        count += max(1, len(spaced))
    return count


def spaced_words(text: str) -> list[str]:
    """The words of spaced scripts only (unspaced-script characters left out)."""
    if text.isascii():
        return _ASCII_WORD.findall(text)
    return _word_pattern(text).findall(text)


class TextView:
    """One document's main text, joined once and split into lines, word units and
    tokens on first use, so that the rule families share the work instead of each
    re-joining and re-tokenising the text. Every rule takes ``view=`` and builds
    its own from ``doc.text`` when given none (a rule stays a pure function)."""

    def __init__(self, text: str):
        self.text = text
        # What a rule family measured on this text and another family reuses, by a
        # key of its own (e.g. the flagged-word scan, read again by the node rule).
        self.memo: dict = {}

    @cached_property
    def lines(self) -> list[str]:
        return lines(self.text)

    @cached_property
    def line_ends(self) -> list[bool]:
        """``ends_sentence`` of each of ``lines`` (FineWeb's and C4's rules both ask)."""
        return list(map(ends_sentence, self.lines))

    @cached_property
    def unspaced_spans(self) -> list[tuple[int, int]] | None:
        """The unspaced-script words' spans, found once for ``word_units`` and ``tokens``."""
        return unspaced_word_spans(self.text)

    @cached_property
    def word_units(self) -> list[str]:
        return word_units(self.text, self.unspaced_spans)

    @property
    def word_count(self) -> int:
        return len(self.word_units)

    @cached_property
    def folded_words(self) -> list[str]:
        """The word units, casefolded (repetition rules compare them so, and Gopher's
        stop words)."""
        return list(map(str.casefold, self.word_units))

    @cached_property
    def tokens(self) -> list[str]:
        return tokens(self.text, self.unspaced_spans)

    @cached_property
    def spaced_words(self) -> list[str]:
        # Without an unspaced-script character (no spans), ``word_units`` and
        # ``spaced_words`` take the same path: the same list, found once.
        if self.unspaced_spans is None:
            return self.word_units
        return spaced_words(self.text)

    @cached_property
    def unspaced_ratio(self) -> float:
        return unspaced_ratio(self.text)


def view_of(doc, view: "TextView | None") -> TextView:
    """``view`` when the caller shares one, else a fresh one of ``doc.text``."""
    return view if view is not None else TextView(doc.text)
