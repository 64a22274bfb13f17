"""Machine-translation evidence in a page's raw HTML: translation widgets and notices.

Called at extraction time (the only place the raw HTML exists); the counts travel
as the signals ``mt.widget`` and ``mt.notice`` and the ``quality`` stage decides.

- Widgets: the script, element and class names that the common website-translation
  services put in a page (Google Translate's website element, GTranslate, Weglot,
  ConveyThis, Transposh, Bablic, Localize, TranslatePress' automatic mode). These
  services translate pages by machine and serve the result as pages of the site.
- Notices: sentences a site prints on a machine-translated page ("this page was
  translated automatically", "machine translated by ...", and the same in
  German, French, Spanish, Portuguese, Italian, Dutch, Chinese and Japanese).
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
            r"traduit automatiquement|traduction automatique",
            r"traducido automáticamente|traducción automática",
            r"traduzido automaticamente|tradução automática",
            r"tradotto automaticamente|traduzione automatica",
            r"automatisch vertaald|machinaal vertaald",
            r"机器翻译|自动翻译|機械翻訳|自動翻訳",
        ]
    )
)


# Every marker contains one of these: pages without any (nearly all) skip the
# regular expressions, which would otherwise cost as much as extraction itself.
_WIDGET_KEYS = ("translate", "gtranslate", "weglot", "conveythis", "transposh", "bablic", "localize", "trp-floater")
_NOTICE_KEYS = ("translat", "übersetz", "tradu", "vertaald", "翻译", "翻訳")


def page_markers(html: str) -> dict[str, float]:
    """Counts of translation-widget markers and machine-translation notices in ``html``
    (case-insensitive: the patterns are lower case and run on the lowered page)."""
    low = html.lower()
    widgets = len(_WIDGET_MARKERS.findall(low)) if any(k in low for k in _WIDGET_KEYS) else 0
    notices = len(_NOTICE_MARKERS.findall(low)) if any(k in low for k in _NOTICE_KEYS) else 0
    return {WIDGET: float(widgets), NOTICE: float(notices)}
