"""The `dedup` stage's last step: its notes joined back to the documents.

The dedup steps shuffle fingerprints only and leave ``Note``s keyed by record
(``stages/engines/dedup_fingerprints.py``). ``DecideDuplicatesFn`` meets each
document with its notes and decides: kept with the notes' signals, or one rejection
row. In memory the documents and notes meet by a ``CoGroupByKey``; in a staged run
(``staging``) the notes are grouped by unit (``notes_by_unit``, then
``staging.VerdictsByUnit`` keyed by a short token of the unit, which the notes' keys
carry) and each unit's documents are read again from staging, so that no document
crosses a shuffle.
"""

from __future__ import annotations

import time
from typing import Iterable

import apache_beam as beam

from mmcurate.filters.verdict import reject
from mmcurate.schemas import Document
from mmcurate.stages.engines.dedup_fingerprints import FAILED, Note, apply_notes, sorted_notes
from mmcurate.stages.results import ERRORS, REJECTED, StageCounters, error_decision, rejection_decision
from mmcurate.stages.engines.staging_files import by_key, record_key, split_unit_key
from mmcurate.stages.staging import read_unit

STAGE = "dedup"


def notes_by_unit(keyed_note: tuple[str, Note]) -> tuple[str, tuple[str, Note]]:
    """(unit key, note) -> (unit token, (record key, note)): a staged run's notes by
    unit (``dedup_fingerprints.unit_token``)."""
    token, key = split_unit_key(keyed_note[0])
    return token, (key, keyed_note[1])


class DecideDuplicatesFn(beam.DoFn):
    """Joins each document with its notes: kept with the signals, or one rejection row.

    The input is ``(key, {"doc": [...], "note": [...]})`` from a CoGroupByKey, or,
    staged, ``(unit token, {"unit": [unit], "verdicts": [(record key, note), ...]})``:
    the unit's documents are read again from staging and matched with their notes."""

    def __init__(self, staged: bool = False):
        self._staged = staged

    def setup(self) -> None:
        self._counters = StageCounters(STAGE)

    def process(self, element: tuple[str, dict]) -> Iterable:
        key, joined = element
        if not self._staged:
            notes = sorted_notes(joined["note"])
            for doc in joined["doc"]:
                yield from self._timed(doc, notes)
            return
        notes_by_key = by_key(joined["verdicts"])
        for unit in sorted(joined["unit"]):
            for doc in read_unit(unit):
                notes = sorted_notes(notes_by_key.get(record_key(doc), ()))
                if notes and notes[0].reason == FAILED:
                    continue  # its error row came from the fingerprint step
                yield from self._timed(doc, notes)

    def _timed(self, doc: Document, notes: list[Note]) -> Iterable:
        started = time.perf_counter()
        try:
            yield from self._decide(doc, notes)
        except Exception as exc:
            self._counters.error(exc)
            yield beam.pvalue.TaggedOutput(ERRORS, error_decision(STAGE, doc, exc))
        self._counters.micros(started)

    def _decide(self, doc: Document, notes: list[Note]) -> Iterable:
        doc, rejection = apply_notes(doc, notes)
        if rejection is None:
            self._counters.kept()
            yield doc
            return
        self._counters.rejected(rejection.reason)
        verdict = reject(rejection.reason, rejection.value, rejection.threshold, detail=rejection.detail)
        yield beam.pvalue.TaggedOutput(REJECTED, rejection_decision(STAGE, doc, verdict))
