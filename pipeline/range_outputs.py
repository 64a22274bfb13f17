"""What the first phase of a run stages per input range for the next phase: its kept
documents, its decision rows and the captured images (``stages/range_staging.py``),
each output through its own ``StageRecordsFn``; what no staged reader stamped goes
through Beam's sink, beside them."""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import apache_beam as beam

from mmcurate.pipeline import beam_files
from mmcurate.schemas import Decision
from mmcurate.stages.engines import staging_files
from mmcurate.stages.engines.staging_files import record_key
from mmcurate.stages.range_staging import RangeStaging, StageRecordsFn, without_document
from mmcurate.stages.staging import WriteStaged

# What a phase stages under its directory.
STAGED_DOCS = "docs"
STAGED_DECISIONS = "decisions"
STAGED_CAPTURED = "captured"
STAGED_TABLES = (STAGED_DOCS, STAGED_DECISIONS, STAGED_CAPTURED)


def staged_row(key):
    """A staging table's row of a record: its key and the pickled record."""
    return functools.partial(staging_files.to_row, key=key)


def decision_key(decision: Decision) -> str:
    return decision.doc_id


def captured_key(image) -> str:
    return image.url


def range_tables(here: str) -> dict[str, str]:
    """Table -> directory of the files a range's records go to."""
    return {name: beam_files.join(here, name) for name in STAGED_TABLES}


def stage_ranges(
    staging: RangeStaging,
    docs: beam.PCollection,
    decisions: Sequence[beam.PCollection],
    captured: Optional[beam.PCollection],
    recycled: bool,
) -> None:
    """Phase 0's outputs into files of the range each came from (``StageRecordsFn``,
    one per output); what no staged reader stamped to Beam's sink, beside them."""
    prepare = None if recycled else without_document
    outputs = [("Documents", STAGED_DOCS, docs, record_key, None)]
    outputs += [(f"Decisions{i}", STAGED_DECISIONS, d, decision_key, prepare) for i, d in enumerate(decisions)]
    if captured is not None:
        outputs.append(("Captured", STAGED_CAPTURED, captured, captured_key, None))
    loose: dict[str, list] = {}
    for label, table, pcoll, key, how in outputs:
        stager = StageRecordsFn(staging, table, label.lower(), staged_row(key), how)
        loose.setdefault(table, []).append(pcoll | f"Stage{label}" >> beam.ParDo(stager))
    keys = {STAGED_DOCS: record_key, STAGED_DECISIONS: decision_key, STAGED_CAPTURED: captured_key}
    for table, pcolls in loose.items():
        gathered = pcolls | f"Loose{table.capitalize()}" >> beam.Flatten()
        _ = gathered | f"StageLoose{table.capitalize()}" >> WriteStaged(beam_files.join(staging.phase_dir, table), key=keys[table])
