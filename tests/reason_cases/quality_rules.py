"""Reason codes of the quality stage's rules (``stages.quality.quality_filters``,
with thresholds set as a run would set them: the shipped defaults leave the
classifier rules off). Page markers come from the extraction's own detector
(``filters.mt_page.page_markers``); classifier scores are the signals the stage's
fastText models put on a document."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from docfactory import PROSE, make_doc
from mmcurate.filters import llm_text, machine_translation, mt_combined, reasons, rewrites
from mmcurate.filters.mt_page import page_markers
from mmcurate.filters.quality import QUALITY_SCORE, min_quality
from mmcurate.stages.config import QualityConfig
from mmcurate.stages.quality import quality_filters
from reason_cases import ReasonCase, rejected_by

CONFIG = QualityConfig(
    min_score=0.5,
    mt={"max_score": 0.9, "reject_url_language_mismatch": True, "site": True, "site_max_score": 0.5, "site_min_docs": 5,
        "page_and_score": True, "page_max_score": 0.5},
    llm={"max_score": 0.9, "site": True, "site_max_score": 0.5, "site_min_docs": 5},
    rewrite={"threshold": 0.9},
)
FILTERS = quality_filters(CONFIG)


def stage_filter(rule: Any) -> Callable:
    return next(f for f in FILTERS if getattr(f, "func", f) is rule)


def doc(doc_id: str, **changes):
    """An English page the stage's models scored as good, human-written text."""
    base = make_doc(doc_id, PROSE, images=1)
    scores = {QUALITY_SCORE: 0.9, machine_translation.MT_SCORE: 0.1, llm_text.LLM_SCORE: 0.1}
    signals = {**scores, **changes.pop("signals", {})}
    return dataclasses.replace(base, **{"language": "en", **changes, "signals": signals})


HREFLANG = tuple((lang, f"https://example.org/{lang}/") for lang in "en de fr es it pt nl pl sv ja".split())
WEGLOT = '<script src="https://cdn.weglot.com/weglot.min.js"></script>'
NOTICE = "<p>This page was automatically translated.</p>"
AI_TEXT = "As an AI language model, I cannot browse the web. " + PROSE

TABLE = [
    (machine_translation.mt_notice, doc("q1", signals=page_markers(NOTICE)), reasons.MT_NOTICE),
    (machine_translation.mt_widget, doc("q2", url="https://example.org/fr/page", language="fr", signals=page_markers(WEGLOT)), reasons.MT_WIDGET),
    (machine_translation.mt_hreflang_fanout, doc("q3", hreflang=HREFLANG), reasons.MT_HREFLANG_FANOUT),
    (machine_translation.mt_url_language, doc("q4", url="https://example.org/de/seite"), reasons.MT_URL_LANGUAGE_MISMATCH),
    (machine_translation.mt_classifier, doc("q5", signals={machine_translation.MT_SCORE: 0.97}), reasons.MT_HIGH_SCORE),
    (llm_text.llm_template, dataclasses.replace(doc("q6"), nodes=make_doc("q6", AI_TEXT).nodes), reasons.LLM_TEMPLATE_PHRASE),
    (llm_text.llm_classifier, doc("q7", signals={llm_text.LLM_SCORE: 0.95}), reasons.LLM_HIGH_SCORE),
    (llm_text.llm_site, doc("q8", signals={llm_text.SITE_SCORE: 0.8, llm_text.SITE_DOCS: 6.0}), reasons.LLM_SITE_HIGH_SCORE),
    (min_quality, doc("q9", signals={QUALITY_SCORE: 0.2}), reasons.QUALITY_LOW_SCORE),
    (mt_combined.mt_site, doc("q10", signals={mt_combined.SITE_SCORE: 0.8, mt_combined.SITE_DOCS: 6.0}), reasons.MT_SITE_HIGH_SCORE),
    # a widget on a page under no language path (mt.widget keeps it), text scored 0.7
    (mt_combined.mt_page_and_score, doc("q11", signals={**page_markers(WEGLOT), machine_translation.MT_SCORE: 0.7}), reasons.MT_PAGE_AND_SCORE),
]


def all_rules(document) -> list[str]:
    """Every quality-stage rule on the document: the codes of all that reject it."""
    return [code for f in FILTERS for code in rejected_by(f(document))]


def rewrite(document) -> list[str]:
    """The rewrite stage's decision on a document whose closest earlier page (by
    sentence embedding) is at similarity 0.95 (``DecideRewritesFn``)."""
    matched = document.with_signals({rewrites.REWRITE_SIMILARITY: 0.95})
    return rejected_by(rewrites.rewrite_duplicate(matched, threshold=CONFIG.rewrite.threshold, survivor="q0"))


CASES = [ReasonCase(code, f"document {d.doc_id}", lambda d=d: all_rules(d)) for _, d, code in TABLE] + [
    ReasonCase(reasons.REWRITE_NEAR_DUPLICATE, "document r1 at similarity 0.95 to an earlier one", lambda: rewrite(doc("r1")))
]
