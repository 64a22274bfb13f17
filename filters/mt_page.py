"""Machine-translation evidence in a page's raw HTML: translation widgets and notices.

Called at extraction time (the only place the raw HTML exists); the counts travel
as the signals ``mt.widget`` and ``mt.notice`` and the ``quality`` stage decides.

- Widgets: the script, element and class names that the common website-translation
  services put in a page (Google Translate's website element, GTranslate, Weglot,
  ConveyThis, Transposh, Bablic, Localize, TranslatePress' automatic mode). These
  services translate pages by machine and serve the result as pages of the site.
- Notices: sentences a site prints on a machine-translated page ("this page was
  translated automatically", "machine translated by ...", and the same in
  German, French, Spanish, Portuguese, Italian, Dutch, Chinese and Japanese; a
  participle in any gender and number: "tradotta automaticamente").
"""

from __future__ import annotations

import re

WIDGET = "mt.widget"
NOTICE = "mt.notice"

_WIDGET_MARKERS = re.compile(
    "|".join(
        [
            r"translate\.google(?:apis)?\.com/translate_a/element\.js",
            r"google_translate_element",
            r"googletranslateelementinit",
            r"gtranslate",
            r"cdn\.weglot\.com",
            r"weglot[-_.](?:container|switcher|init)|weglot\.initialize",
            r"conveythis",
            r"transposh",
            r"cdn\.bablic\.com|bablic\.(?:init|com/js)",
            r"global\.localizecdn\.com|localize\.initialize",
            r"trp-floater-ls|translatepress-automatic",
        ]
    )
)

_NOTICE_MARKERS = re.compile(
    "|".join(
        [
            r"(?:automatically|machine|auto)[- ]translated",
            r"translated (?:automatically|by machine|by google|with google translate|using google translate)",
            r"(?:automatic|machine) translation (?:provided by|powered by|by google)",
            r"powered by google translate",
            r"maschinell übersetzt|automatisch übersetzt|maschinelle übersetzung",
            r"tradui(?:t|te|ts|tes) automatiquement|traduction automatique",
            r"traducid[oa]s? automáticamente|traducción automática",
            r"traduzid[oa]s? automaticamente|tradução automática",
            r"tradott[oaie] automaticamente|traduzione automatica",
            r"automatisch vertaald|machinaal vertaald",
            r"机器翻译|自动翻译|機械翻訳|自動翻訳",
        ]
    )
)


# Every marker contains one of these: pages without any (nearly all) skip the
# regular expressions, which would otherwise cost as much as extraction itself.
_WIDGET_KEYS = ("translate", "gtranslate", "weglot", "conveythis", "transposh", "bablic", "localize", "trp-floater")
_NOTICE_KEYS = ("translat", "übersetz", "tradu", "tradott", "vertaald", "翻译", "翻訳")
# Characters around an anchor that a marker may span: over the longest match of
# either pattern (tests/filters/test_quality_rules.py checks it).
_REACH = 80
# Anchors found by one scan of a stretch they share, at this offset in the anchor:
# an anchor starts at ``at`` exactly where the stretch starts at ``at + offset`` and
# the anchor follows, so the page is read once for the four ``trans`` anchors of both
# patterns and once for the two ``trad`` ones, not once per anchor.
_SHARED_SCANS = {
    "translate": ("trans", 0), "gtranslate": ("trans", 1), "translat": ("trans", 0), "transposh": ("trans", 0),
    "tradu": ("trad", 0), "tradott": ("trad", 0),
}


def _starts(low: str, text: str) -> list[int]:
    """Every index where ``text`` occurs in ``low`` (overlapping ones too), in order."""
    found = []
    at = low.find(text)
    while at != -1:
        found.append(at)
        at = low.find(text, at + 1)
    return found


def _anchor_starts(low: str, anchor: str, scans: dict[str, list[int]]) -> list[int]:
    """``_starts(low, anchor)``, through the scan of its shared stretch (``scans``:
    the page's scans so far, by stretch). An anchor of non-ASCII characters does not
    occur in an ASCII page."""
    if not anchor.isascii() and low.isascii():
        return []
    stretch, offset = _SHARED_SCANS.get(anchor, (anchor, 0))
    found = scans.get(stretch)
    if found is None:
        found = scans[stretch] = _starts(low, stretch)
    if stretch == anchor:
        return found
    return [at - offset for at in found if at >= offset and low.startswith(anchor, at - offset)]


def _windows(low: str, anchors: tuple[str, ...], scans: dict[str, list[int]] | None = None) -> list[tuple[int, int]]:
    """The stretches of ``low`` within ``_REACH`` characters of an anchor, merged
    where they touch: every marker lies whole inside one of them."""
    scans = {} if scans is None else scans
    spans = []
    for anchor in anchors:
        for at in _anchor_starts(low, anchor, scans):
            spans.append((max(0, at - _REACH), at + len(anchor) + _REACH))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _count(pattern: re.Pattern, low: str, anchors: tuple[str, ...], scans: dict[str, list[int]] | None = None) -> int:
    """``len(pattern.findall(low))``, running the pattern only where an anchor is near.

    The same count: a match contains an anchor, so it lies inside that anchor's
    window, and no match crosses a window's start (it would contain an anchor whose
    window reaches back over that start, and the two windows would be one); the
    patterns have no anchors or lookarounds, so a match inside a window is one in
    the page and the other way round, in the same leftmost, non-overlapping order.
    On a page whose CSS says ``translate(...)`` this reads a few hundred characters
    instead of the whole page."""
    return sum(len(pattern.findall(low, start, end)) for start, end in _windows(low, anchors, scans))


# A page holds an anchor in its lowered text only if its UTF-8 bytes, ASCII letters
# lowered, hold one of these: each anchor holds one within an unbroken run of its ASCII
# characters ("übersetz" -> "bersetz"; 翻 for both Chinese and Japanese ones), and
# those ASCII letters come from ASCII letters of the page: the only characters beyond
# ASCII that lower to an ASCII letter are U+212A KELVIN SIGN ("k") and U+0130 ("i" and
# a combining dot above), and no anchor holds a "k", a combining dot, or ends in "i"
# (tests/filters/test_quality_rules.py checks all of it). Lowering a page that is
# not all ASCII costs twice what this check does, and nearly no page has an anchor.
_BYTE_KEYS = (
    b"trans", b"trad", b"weglot", b"conveythis", b"bablic", b"localize", b"trp-floater", b"bersetz", b"vertaald",
    "翻".encode(),
)


def utf8_of(html: str) -> bytes:
    """``html`` in UTF-8, lone surrogates (from lenient decoding) included."""
    return html.encode("utf-8", "surrogatepass")


def page_markers(html: str, utf8: bytes | None = None) -> dict[str, float]:
    """Counts of translation-widget markers and machine-translation notices in ``html``
    (case-insensitive: the patterns are lower case and run on the lowered page).
    ``utf8``: ``utf8_of(html)``, when the caller has it already."""
    folded = (utf8_of(html) if utf8 is None else utf8).lower()
    if not any(key in folded for key in _BYTE_KEYS):
        return {WIDGET: 0.0, NOTICE: 0.0}
    low = html.lower()
    scans: dict[str, list[int]] = {}
    widgets = _count(_WIDGET_MARKERS, low, _WIDGET_KEYS, scans)
    notices = _count(_NOTICE_MARKERS, low, _NOTICE_KEYS, scans)
    return {WIDGET: float(widgets), NOTICE: float(notices)}
