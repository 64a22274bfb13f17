"""Reason codes of the heuristics stage: each fixture goes through the stage's own
step (``stages.heuristics.heuristic_steps``, thresholds from ``HeuristicsConfig``
defaults; C4, off by default, switched on), picked by the rule it applies."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from docfactory import PROSE, make_doc
from mmcurate.filters import c4, content, fineweb, gopher, language, nodes, obelics, reasons, urls
from mmcurate.filters import flagged_words as flagged
from mmcurate.filters.language import load_identifier
from mmcurate.schemas import ImageNode
from mmcurate.stages.config import HeuristicsConfig
from mmcurate.stages.heuristics import heuristic_steps, load_flagged_words
from reason_cases import ReasonCase, rejected_by

TEXT_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "text"

CONFIG = HeuristicsConfig(c4={"enabled": True}, language={"identifier": "lid176", "allowed": ("en",)})
BLOCKED_DOMAINS = urls.parse_domains(["spam.example", "# comment"])
BLOCKED_SUBSTRINGS = ["/wp-login.php"]


@lru_cache(maxsize=None)
def stage_steps() -> tuple:
    """The heuristics stage's steps, in its order, built once."""
    return tuple(
        heuristic_steps(
            CONFIG,
            language_model=load_identifier(CONFIG.language.identifier, CONFIG.language.model_path),
            blocked_domains=BLOCKED_DOMAINS,
            blocked_substrings=BLOCKED_SUBSTRINGS,
            flagged_words=load_flagged_words(CONFIG.flagged_words),
        )
    )


def step(rule: Any) -> Callable:
    """The stage's (first) step applying ``rule`` (a filter function or class)."""
    for candidate in stage_steps():
        func = getattr(candidate, "func", candidate)
        if func is rule or isinstance(func, rule if isinstance(rule, type) else ()):
            return candidate
    raise LookupError(f"heuristics has no step for {rule}")


def rule(filter_fn: Any) -> Callable:
    """A callable applying the stage's step for ``filter_fn`` (looked up when called)."""
    return lambda doc: step(filter_fn)(doc)


def after_cleanup(doc):
    """Node cleanup, then its "nothing left" rule, as the stage applies them."""
    return step(nodes.nothing_left)(step(nodes.NodeCleanup)(doc))


def language_verdict(doc):
    """Language identification (lid.176), then the allow-list and score rule."""
    return step(language.language_allowed)(step(language.annotate_language)(doc))


def en(doc):
    return dataclasses.replace(doc, language="en")


# Distinct filler words, so that only the repetition a case builds is repeated.
UNIQUE = (
    "harbour valley century salt timber cities coast fishing boats dawn afternoon market quay crates "
    "visitors road lighthouse bay islands mountains inland railway tunnels viaduct engineers summer winter "
    "snow station villages bread orchard slope apples family cider barn grafts monastery garden border "
    "varieties seed bank capital cuttings frost disease river bridge arches barges gravel quarries hills "
    "farmers cattle toll ledgers coins spring foundations surface council lorries repairs walkers cyclists "
    "evenings parapet swallows water mill stream grain miller turbine weir volunteers roof oven meadow"
).split()
LINES_NO_PUNCT = "\n".join(f"The view from the {w} over the whole valley and the hills" for w in UNIQUE[:20])
SENTENCE = PROSE.split(". ")[0] + "."
REPEATED = "the engineers of the time thought could not be built over the river"
SLANG = "hot milf porn, fuck her pussy, cum on her tits, free xxx blowjob videos"

# (filter, document, reason, value, threshold): the heuristics rule families, with the
# value and threshold each rejection carries (tests/filters/test_rule_sets.py checks them).
RULE_SET_CASES = [
    # URL rules
    (rule(urls.blocklisted_domain), make_doc("u1", PROSE, images=1, url="https://WWW.News.Spam.Example:443/a"),
     reasons.URL_BLOCKLISTED_DOMAIN, None, None),
    (rule(urls.blocklisted_substring), make_doc("u2", PROSE, images=1, url="https://example.org/WP-Login.php?x=1"),
     reasons.URL_BLOCKLISTED_SUBSTRING, None, None),
    # node cleanup leaves nothing
    (after_cleanup, make_doc("n1", ["We use cookies to improve your experience. Accept all cookies.", "Share on Facebook"], images=1),
     reasons.NODES_NO_TEXT_LEFT, 0, 1),
    (after_cleanup,
     dataclasses.replace(make_doc("n2", PROSE), nodes=make_doc("n2", PROSE).nodes + (ImageNode(src="https://example.org/img/site-logo.png"),)),
     reasons.NODES_NO_IMAGES_LEFT, 0, 1),
    # Gopher quality
    (rule(gopher.quality), make_doc("g1", "Too short to be a page."), reasons.GOPHER_TOO_FEW_WORDS, 6, 50),
    (rule(gopher.quality), make_doc("g2", " ".join(["harbour"] * 100_001)), reasons.GOPHER_TOO_MANY_WORDS, 100_001, 100_000),
    (rule(gopher.quality), make_doc("g3", " ".join(["it is a we go up to an ox by me"] * 6)), reasons.GOPHER_SHORT_MEAN_WORD_LENGTH, 21 / 11, 3),
    (rule(gopher.quality), make_doc("g4", " ".join(["internationalisation telecommunications"] * 30)), reasons.GOPHER_LONG_MEAN_WORD_LENGTH, 19, 10),
    (rule(gopher.quality), make_doc("g5", PROSE + " " + "#news " * 10), reasons.GOPHER_SYMBOL_WORD_RATIO, 10 / 93, 0.1),
    (rule(gopher.quality), make_doc("g6", "\n".join(f"• {w} boats and crates on the quay" for w in UNIQUE[:10])), reasons.GOPHER_BULLET_LINES, 1.0, 0.9),
    (rule(gopher.quality), make_doc("g7", "\n".join(f"The {w} was there before the town and the harbour{'...' if i % 2 else '.'}" for i, w in enumerate(UNIQUE[:10]))),
     reasons.GOPHER_ELLIPSIS_LINES, 0.5, 0.3),
    (rule(gopher.quality), make_doc("g8", PROSE + " " + " ".join(str(1000 + i) for i in range(30))), reasons.GOPHER_ALPHABETIC_WORDS, 83 / 113, 0.8),
    (rule(gopher.quality), en(make_doc("g9", " ".join(UNIQUE[:60]))), reasons.GOPHER_STOP_WORDS, 0, 2),
    # Gopher repetition
    (rule(gopher.repetition), make_doc("r1", [PROSE, PROSE, PROSE, "A different closing paragraph."]), reasons.GOPHER_DUPLICATE_PARAGRAPHS, 0.5, 0.3),
    (rule(gopher.repetition), make_doc("r2", [PROSE, PROSE] + [f"Note on the {w}." for w in UNIQUE[:6]]), reasons.GOPHER_DUPLICATE_PARAGRAPH_CHARS, None, 0.2),
    (rule(gopher.repetition), make_doc("r3", [f"About the {w}.\nSubscribe below." for w in UNIQUE[:4]]), reasons.GOPHER_DUPLICATE_LINES, 3 / 8, 0.3),
    (rule(gopher.repetition), make_doc("r4", [f"{PROSE}\nNote on the {UNIQUE[0]}.", f"{PROSE}\nNote on the {UNIQUE[1]}."] + [f"Note on the {w}." for w in UNIQUE[2:6]]),
     reasons.GOPHER_DUPLICATE_LINE_CHARS, None, 0.2),
    (rule(gopher.repetition), make_doc("r5", " ".join(f"hot dog {w}" for w in UNIQUE[:30])), reasons.GOPHER_TOP_NGRAM_CHARS, None, 0.2),
    (rule(gopher.repetition), make_doc("r6", " ".join(UNIQUE[:20]) + " " + REPEATED + " " + " ".join(UNIQUE[20:30]) + " " + REPEATED),
     reasons.GOPHER_DUPLICATE_NGRAM_CHARS, None, 0.15),
    # C4
    (rule(c4.rules), make_doc("c1", PROSE + " Lorem ipsum dolor sit amet."), reasons.C4_LOREM_IPSUM, 1, None),
    (rule(c4.rules), make_doc("c2", PROSE + " Call init() { return 1; } first."), reasons.C4_CURLY_BRACKET, 1, None),
    (rule(c4.rules), make_doc("c3", LINES_NO_PUNCT), reasons.C4_NO_TERMINAL_PUNCTUATION, 1.0, 1.0),
    (rule(c4.rules), make_doc("c4", [f"Please enable JavaScript to see the {w} map." for w in UNIQUE[:6]]), reasons.C4_JAVASCRIPT_LINES, 1.0, 1.0),
    (rule(c4.rules), make_doc("c5", [f"Read the privacy policy of the {w} club." for w in UNIQUE[:6]]), reasons.C4_POLICY_LINES, 1.0, 1.0),
    (rule(c4.rules), make_doc("c6", PROSE), reasons.C4_TOO_FEW_SENTENCES, 3, 5),
    # FineWeb
    (rule(fineweb.rules), make_doc("f1", LINES_NO_PUNCT), reasons.FINEWEB_LINE_PUNCTUATION, 0.0, 0.12),
    (rule(fineweb.rules), make_doc("f2", "\n".join(f"See the {w}." for w in UNIQUE[:10])), reasons.FINEWEB_SHORT_LINES, 1.0, 0.67),
    (rule(fineweb.rules), make_doc("f3", [PROSE, "The quay is busy.", PROSE]), reasons.FINEWEB_DUPLICATE_LINE_CHARS, None, 0.01),
    (rule(fineweb.rules), make_doc("f4", "\n".join(f"Extraordinarily comprehensive {w}." for w in UNIQUE[:12])), reasons.FINEWEB_LIST_LIKE, 11 / 36, 0.3),
    # OBELICS
    (rule(obelics.image_count), make_doc("o1", PROSE, images=31), reasons.OBELICS_TOO_MANY_IMAGES, 31, 30),
    (rule(obelics.word_bounds), make_doc("o2", "Five words are right here.", images=1), reasons.OBELICS_TOO_FEW_WORDS, 5, 10),
    # the default cap is Gopher's 100,000 words (OBELICS's own is 2,000)
    (rule(obelics.word_bounds), make_doc("o3", " ".join(["harbour"] * 100_001), images=1), reasons.OBELICS_TOO_MANY_WORDS, 100_001, 100_000),
    (rule(obelics.word_bounds), make_doc("o4", " ".join(UNIQUE[:20]), images=5), reasons.OBELICS_IMAGE_WORD_RATIO, 0.25, 0.1),
    # punctuation and symbols among non-space characters (digits are not special)
    (rule(obelics.text_ratios), make_doc("o5", PROSE + " " + " ".join(f"[{i}] » {{'k': ★}} |" for i in range(40))),
     reasons.OBELICS_SPECIAL_CHARACTERS, None, 0.15),
    (rule(obelics.text_ratios), make_doc("o6", "The same sentence again and again. " * 20), reasons.OBELICS_CHARACTER_REPETITION, None, 0.1),
    # a 28-word sentence twice among distinct words: 48 of 134 word 5-grams repeat
    (rule(obelics.text_ratios), make_doc("o7", " ".join(UNIQUE[:60]) + " " + SENTENCE + " " + " ".join(UNIQUE[60:]) + " " + SENTENCE),
     reasons.OBELICS_WORD_REPETITION, 48 / 134, 0.2),
]

GERMAN = (TEXT_DIR / "de.txt").read_text(encoding="utf-8").split("\n\n")

OTHER_CASES = [
    (rule(content.not_empty), make_doc("e1", []), reasons.CONTENT_EMPTY),
    (rule(content.has_text), make_doc("e2", [], images=2), reasons.CONTENT_NO_TEXT),
    (rule(content.min_words), make_doc("e3", "Back soon, the shop is closed today.", images=1), reasons.CONTENT_TOO_FEW_WORDS),
    (rule(content.min_images), make_doc("e4", PROSE), reasons.CONTENT_TOO_FEW_IMAGES),
    (language_verdict, make_doc("l1", GERMAN, images=1), reasons.LANGUAGE_NOT_ALLOWED),
    (language_verdict, make_doc("l2", "qzx vbn 12 kk ok fjord", images=1), reasons.LANGUAGE_LOW_SCORE),
    (rule(flagged.document_ratio), en(make_doc("s1", [PROSE, SLANG], images=1)), reasons.SAFETY_FLAGGED_WORDS),
]


def _case(filter_fn, doc, code) -> ReasonCase:
    return ReasonCase(code, f"document {doc.doc_id} ({doc.url})", lambda: rejected_by(filter_fn(doc)))


CASES = [_case(f, doc, code) for f, doc, code, *_ in RULE_SET_CASES] + [_case(*c) for c in OTHER_CASES]
