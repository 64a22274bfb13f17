"""Flagged words: the share of a text's word units that are obscene or adult words,
per document and per text node, with a list per language.

The lists are the LDNOOBW lists shipped in ``filters/data/flagged_words/`` (CC BY
4.0, see the README there), chosen by the document's language (``Document.language``,
set by language ID, and identified again when the page's script contradicts it:
``filters/scripts.py``). The document rule counts the words of the text and of the
page's title (``Document.title``) together: spam pages fill their title with the
words they are found by. Matching, on NFKC-normalised, case-folded text with whitespace
runs folded to one space:

- an entry whose first (last) character belongs to a spaced script (Latin, Cyrillic,
  Arabic, Hangul, digits, ...) must start (end) a word: the character before (after)
  it is not a letter or digit of a spaced script. So ``anal`` never matches inside
  "analysis", and ``sex`` not inside "Essex";
- an entry written in a script without word separators (Chinese, Japanese, Thai)
  matches as a substring, as those scripts have no spaces to mark word ends.

Overlapping matches resolve to the leftmost, then longest, entry. Each match counts
the words of its entry (``filters.text.count_words``: spaced words, and the
dictionary words of unspaced scripts), and the ratio is matched words over the
text's words, so a ratio means the same in English and in Chinese.

Ambiguous entries (``<lang>.ambiguous.txt``: anatomy, medicine, crime reporting,
everyday words and substrings of them) count only when the same text also holds
an entry that is not ambiguous: "vagina" in a health article does not reject it,
"vagina" beside pornographic slang counts.

Thresholds: OBELICS (Laurençon et al. 2023, config_filter_web_documents.yaml)
removes paragraphs whose flagged-word ratio exceeds 0.01 and documents whose ratio
exceeds 0.01; BigScience ROOTS (Laurençon et al. 2022, data_tooling
ac_dc/parameters_filtering.py) uses 0.01 for English, Spanish and Indonesian. The
document rule here runs on the text as extracted, before the node rule removes
anything, so a page made of flagged paragraphs is rejected rather than cleaned into
a remainder that passes.

``load_flagged_words`` reads the files (once per worker, in ``DoFn.setup``); the
functions that measure and decide do no I/O.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

from mmcurate.filters import reasons
from mmcurate.filters.text import TextView, count_words
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document, TextNode

RATIO = "safety.flagged_words.ratio"  # counted units / word units, whole document
MATCHES = "safety.flagged_words.matches"  # entries counted in the document (text and title)
TITLE_MATCHES = "safety.flagged_words.title_matches"  # of which in the title
AMBIGUOUS = "safety.flagged_words.ambiguous"  # ambiguous entries found (counted or not)
CHECKED = "safety.flagged_words.checked"  # 1 when a list exists for the document's language
NODES_REMOVED = "nodes.removed.flagged_words"  # text nodes the node rule removed

# fastText (lid.176) codes that differ from the list's file names.
LANGUAGE_ALIASES = {"tl": "fil", "nb": "no", "nn": "no"}

# Letters of scripts written without word separators (see filters.text).
_UNSPACED = re.compile(
    "[\u0e00-\u0e7f\u0e80-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u309f\u30a0-\u30ff"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ebef]"
)


def normalize(text: str) -> str:
    """What both the lists and the texts are matched as: NFKC, case-folded, one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _spaced_word_char(ch: str) -> bool:
    """A letter or digit of a spaced script (a word boundary is anything else)."""
    return (ch.isalnum() or ch == "_") and not _UNSPACED.match(ch)


@dataclass(frozen=True)
class WordList:
    """One language's entries, compiled into an Aho-Corasick automaton (pyahocorasick)
    whose values are ``(entry, ambiguous, units, bounded_start, bounded_end)``."""

    language: str
    entries: frozenset[str]
    ambiguous: frozenset[str]
    automaton: Any = field(compare=False, repr=False)

    @classmethod
    def build(cls, language: str, entries: Iterable[str], ambiguous: Iterable[str] = ()) -> "WordList":
        import ahocorasick

        words = frozenset(e for e in (normalize(x) for x in entries) if e)
        context = frozenset(a for a in (normalize(x) for x in ambiguous) if a in words)
        automaton = ahocorasick.Automaton()
        for entry in words:
            automaton.add_word(
                entry,
                (entry, entry in context, max(1, count_words(entry)), _spaced_word_char(entry[0]), _spaced_word_char(entry[-1])),
            )
        automaton.make_automaton()
        return cls(language, words, context, automaton)


@dataclass(frozen=True)
class Matches:
    """Flagged entries found in one text."""

    units: int  # word units of the text
    strong_units: int
    ambiguous_units: int
    entries: Mapping[str, int]  # entry -> times counted
    strong: int  # matches of entries that are not ambiguous
    ambiguous: int  # matches of ambiguous entries

    @property
    def counted_units(self) -> int:
        return self.strong_units + (self.ambiguous_units if self.strong else 0)

    @property
    def ratio(self) -> float:
        return self.counted_units / self.units if self.units else 0.0

    @property
    def counted(self) -> int:
        return self.strong + (self.ambiguous if self.strong else 0)


NO_MATCHES = Matches(0, 0, 0, {}, 0, 0)


def find(
    text: str, words: WordList, *, units: Optional[int] = None, count_units: Callable[[str], int] = count_words
) -> Matches:
    """The flagged entries of ``text`` (see the module docstring for the rules).
    Word units are counted (by ``count_units``) only when something matched (or
    given as ``units``)."""
    norm = normalize(text)
    spans = []
    for end, (entry, ambiguous, n_units, bounded_start, bounded_end) in words.automaton.iter(norm):
        start = end - len(entry) + 1
        if bounded_start and start > 0 and _spaced_word_char(norm[start - 1]):
            continue
        if bounded_end and end + 1 < len(norm) and _spaced_word_char(norm[end + 1]):
            continue
        spans.append((start, -len(entry), end, entry, ambiguous, n_units))
    if not spans:
        return dataclasses.replace(NO_MATCHES, units=units or 0) if units else NO_MATCHES
    spans.sort()
    strong_units = ambiguous_units = strong = ambiguous_count = 0
    found: Counter[str] = Counter()
    last_end = -1
    for start, _, end, entry, ambiguous, n_units in spans:
        if start <= last_end:
            continue  # overlaps an earlier (or longer) match
        last_end = end
        found[entry] += 1
        if ambiguous:
            ambiguous_units += n_units
            ambiguous_count += 1
        else:
            strong_units += n_units
            strong += 1
    total = units if units is not None else count_units(text)
    return Matches(total, strong_units, ambiguous_units, dict(found), strong, ambiguous_count)


@dataclass(frozen=True)
class FlaggedWords:
    """The word lists of every language, loaded once per worker."""

    lists: Mapping[str, WordList]
    fallback_language: str = ""

    def for_language(self, language: str) -> Optional[WordList]:
        code = (language or "").lower().replace("_", "-").split("-")[0]
        code = LANGUAGE_ALIASES.get(code, code)
        found = self.lists.get(code)
        if found is None and self.fallback_language:
            found = self.lists.get(self.fallback_language)
        return found


def shipped_lists_dir() -> Path:
    return Path(str(resources.files("mmcurate.filters") / "data" / "flagged_words"))


def read_list(lines: Iterable[str]) -> list[str]:
    """Entries of a list file: one a line; blank lines and ``#`` comment lines skipped
    (a ``#`` inside an entry is kept)."""
    return [s for s in (line.strip() for line in lines) if s and not s.startswith("#")]


def load_flagged_words(directory: str | Path = "", languages: Iterable[str] = (), fallback_language: str = "") -> FlaggedWords:
    """The lists in ``directory`` (default: the shipped LDNOOBW lists): ``<lang>.txt``
    and optional ``<lang>.ambiguous.txt``; only ``languages`` when given."""
    root = Path(directory) if directory else shipped_lists_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"flagged-word lists: not a directory: {root}")
    wanted = {LANGUAGE_ALIASES.get(c, c) for c in languages}
    lists = {}
    for path in sorted(root.glob("*.txt")):
        code = path.name[: -len(".txt")]
        if "." in code or (wanted and code not in wanted):
            continue
        entries = read_list(path.read_text(encoding="utf-8").splitlines())
        context = root / f"{code}.ambiguous.txt"
        ambiguous = read_list(context.read_text(encoding="utf-8").splitlines()) if context.is_file() else []
        lists[code] = WordList.build(code, entries, ambiguous)
    return FlaggedWords(lists, fallback_language)


def combine(first: Matches, second: Matches) -> Matches:
    """The matches of two texts counted as one (an ambiguous entry in either counts
    when either holds an entry that is not ambiguous)."""
    if not second.entries and not second.units:
        return first
    entries = Counter(first.entries)
    entries.update(second.entries)
    return Matches(
        first.units + second.units,
        first.strong_units + second.strong_units,
        first.ambiguous_units + second.ambiguous_units,
        dict(entries),
        first.strong + second.strong,
        first.ambiguous + second.ambiguous,
    )


def _detail(language: str, matches: Matches, limit: int = 8) -> str:
    top = sorted(matches.entries.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return f"language={language} " + ", ".join(f"{entry}x{n}" for entry, n in top)


def document_ratio(
    doc: Document,
    *,
    words: FlaggedWords,
    max_ratio: float,
    max_ratio_by_language: Mapping[str, float],
    view: TextView | None = None,
) -> Verdict:
    """Reject a document whose flagged-word ratio, over its text and title together,
    exceeds the threshold of its language (``max_ratio_by_language``, else
    ``max_ratio``). Ambiguous entries count only beside an unambiguous one. A
    language without a list is not checked.
    Given the document's shared ``view``, its word units are the view's (the same
    count as ``count_words``) and the matches are left in ``view.memo`` for
    ``FlaggedNodeCleanup``."""
    wordlist = words.for_language(doc.language)
    if wordlist is None:
        return keep(**{CHECKED: 0.0})
    if view is None:
        text_matches = find(doc.text, wordlist)
    else:
        text_matches = view.memo[(_SCAN, wordlist)] = find(view.text, wordlist, count_units=lambda _: view.word_count)
    title_matches = find(doc.title, wordlist) if doc.title else NO_MATCHES
    # Once either matched, the ratio's denominator is every word of text and title.
    if title_matches.entries and not text_matches.units:
        text_matches = dataclasses.replace(text_matches, units=view.word_count if view is not None else count_words(doc.text))
    elif text_matches.entries and doc.title and not title_matches.units:
        title_matches = dataclasses.replace(NO_MATCHES, units=count_words(doc.title))
    matches = combine(text_matches, title_matches)
    signals = {
        CHECKED: 1.0,
        RATIO: matches.ratio,
        MATCHES: float(matches.counted),
        AMBIGUOUS: float(matches.ambiguous),
        TITLE_MATCHES: float(title_matches.strong + (title_matches.ambiguous if matches.strong else 0)),
    }
    threshold = max_ratio_by_language.get(wordlist.language, max_ratio)
    if matches.ratio > threshold:
        return reject(reasons.SAFETY_FLAGGED_WORDS, matches.ratio, threshold, detail=_detail(wordlist.language, matches), **signals)
    return keep(**signals)


# ``view.memo`` key of a document's matches: (_SCAN, the word list).
_SCAN = "flagged_words.matches"


@dataclass(frozen=True)
class FlaggedNodeCleanup:
    """Removes text nodes whose own flagged-word ratio exceeds ``max_node_ratio``
    (OBELICS's node-level rule), counting them in ``nodes.removed.flagged_words``.
    A named document edit, not a filter: it returns the edited document."""

    words: FlaggedWords
    max_node_ratio: float

    def __call__(self, doc: Document, view: TextView | None = None) -> Document:
        """``view``: the document's shared view. When ``document_ratio`` found no entry
        in the whole text (its matches are in ``view.memo``), no node holds one: the
        text is the nodes joined by blank lines, and NFKC, case folding and the
        whitespace folding of ``normalize`` work within each node's part of it, so a
        node's normalised text is a space-bounded piece of the whole's, and every
        match in a node is a match there. Each node's ratio is then 0 and no node
        is looked at."""
        wordlist = self.words.for_language(doc.language)
        if wordlist is None:
            return doc.with_signals({NODES_REMOVED: 0.0})
        scanned = view.memo.get((_SCAN, wordlist)) if view is not None else None
        if scanned is not None and not scanned.entries and self.max_node_ratio >= 0:
            return doc.with_signals({NODES_REMOVED: 0.0})
        kept, removed = [], 0
        for node in doc.nodes:
            if isinstance(node, TextNode) and node.text.strip():
                if find(node.text, wordlist).ratio > self.max_node_ratio:
                    removed += 1
                    continue
            kept.append(node)
        out = dataclasses.replace(doc, nodes=tuple(kept)) if removed else doc
        return out.with_signals({NODES_REMOVED: float(removed)})
