"""FineWeb's own rules (Penedo et al. 2024, "The FineWeb Datasets: Decanting the Web
for the Finest Text Data at Scale", section 3.6 and appendix E.4, table 2; the
released datatrove ``FineWebQualityFilter`` defaults).

- ``fineweb.line_punctuation``: fewer than 12% of lines end in terminal punctuation;
- ``fineweb.short_lines``: more than 67% of lines are at most 30 characters long;
- ``fineweb.duplicate_line_chars``: more than 1% of the characters (newlines not
  counted) are in lines that repeat an earlier line. Appendix E.4 and datatrove say
  0.01, the text of section 3.6 says 0.1; mmcurate follows the released code;
- ``fineweb.list_like``: more than 0.3 line breaks per word (datatrove's
  ``new_line_ratio``; not described in the paper).

Terminal punctuation covers CJK, Arabic and Devanagari full stops; words are word
``text.count_words``, so Chinese, Japanese and Thai are counted in dictionary words
(datatrove also counts them with a word tokenizer per language).
"""

from __future__ import annotations

from mmcurate.filters import reasons
from mmcurate.filters.text import TextView, view_of
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

LINE_PUNCTUATION_RATIO = "fineweb.line_punctuation_ratio"
SHORT_LINE_RATIO = "fineweb.short_line_ratio"
DUPLICATE_LINE_CHAR_RATIO = "fineweb.duplicate_line_char_ratio"
NEWLINE_WORD_RATIO = "fineweb.newline_word_ratio"


def rules(
    doc: Document,
    *,
    min_line_punctuation_ratio: float,
    short_line_chars: int,
    max_short_line_ratio: float,
    max_duplicate_line_char_ratio: float,
    max_newline_word_ratio: float,
    view: TextView | None = None,
) -> Verdict:
    v = view_of(doc, view)
    text = v.text
    text_lines = v.lines
    n_lines = len(text_lines) or 1
    punct = sum(v.line_ends) / n_lines
    short = sum(1 for line in text_lines if len(line) <= short_line_chars) / n_lines
    seen: set[str] = set()
    dup_chars = 0
    for line in text_lines:
        if line in seen:
            dup_chars += len(line)
        else:
            seen.add(line)
    chars = len(text) - text.count("\n")
    dup = dup_chars / chars if chars else 0.0
    words = v.word_count
    # Line breaks between non-empty lines, so that the blank line mmcurate puts
    # between text nodes counts once, as the single newline of datatrove's text.
    newlines = (len(text_lines) - 1) / words if words else 0.0
    signals = {
        LINE_PUNCTUATION_RATIO: punct,
        SHORT_LINE_RATIO: short,
        DUPLICATE_LINE_CHAR_RATIO: dup,
        NEWLINE_WORD_RATIO: newlines,
    }
    if punct < min_line_punctuation_ratio:
        return reject(reasons.FINEWEB_LINE_PUNCTUATION, punct, min_line_punctuation_ratio, **signals)
    if short > max_short_line_ratio:
        return reject(reasons.FINEWEB_SHORT_LINES, short, max_short_line_ratio, **signals)
    if dup > max_duplicate_line_char_ratio:
        return reject(reasons.FINEWEB_DUPLICATE_LINE_CHARS, dup, max_duplicate_line_char_ratio, **signals)
    if newlines > max_newline_word_ratio:
        return reject(reasons.FINEWEB_LIST_LIKE, newlines, max_newline_word_ratio, **signals)
    return keep(**signals)
