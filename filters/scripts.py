"""Writing systems: the main script of a text, the scripts a language is written in,
and language ID asked again when the two disagree.

A language identifier reads a sample of the page (``language.clean_sample``: its
long lines first). On a page whose script says otherwise, that sample can mislead
it: a Chinese porn-spam home page is short link lines of Han characters with a few
long lines of English boilerplate, and was identified as English, so its Chinese
adult words were looked for in the English list and none was found.
``reidentify_by_script`` runs right after ``language.annotate_language``: when the
letters of the page are mostly (``min_share``) of one script, and the identified
language is not written in it, the identifier is asked again, on the page's lines
in that script, among the languages written in it.

- **A character's script** is its Unicode Script property (ICU, ``icu.Script``,
  ISO 15924 codes), letters only; Hiragana and Katakana count as one, ``Kana``.
- **A language's scripts** come from CLDR's likely subtags (``babel``): the script
  of the language's own entry (``sr`` -> ``sr_Cyrl_RS``) and of every entry that
  names the language with another script (``sr_Latn``, ``uz_Cyrl``, ``pa_Arab``),
  merged over the members of a macrolanguage as ``language.canonical_language``
  merges them (``hbs``: Cyrillic and Latin). ``Jpan`` is Han and Kana, ``Kore``
  Hangul and Han, ``Hans`` and ``Hant`` Han. A language CLDR does not know is never
  said to contradict a script.
- **Asked again among the script's languages**: an identifier that offers
  ``identify_among(sample, languages)`` (the best label among them) is asked so;
  any other is asked ``identify(sample)`` on the lines in that script, and its
  answer is taken only when it is one of those languages. Either way the change
  does not depend on which identifier runs.

A document identified again carries ``language.script_reidentified`` (1) and
``language.script_share`` (the main script's share of its letters).

**Cost.** Most pages are settled without counting scripts, by counts made in C: a
language written in Latin is kept when the non-ASCII characters could not be the
share asked for (``latin_could_lose``), any other when its own scripts' letters
leave no room for another (``own_script_holds``: one ``re.sub`` with a class built
from ICU's sets of the scripts' letters). Only the rest, pages with much text in a
script their language is not written in, count the letters of an even spread of
1,024 characters by script. On the 27 clean fixture pages: 2-3 µs for the pages in
Latin script, 7-36 µs for the others, against 30-160 µs for CLD2's language ID
(a shared 2-core machine at load average 12).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from functools import lru_cache
from typing import Any, Optional

from mmcurate.filters import language
from mmcurate.filters.text import TextView
from mmcurate.schemas import Document

REIDENTIFIED = "language.script_reidentified"
SCRIPT_SHARE = "language.script_share"

# ISO 15924 codes of writing systems that are several Unicode scripts, as the
# characters of a text are counted: Hiragana and Katakana as one.
_CHAR_SCRIPT_ALIASES = {"Hira": "Kana", "Hrkt": "Kana"}
# The Unicode scripts a counted script stands for, as ICU's UnicodeSet names them.
_REGEX_SCRIPTS = {"Kana": ("Hira", "Kana")}
_COMPOSITE_SCRIPTS = {
    "Jpan": ("Hani", "Kana"),
    "Kore": ("Hang", "Hani"),
    "Hans": ("Hani",),
    "Hant": ("Hani",),
    "Hanb": ("Hani", "Bopo"),
    # variants of one Unicode script
    "Aran": ("Arab",),
    "Latf": ("Latn",),
    "Latg": ("Latn",),
    "Cyrs": ("Cyrl",),
    "Geok": ("Geor",),
    "Syre": ("Syrc",),
    "Syrj": ("Syrc",),
    "Syrn": ("Syrc",),
    "Hira": ("Kana",),
    "Hrkt": ("Kana",),
}


@lru_cache(maxsize=1 << 16)
def char_script(ch: str) -> str:
    """The ISO 15924 code of ``ch``'s Unicode script (``Zyyy``: common to all)."""
    import icu

    code = icu.Script.getScript(ch).getShortName()
    return _CHAR_SCRIPT_ALIASES.get(code, code)


def letter_scripts(text: str) -> Counter:
    """Letters of ``text`` by script."""
    counts: Counter = Counter()
    for ch, n in Counter(text).items():
        if ch.isalpha():
            counts[char_script(ch)] += n
    return counts


# Every byte of ASCII but its letters: what ``bytes.translate`` deletes to count them.
_ASCII_NON_LETTERS = bytes(b for b in range(128) if not chr(b).isalpha())
# Characters of a text the main script is estimated from (an even spread of them).
SAMPLE_CHARS = 1024


def latin_could_lose(text: str, min_share: float) -> bool:
    """Whether another script could hold ``min_share`` of ``text``'s letters, counted
    in C: it cannot when the non-ASCII characters (at most every letter of another
    script) are under that share of them and of the ASCII letters."""
    ascii_bytes = text.encode("ascii", "ignore")
    non_ascii = len(text) - len(ascii_bytes)
    ascii_letters = len(ascii_bytes.translate(None, _ASCII_NON_LETTERS))
    return non_ascii > 0 and non_ascii >= min_share * (non_ascii + ascii_letters)


@lru_cache(maxsize=512)
def _not_written_in(scripts: frozenset[str]) -> "re.Pattern[str]":
    """A pattern of the runs of characters that are not letters of ``scripts``
    (their letters as ICU's UnicodeSet lists them)."""
    import icu

    letters = icu.UnicodeSet()
    for code in sorted({code for script in scripts for code in _REGEX_SCRIPTS.get(script, (script,))}):
        try:
            letters.addAll(icu.UnicodeSet(f"[[:sc={code}:]&[:L:]]"))
        except icu.ICUError:  # a script code this ICU does not know: none of its letters
            continue
    ranges = []
    for i in range(letters.getRangeCount()):
        first, last = letters.getRangeStart(i), letters.getRangeEnd(i)
        ranges.append(re.escape(first) if first == last else f"{re.escape(first)}-{re.escape(last)}")
    return re.compile(f"[^{''.join(ranges)}]+" if ranges else r"[\s\S]+")


def own_script_holds(text: str, scripts: frozenset[str], min_share: float) -> bool:
    """Whether the letters of ``scripts`` in ``text`` are so many that no other script
    can hold ``min_share`` of its letters, counted in C (against the characters that
    are not white space, of which the letters are a part)."""
    own = len(_not_written_in(scripts).sub("", text))
    visible = len(text) - text.count(" ") - text.count("\n")
    return own > (1 - min_share) * visible


def spread_sample(text: str, size: int = SAMPLE_CHARS) -> str:
    """About ``size`` characters of ``text``, evenly spread over it."""
    return text if len(text) <= size else text[:: len(text) // size + 1]


def main_script(text: str) -> tuple[Optional[str], float]:
    """The script most of ``text``'s letters are written in, and its share of them
    (``(None, 0.0)`` for a text without letters)."""
    if text.isascii():
        return ("Latn", 1.0) if any(ch.isalpha() for ch in text) else (None, 0.0)
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not total:
        return None, 0.0
    script, n = counts.most_common(1)[0]
    return script, n / total


def _expand(script: str) -> tuple[str, ...]:
    return _COMPOSITE_SCRIPTS.get(script, (script,))


@lru_cache(maxsize=1)
def _script_table() -> dict[str, frozenset[str]]:
    """Canonical language code -> the scripts it is written in (module docstring)."""
    from babel.core import get_global

    table: dict[str, set[str]] = {}
    for key, likely in get_global("likely_subtags").items():
        parts = key.split("_")
        if parts[0] == "und" or len(parts) > 2:
            continue
        if len(parts) == 2 and not (len(parts[1]) == 4 and parts[1].istitle()):
            continue  # a region, not a script
        likely_parts = likely.split("_")
        script = parts[1] if len(parts) == 2 else (likely_parts[1] if len(likely_parts) > 1 else "")
        if not script:
            continue
        code = language.canonical_language(parts[0])
        table.setdefault(code, set()).update(_expand(script))
    return {code: frozenset(scripts) for code, scripts in table.items()}


def language_scripts(code: str) -> frozenset[str]:
    """The scripts the language ``code`` (any scheme ``canonical_language`` reads) is
    written in; empty when CLDR does not know it."""
    return _script_table().get(language.canonical_language(code), frozenset())


@lru_cache(maxsize=256)
def languages_written_in(script: str) -> frozenset[str]:
    """Every canonical language code written in ``script``."""
    return frozenset(code for code, scripts in _script_table().items() if script in scripts)


def script_lines(text: str, script: str) -> str:
    """The lines of ``text`` whose letters are mostly of ``script``."""
    out = []
    for line in text.split("\n"):
        counts = letter_scripts(line)
        total = sum(counts.values())
        if total and counts.get(script, 0) * 2 > total:
            out.append(line)
    return "\n".join(out)


def identify_in_script(identifier: Any, sample: str, script: str) -> Optional[language.LanguagePrediction]:
    """The identifier's answer for ``sample`` among the languages written in
    ``script``, or None when it names none of them."""
    candidates = languages_written_in(script)
    if not candidates or not sample:
        return None
    among = getattr(identifier, "identify_among", None)
    prediction = among(sample, candidates) if among is not None else identifier.identify(sample)
    if prediction is None or prediction.language not in candidates:
        return None
    return prediction


def reidentify_by_script(
    doc: Document, *, model: Any, max_chars: int, min_share: float, view: TextView | None = None
) -> Document:
    """``doc`` identified again among the languages of its main script when its
    identified language is not written in it (module docstring); else ``doc``.
    A transform, like ``language.annotate_language``: ``language_allowed`` decides."""
    scripts = language_scripts(doc.language) if doc.language else frozenset()
    text = (view.text if view is not None else doc.text)[:max_chars]
    if doc.language and not scripts:
        return doc  # a language CLDR does not know: no contradiction can be shown
    if "Latn" in scripts and not latin_could_lose(text, min_share):
        return doc  # the common case, decided without counting scripts
    if scripts and own_script_holds(text, scripts, min_share):
        return doc
    script, share = main_script(spread_sample(text))
    if script is None or share < min_share or script in scripts:
        return doc
    identifier = model if hasattr(model, "identify") else language.Lid176Identifier(model)
    sample = language.clean_sample(script_lines(text, script), max_chars=max_chars, min_line_chars=0)
    prediction = identify_in_script(identifier, sample, script)
    if prediction is None:
        return doc
    signals = dict(doc.signals)
    signals[REIDENTIFIED] = 1.0
    signals[SCRIPT_SHARE] = share
    if prediction.threshold is not None:
        signals[language.LANGUAGE_THRESHOLD] = prediction.threshold
    else:
        signals.pop(language.LANGUAGE_THRESHOLD, None)
    return dataclasses.replace(doc, language=prediction.language, language_score=prediction.score, signals=signals)
