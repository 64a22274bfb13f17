"""Machine-translated text: the quality stage's MT rules.

Pure rules over a document's signals and fields. The classifier score
(``mt_score``, from the MT model of the document's language,
``filters/translationese.py``) and the page markers (``mt.widget``, ``mt.notice``,
set at extraction by ``filters.mt_page``) are measured elsewhere; these functions
decide.

Thompson et al. 2024 ("A Shocking Amount of the Web is Machine Translated", ACL
Findings): content published in many languages at once is mostly low-quality
machine translation, so a page whose ``hreflang`` alternates span many languages is
evidence; so is a website-translation widget on a page served under a language
path, a notice that the page was translated automatically, and a URL that names one
language for content in another.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional
from urllib.parse import parse_qs, urlsplit

from mmcurate.filters import reasons
from mmcurate.filters.mt_page import NOTICE, WIDGET
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

MT_SCORE = "mt_score"
HREFLANG_LANGUAGES = "mt.hreflang_languages"
URL_LANGUAGE_MISMATCH = "mt.url_language_mismatch"

# A language code as sites write it in a path, subdomain or query: "fr", "pt-br", "zh_hans".
_LANG_CODE = re.compile(r"^([a-z]{2})(?:[-_](?:[a-z]{2}|[a-z]{4}))?$")
# ISO 639-1 codes (the ones fastText lid.176 can also return); an unlisted two-letter
# path segment ("tv", "us") is not a language.
_ISO_639_1 = frozenset(
    "af am an ar as av az ba be bg bh bn bo br bs ca ce co cs cv cy da de dv el en eo es et eu fa fi fr fy "
    "ga gd gl gn gu gv he hi hr ht hu hy ia id ie ilo io is it ja jv ka kk km kn ko ku kv kw ky la lb li lo "
    "lt lv mg mk ml mn mr ms mt my nds ne nl nn no oc or os pa pl ps pt qu rm ro ru sa sc sd sh si sk sl so "
    "sq sr su sv sw ta te tg th tk tl tr tt ug uk ur uz vi vo wa yi yo zh".split()
)


def _code(value: str) -> Optional[str]:
    match = _LANG_CODE.match(value.lower())
    if match and match.group(1) in _ISO_639_1:
        return match.group(1)
    return None


def url_language(url: str) -> Optional[str]:
    """The language a URL names: first path segment (/fr/...), subdomain (fr.example.org),
    or a ``lang``/``hl``/``language`` query parameter; None when it names none."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if segments:
        code = _code(segments[0])
        if code:
            return code
    host = (parts.hostname or "").split(".")
    if len(host) > 2:
        code = _code(host[0])
        if code:
            return code
    query = parse_qs(parts.query)
    for key in ("lang", "hl", "language", "locale"):
        for value in query.get(key, ()):
            code = _code(value)
            if code:
                return code
    return None


def primary_language(language: str) -> str:
    """The primary subtag of a language code, lower-case: "zh-Hans" -> "zh", "pt_BR" -> "pt"."""
    return language.lower().replace("_", "-").split("-")[0]


_primary = primary_language


def hreflang_languages(doc: Document) -> int:
    """Distinct primary languages among the page's ``hreflang`` alternates (x-default aside)."""
    langs = {_primary(lang) for lang, _ in doc.hreflang if lang and lang.lower() != "x-default"}
    return len(langs)


def mt_notice(doc: Document, *, min_notices: int) -> Verdict:
    """Reject a page that says it was translated automatically."""
    notices = doc.signals.get(NOTICE, 0.0)
    if notices >= min_notices:
        return reject(reasons.MT_NOTICE, notices, min_notices)
    return keep()


def mt_widget(doc: Document) -> Verdict:
    """Reject a page that carries a website-translation widget and is served under a
    language path: the translated variant such services generate (Weglot, GTranslate
    and ConveyThis serve translations as /xx/ pages of the site)."""
    widgets = doc.signals.get(WIDGET, 0.0)
    if widgets >= 1 and url_language(doc.url) is not None:
        return reject(reasons.MT_WIDGET, widgets, 1, detail=f"url_language={url_language(doc.url)}")
    return keep()


def mt_hreflang_fanout(doc: Document, *, max_languages: int) -> Verdict:
    """Reject a page whose hreflang alternates span more than ``max_languages`` languages."""
    langs = hreflang_languages(doc)
    if langs > max_languages:
        return reject(reasons.MT_HREFLANG_FANOUT, langs, max_languages, **{HREFLANG_LANGUAGES: float(langs)})
    return keep(**{HREFLANG_LANGUAGES: float(langs)})


def mt_url_language(doc: Document, *, reject_mismatch: bool) -> Verdict:
    """Compare the URL's language with the content's (``Document.language``, set by the
    heuristics stage's language ID); no evidence when either is unknown."""
    named = url_language(doc.url)
    if not named or not doc.language:
        return keep()
    mismatch = float(named != _primary(doc.language))
    if mismatch and reject_mismatch:
        return reject(
            reasons.MT_URL_LANGUAGE_MISMATCH, 1.0, 0.0, detail=f"url={named} content={doc.language}",
            **{URL_LANGUAGE_MISMATCH: mismatch},
        )
    return keep(**{URL_LANGUAGE_MISMATCH: mismatch})


def mt_classifier(doc: Document, *, max_score: float, max_scores: Mapping[str, float]) -> Verdict:
    """Reject text the MT classifier of its language scores above the threshold for
    that language (``max_scores``, else ``max_score``). A document without an
    ``mt_score`` (no model for its language) is kept: no evidence."""
    score = doc.signals.get(MT_SCORE)
    if score is None:
        return keep()
    threshold = max_scores.get(_primary(doc.language), max_score) if doc.language else max_score
    if score > threshold:
        return reject(reasons.MT_HIGH_SCORE, score, threshold)
    return keep()
