"""Stage 1, ``extract``: HTML pages to documents of ordered text and image nodes.

``ExtractDocuments`` turns each ``Page`` into a ``Document`` with the extractor
named in ``ExtractConfig.extractor`` (``engines/extraction/registry.py``). Extraction is most
of the text path's cost, so it is measured per document (``extract.seconds``) and
guarded:

- HTML larger than ``max_html_bytes`` (UTF-8) is not parsed: ``HtmlTooLarge``
  (``engines/extraction/page_documents.py`` builds the document).
- Each document has ``timeout_seconds``. With ``isolation: thread`` (the default)
  the extractor runs in the worker's process on a thread of its own
  (``engines/extraction/time_limit.ThreadedExtractor``): past the limit it is stopped inside that
  thread and the document becomes an ``ExtractionTimeout`` error row; a thread
  that will not stop is abandoned and the worker's later pages go to a child
  process. With ``isolation: process`` every page goes to a child process (one
  per DoFn instance, started on first use with the "spawn" method) that is
  killed past the limit; the next document gets a fresh child (a script that
  builds and runs such a pipeline must do so under ``if __name__ ==
  "__main__":``). ``timeout_seconds: 0`` runs the extractor in-process, without a
  limit.
- Any exception raised by the extractor is an error row whose reason is the
  exception's type name; a child that dies is ``ExtractorCrashed``.

Page furniture (tables of contents, reference lists, navigation boxes, edit and
"jump to" links, cookie and share bars) is taken out of the page before extraction
by rules on structure (``engines/extraction/boilerplate.py``); each document records
what each rule removed (``extract.removed.<rule>``), and the stage counts it under
the same names.

A page where the extractor finds no main content still becomes a document (with
few or no nodes): rejecting it is the heuristics stage's decision, and its images
may still be recycled into pairs.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Iterable, Optional

import apache_beam as beam

from mmcurate.schemas import Decision, Document, Page
from mmcurate.stages.config import ExtractConfig
from mmcurate.stages.engines.extraction.boilerplate import RULES as BOILERPLATE_RULES
from mmcurate.stages.engines.extraction.page_documents import (
    SIGNAL_HTML_BYTES,
    SIGNAL_SECONDS,
    HtmlTooLarge,
    extract_document,
    removed_signal,
)
from mmcurate.stages.engines.extraction.registry import load_extractor
from mmcurate.stages.engines.extraction.result import Extraction, Extractor, checked
from mmcurate.stages.engines.extraction.time_limit import ExtractionTimeout, ExtractorFailed, ExtractorProcess, ThreadedExtractor
from mmcurate.stages.results import (
    ERRORS,
    KEPT,
    REJECTED,
    StageCounters,
    StageResult,
    error_counter,
    error_decision,
)

log = logging.getLogger(__name__)

STAGE = "extract"


def removed_counts(doc: Document) -> dict[str, int]:
    """Elements each boilerplate rule removed from ``doc``'s page, by counter name: the
    signal's (``extract.removed.<rule>``), as the heuristics stage names its node
    cleanup's counters."""
    return {removed_signal(rule): int(doc.signals.get(removed_signal(rule), 0)) for rule in BOILERPLATE_RULES}


class ExtractDocumentsFn(beam.DoFn):
    """Extracts one ``Page`` into a ``Document`` on the main output, or an error row
    on the ``errors`` tag. Nothing is rejected at this stage."""

    def __init__(self, config: ExtractConfig):
        self._config = config
        self._counters: Optional[StageCounters] = None
        self._extractor: Optional[Extractor] = None
        self._process: Optional[ExtractorProcess | ThreadedExtractor] = None

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)
        config = self._config
        if config.timeout_seconds > 0:
            # Started on first use, so that a worker that gets no pages starts nothing.
            guard = ThreadedExtractor if config.isolation == "thread" else ExtractorProcess
            self._process = guard(config.extractor, config, config.timeout_seconds)
        else:
            self._extractor = load_extractor(self._config.extractor)

    def teardown(self) -> None:
        if self._process is not None:
            self._process.stop()

    def _extract(self, html: str, url: str) -> Extraction:
        if self._process is not None:
            return self._process.extract(html, url)
        return checked(self._extractor(html, url, self._config), self._config.extractor)

    def process(self, page: Page) -> Iterable:
        started = time.perf_counter()
        doc, failure = extract_document(page, self._config, self._extract)
        if failure is not None:
            yield beam.pvalue.TaggedOutput(ERRORS, self._error_row(doc, failure))
        else:
            self._counters.kept()
            for rule, n in removed_counts(doc).items():
                if n:
                    self._counters.inc(rule, n)
            yield doc
        self._counters.micros(started)

    def _error_row(self, doc: Document, exc: Exception) -> Decision:
        log.debug("extraction failed on %s", doc.url, exc_info=True)
        row = error_decision(STAGE, doc, exc)
        if isinstance(exc, ExtractorFailed):
            row = dataclasses.replace(row, reason=exc.type_name, detail=exc.detail)
        elif isinstance(exc, HtmlTooLarge):
            row = dataclasses.replace(
                row, value=doc.signals[SIGNAL_HTML_BYTES], threshold=float(self._config.max_html_bytes)
            )
        elif isinstance(exc, ExtractionTimeout):
            row = dataclasses.replace(
                row, value=doc.signals[SIGNAL_SECONDS], threshold=float(self._config.timeout_seconds)
            )
        self._counters.inc(error_counter(row.reason))
        return row


class ExtractDocuments(beam.PTransform):
    """``Page`` -> ``StageResult(kept=Document, rejected=(empty), errors=Decision)``."""

    def __init__(self, config: ExtractConfig, label: Optional[str] = None):
        super().__init__(label)
        # Fail at construction, before the pipeline runs, on a name that does not resolve.
        load_extractor(config.extractor)
        self._config = config

    def expand(self, pages: beam.PCollection) -> StageResult:
        outputs = pages | "ExtractPages" >> beam.ParDo(ExtractDocumentsFn(self._config)).with_outputs(
            REJECTED, ERRORS, main=KEPT
        )
        return StageResult(outputs[KEPT], outputs[REJECTED], outputs[ERRORS])
