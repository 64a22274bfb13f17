"""Stage `dedup`: duplicates across the whole run, found by Beam shuffles.

Exact duplicates of the main text: every document sends only (text hash, doc_id,
rank) through a GroupByKey; each group names its survivor; the verdicts join back
to the documents by doc_id with CoGroupByKey. Documents never travel by text key,
and no worker holds more than one group of ids.
"""

from __future__ import annotations

import hashlib
import time
from typing import Iterable, NamedTuple, Optional

import apache_beam as beam

from mmcurate.filters import reasons
from mmcurate.filters.text import fold_for_hash
from mmcurate.pipeline.config import DedupConfig
from mmcurate.filters.verdict import reject
from mmcurate.schemas import Document
from mmcurate.stages.common import (
    ERRORS,
    KEPT,
    REJECTED,
    StageCounters,
    StageResult,
    error_decision,
    rejection_decision,
)

STAGE = "dedup"

EXACT_GROUP_SIZE = "dedup.exact_group_size"


class ExactVerdict(NamedTuple):
    survivor: str
    group_size: int


def text_key(doc: Document) -> Optional[str]:
    """sha256 of the folded main text; None for a document without text."""
    folded = fold_for_hash(doc.text)
    if not folded:
        return None
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()


def survivor_rank(doc: Document) -> tuple[str, str]:
    """Which copy survives: the earliest capture, then the smallest doc_id.

    WARC dates are ISO 8601 strings, which sort by time; a missing or invalid date
    sorts after every valid one.
    """
    date = doc.provenance.date
    valid = len(date) >= 10 and date[:4].isdigit() and date[4] == "-"
    return (date if valid else "~", doc.doc_id)


def _key_by_text(doc: Document) -> Iterable[tuple[str, tuple[tuple[str, str], str]]]:
    key = text_key(doc)
    if key is not None:
        yield key, (survivor_rank(doc), doc.doc_id)


def _resolve_group(element: tuple[str, Iterable[tuple[tuple[str, str], str]]]) -> Iterable[tuple[str, ExactVerdict]]:
    _, members = element
    members = sorted(members)
    survivor = members[0][1]
    for _, doc_id in members:
        yield doc_id, ExactVerdict(survivor, len(members))


class JoinExactVerdictFn(beam.DoFn):
    """Joins each document with its group's verdict: kept, or rejected naming the survivor."""

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        _, joined = element
        verdicts = list(joined["verdict"])
        for doc in joined["doc"]:
            started = time.perf_counter()
            try:
                yield from self._decide(doc, verdicts[0] if verdicts else None)
            except Exception as exc:
                self._counters.error(exc)
                yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
            self._counters.micros(started)

    def _decide(self, doc: Document, verdict: Optional[ExactVerdict]) -> Iterable:
        if verdict is None:  # no text to compare: nothing to deduplicate against
            self._counters.kept()
            yield doc
            return
        doc = doc.with_signals({EXACT_GROUP_SIZE: float(verdict.group_size)})
        if verdict.survivor == doc.doc_id:
            self._counters.kept()
            yield doc
            return
        self._counters.rejected(reasons.DEDUP_EXACT_TEXT)
        # The texts are identical once folded: similarity 1.
        verdict = reject(reasons.DEDUP_EXACT_TEXT, 1.0, 1.0, detail=f"survivor={verdict.survivor}")
        yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict))


class DedupExactText(beam.PTransform):
    """Drops every document whose folded main text another, earlier document has."""

    def expand(self, docs: beam.PCollection) -> StageResult:
        verdicts = (
            docs
            | "KeyByTextHash" >> beam.FlatMap(_key_by_text)
            | "GroupByTextHash" >> beam.GroupByKey()
            | "ResolveGroups" >> beam.FlatMap(_resolve_group)
        )
        keyed_docs = docs | "KeyByDocId" >> beam.Map(lambda d: (d.doc_id, d))
        outputs = (
            {"doc": keyed_docs, "verdict": verdicts}
            | "JoinVerdicts" >> beam.CoGroupByKey()
            | "Decide" >> beam.ParDo(JoinExactVerdictFn()).with_outputs(REJECTED, ERRORS, main=KEPT)
        )
        return StageResult(outputs[KEPT], outputs[REJECTED], outputs[ERRORS])


class DedupDocuments(beam.PTransform):
    """The `dedup` stage: the dedup steps that config turns on, in order."""

    def __init__(self, config: DedupConfig, label: str | None = None):
        super().__init__(label)
        self._config = config

    def expand(self, docs: beam.PCollection) -> StageResult:
        if not self._config.exact_text:
            rejected = docs.pipeline | "NoRejections" >> beam.Create([])
            errors = docs.pipeline | "NoErrors" >> beam.Create([])
            return StageResult(docs, rejected, errors)
        return docs | "ExactText" >> DedupExactText()
