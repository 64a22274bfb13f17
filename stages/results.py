"""What every filtering stage shares: its result (kept, rejected, errors), the output
tags, the Beam counters, decision rows, and the DoFn that applies filters in cost order."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import Callable, Iterable, Mapping, NamedTuple, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics

from mmcurate.filters.verdict import DocumentFilter, Verdict
from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, SUBJECT_IMAGE, SUBJECT_PAGE, Decision, Document, ImageNode
from mmcurate.stages.engines.exceptions import error_detail

log = logging.getLogger(__name__)

# A filter, or an edit that returns the changed document (see apply_filters).
DocumentStep = Callable[[Document], "Verdict | Document"]

# Output tags of a stage's ParDo.
KEPT = "kept"
REJECTED = "rejected"
ERRORS = "errors"

# Counter names inside a stage's metric namespace (the namespace is the stage name).
COUNTER_KEPT = "kept"
COUNTER_MICROS = "micros"  # processing time spent in the stage, summed over workers


_REJECTED_PREFIX = "rejected."
_ERRORS_PREFIX = "errors."


def rejected_counter(reason: str) -> str:
    return f"{_REJECTED_PREFIX}{reason}"


def error_counter(exc_type: str) -> str:
    return f"{_ERRORS_PREFIX}{exc_type}"


def counters_by_namespace(counters: Mapping[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    """Counters ((namespace, name) -> value) by namespace: namespace -> name -> value."""
    grouped: dict[str, dict[str, int]] = defaultdict(dict)
    for (namespace, name), value in counters.items():
        grouped[namespace][name] = value
    return grouped


def outcome_counts(names: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """A stage's counters (name -> value) read back: its rejections by reason and its
    errors by exception type (``rejected_counter``, ``error_counter``); its kept
    documents are ``names[COUNTER_KEPT]``."""
    rejected = {n.removeprefix(_REJECTED_PREFIX): v for n, v in names.items() if n.startswith(_REJECTED_PREFIX)}
    errors = {n.removeprefix(_ERRORS_PREFIX): v for n, v in names.items() if n.startswith(_ERRORS_PREFIX)}
    return rejected, errors


class StageResult(NamedTuple):
    """What a filtering stage returns: three PCollections."""

    kept: beam.PCollection
    rejected: beam.PCollection
    errors: beam.PCollection


def error_decision(stage: str, doc: Document, exc: BaseException) -> Decision:
    return Decision(
        doc_id=doc.doc_id,
        url=doc.url,
        stage=stage,
        kind=KIND_ERROR,
        reason=type(exc).__name__,
        provenance=doc.provenance,
        detail=error_detail(exc),
        signals=dict(doc.signals),
        document=doc,
    )


def rejection_decision(
    stage: str, doc: Document, verdict: Verdict, node: ImageNode | None = None, note: str = ""
) -> Decision:
    """The decision row of ``verdict``'s rejection: of the page ``doc``, or, given
    ``node``, of that image node a stage removed from ``doc`` while the document went
    on (subject ``image``, keyed by the image's id; the detail names the document,
    then ``note``)."""
    if node is None:
        subject = dict(
            doc_id=doc.doc_id, url=doc.url, detail=verdict.detail, signals=dict(doc.signals),
            subject=SUBJECT_PAGE, document=doc,
        )
    else:
        detail = "; ".join(filter(None, (f"document {doc.doc_id}", note)))
        subject = dict(doc_id=node.image_id or "", url=node.src, detail=detail, subject=SUBJECT_IMAGE)
    return Decision(
        stage=stage,
        kind=KIND_REJECTED,
        reason=verdict.reason,
        provenance=doc.provenance,
        value=verdict.value,
        threshold=verdict.threshold,
        **subject,
    )


class StageCounters:
    """Beam counters of one stage, created lazily per name (cheap after the first)."""

    def __init__(self, stage: str):
        self.stage = stage
        self._counters: dict[str, object] = {}
        # While set, every increment is also added here ((stage, name) -> value): a staged
        # reader's counters of one input range (stages/range_staging.py).
        self.tally: Optional[dict[tuple[str, str], int]] = None

    def inc(self, name: str, n: int = 1) -> None:
        counter = self._counters.get(name)
        if counter is None:
            counter = self._counters[name] = Metrics.counter(self.stage, name)
        counter.inc(n)
        tally = self.tally
        if tally is not None:
            key = (self.stage, name)
            tally[key] = tally.get(key, 0) + n

    def kept(self) -> None:
        self.inc(COUNTER_KEPT)

    def rejected(self, reason: str) -> None:
        self.inc(rejected_counter(reason))

    def error(self, exc: BaseException) -> None:
        self.inc(error_counter(type(exc).__name__))

    def micros(self, started: float) -> None:
        self.inc(COUNTER_MICROS, int((time.perf_counter() - started) * 1e6))


def apply_filters(doc: Document, steps: Sequence[DocumentStep]) -> tuple[Document, Verdict | None]:
    """Run steps in order; stop at the first rejection.

    A step is a filter (returns a ``Verdict``, whose signals are merged into the
    document) or a named edit such as node cleanup (returns the edited ``Document``).
    Returns the document with every measured signal merged in, and the rejecting
    verdict (None when every step kept it).
    """
    signals: dict[str, float] = {}
    for step in steps:
        result = step(doc)
        if isinstance(result, Document):
            doc = result.with_signals(signals)
            signals = {}
            continue
        signals.update(result.signals)
        if not result.keep:
            return doc.with_signals(signals), result
    return doc.with_signals(signals), None


class ApplyFiltersFn(beam.DoFn):
    """Applies ``filters`` in order; emits kept documents on the main output and
    ``Decision`` rows on the ``rejected`` and ``errors`` tags."""

    def __init__(
        self,
        stage: str,
        filters: Sequence[DocumentStep] = (),
        *,
        make_filters: Callable[[], Sequence[DocumentStep]] | None = None,
        edit_counts: Callable[[Document], dict[str, int]] | None = None,
    ):
        """``make_filters`` builds the steps once per worker (in ``setup``) when they
        need loaded resources (models, lists); ``edit_counts`` names the counters a
        kept or rejected document's edits add to (e.g. nodes removed by cleanup)."""
        self._stage = stage
        self._filters = tuple(filters)
        self._make_filters = make_filters
        self._edit_counts = edit_counts
        self._counters: StageCounters | None = None

    def setup(self) -> None:
        self._counters = StageCounters(self._stage)
        if self._make_filters is not None:
            self._filters = tuple(self._make_filters())

    def process(self, doc: Document) -> Iterable:
        counters = self._counters
        started = time.perf_counter()
        try:
            out, verdict = apply_filters(doc, self._filters)
        except Exception as exc:  # a filter bug or bad input: one error row, never a crash
            log.debug("filter failed on %s", doc.doc_id, exc_info=True)
            counters.error(exc)
            yield beam.pvalue.TaggedOutput(ERRORS, error_decision(self._stage, doc, exc))
            counters.micros(started)
            return
        if self._edit_counts is not None:
            for name, count in self._edit_counts(out).items():
                if count:
                    counters.inc(name, count)
        if verdict is None:
            counters.kept()
            yield out
        else:
            counters.rejected(verdict.reason)
            yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(self._stage, out, verdict))
        counters.micros(started)


class ApplyDocumentFilters(beam.PTransform):
    """A filtering stage made of pure document filters applied in cost order."""

    def __init__(self, stage: str, filters: Sequence[DocumentFilter], label: str | None = None):
        super().__init__(label)
        self._stage = stage
        self._filters = tuple(filters)

    def expand(self, docs: beam.PCollection) -> StageResult:
        outputs = docs | "ApplyFilters" >> beam.ParDo(ApplyFiltersFn(self._stage, self._filters)).with_outputs(
            REJECTED, ERRORS, main=KEPT
        )
        return StageResult(outputs[KEPT], outputs[REJECTED], outputs[ERRORS])
