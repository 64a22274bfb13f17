"""Machine translation decided on the text score together with other evidence.

``mt_score`` (the MT model of the document's language) is weak on one page
(docs/stages.md: held-out-source AUC 0.66-0.82 for English). Two rules add what one
page's text cannot say:

- ``mt.site_high_score``: the mean ``mt_score`` of the site's pages *in the
  document's language* (``SITE``; a site's machine-translated pages are in other
  languages than its originals, so their mean is taken apart). The stage computes
  it (``stages/site_scores.py``).
- ``mt.page_and_score``: the page itself declares machine translation (a notice
  that it was translated automatically, or a website-translation widget, found in
  the raw HTML by ``filters.mt_page``) *and* its text scores as MT. A widget alone
  is on every page of a site that uses one, the originals included, and
  ``mt.widget`` rejects it only on a page served under a language path; with a high
  text score it also marks translated pages served elsewhere (a query parameter, a
  cookie, the same path).
"""

from __future__ import annotations

from mmcurate.filters import reasons
from mmcurate.filters.machine_translation import MT_SCORE
from mmcurate.filters.mt_page import NOTICE, WIDGET
from mmcurate.filters.site_scores import SiteSignal, site_high_score
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

SITE_SCORE = "mt.site_score"
SITE_DOCS = "mt.site_docs"
# The site mean of mt_score: one site per (registered domain, language).
SITE = SiteSignal(MT_SCORE, SITE_SCORE, SITE_DOCS, by_language=True)


def mt_site(doc: Document, *, max_score: float, min_docs: int) -> Verdict:
    """Reject a page whose site's pages in its language (at least ``min_docs``) have
    a mean ``mt_score`` above ``max_score``."""
    return site_high_score(doc, signal=SITE, reason=reasons.MT_SITE_HIGH_SCORE, max_score=max_score, min_docs=min_docs)


def mt_page_and_score(doc: Document, *, max_score: float) -> Verdict:
    """Reject a page that declares machine translation (a notice or a translation
    widget) and whose ``mt_score`` is above ``max_score``. No ``mt_score`` (no model
    for its language): no evidence from the text, kept."""
    score = doc.signals.get(MT_SCORE)
    notices, widgets = doc.signals.get(NOTICE, 0.0), doc.signals.get(WIDGET, 0.0)
    if score is None or not (notices or widgets):
        return keep()
    if score > max_score:
        return reject(reasons.MT_PAGE_AND_SCORE, score, max_score, detail=f"notices={notices:.0f} widgets={widgets:.0f}")
    return keep()
