"""Text measures that work beyond English.

Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer,
Myanmar, Tibetan) are counted per character: one character is one word unit, so a
Chinese page is never "one word long". Everything else is counted by runs of
letters and digits (which also splits on punctuation, not on spaces alone).
"""

from __future__ import annotations

import re
import unicodedata

# Unicode blocks of scripts written without word separators.
_UNSPACED = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0002ebef"  # CJK extensions B-F
)
_UNSPACED_CHAR = re.compile(f"[{_UNSPACED}]")
# A word of a spaced script: a run of letters, marks and digits (apostrophes and
# hyphens inside a word keep it whole: "don't", "state-of-the-art").
_SPACED_WORD = re.compile(rf"(?:(?![{_UNSPACED}])[\w])+(?:['’\-](?:(?![{_UNSPACED}])[\w])+)*")


def count_words(text: str) -> int:
    """Word units: spaced-script words plus unspaced-script characters."""
    return len(_UNSPACED_CHAR.findall(text)) + len(_SPACED_WORD.findall(text))


def unspaced_ratio(text: str) -> float:
    """Share of letters that belong to unspaced scripts (0 for English, ~1 for Chinese)."""
    letters = sum(1 for ch in text if ch.isalpha())
    if not letters:
        return 0.0
    return len(_UNSPACED_CHAR.findall(text)) / letters


def fold_for_hash(text: str) -> str:
    """Text with case, punctuation and whitespace folded, for exact-duplicate keys."""
    text = unicodedata.normalize("NFKC", text).casefold()
    kept = [ch if not unicodedata.category(ch).startswith(("P", "S", "Z", "C")) else " " for ch in text]
    return " ".join("".join(kept).split())
