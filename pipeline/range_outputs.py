"""The first phase's outputs per input range: what it stages for the next phase, or,
when it is the run's only phase, the output tables' rows.

A first phase that reads WARC files cut into ranges stages what each range's pages
become while the range is read (``stages/range_staging.py``), so that a killed run
resumes from the ranges it finished. Before a later phase these are staging tables
(``docs``, ``decisions``, ``captured``). When the first phase is also the last
(``--stages heuristics``), they are the rows of the output tables themselves, in
each range's own Parquet file under ``parts/<table>/``; after the pipeline,
``plan_tables`` plans a few files per table from them, in input order
(``stages/engines/table_assembly.py``), and ``assemble_tables`` (staging on this
machine's disk) or the runner's workers (``stages/assemble.py``, remote staging)
write them, so a resumed run writes the same files as an uninterrupted one. What cannot be staged by range (a runner that does not fuse the
steps, a stage that holds records back) goes through Beam's sinks instead, beside
them (``part-*`` staging files, or the tables under ``loose/``), and is assembled
with them.
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from mmcurate.pipeline import beam_files
from mmcurate.pipeline.config import Config
from mmcurate.schemas import Decision
from mmcurate.schemas.arrow_rows import table_row
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, SCHEMAS, TABLES
from mmcurate.stages.config import WriteConfig
from mmcurate.stages.engines import staging_files, table_assembly
from mmcurate.stages.engines.staging_files import TableFormat, record_key
from mmcurate.stages.range_staging import RangeStaging, StageRecordsFn, without_document
from mmcurate.stages.staging import WriteStaged
from mmcurate.stages.write import WriteCorpus

# What a phase stages under its directory.
STAGED_DOCS = "docs"
STAGED_DECISIONS = "decisions"
STAGED_CAPTURED = "captured"
# A run's only phase: each range's output rows (parts/<table>/r-<range id>.parquet), and
# what Beam's sinks wrote of the rest (loose/<table>/part-*.parquet).
PARTS_DIR = "parts"
LOOSE_DIR = "loose"
PART_TABLES = tuple(f"{PARTS_DIR}/{table}" for table in (DOCUMENTS, DECISIONS))


def staged_row(key):
    """A staging table's row of a record: its key and the pickled record."""
    return functools.partial(staging_files.to_row, key=key)


def decision_key(decision: Decision) -> str:
    return decision.doc_id


def captured_key(image) -> str:
    return image.url


def range_tables(here: str, final: bool) -> dict[str, str]:
    """Table -> directory of the files a range's records go to."""
    if final:
        return {table: beam_files.join(here, PARTS_DIR, table) for table in (DOCUMENTS, DECISIONS)}
    return {name: beam_files.join(here, name) for name in (STAGED_DOCS, STAGED_DECISIONS, STAGED_CAPTURED)}


def range_formats(write: WriteConfig, final: bool) -> dict[str, TableFormat]:
    """How the output tables' parts are written (the write stage's codec and row
    groups); staging tables keep their own format."""
    if not final:
        return {}
    codec = write.compression
    return {table: TableFormat(SCHEMAS[table], codec, write.row_group_size) for table in (DOCUMENTS, DECISIONS)}


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


def write_ranges(staging: RangeStaging, docs: beam.PCollection, decisions: Sequence[beam.PCollection], write: WriteConfig) -> None:
    """A run's only phase: the rows of its kept documents and decision rows (without
    the rejected documents they carry) into files of the range each came from; the
    rest to ``loose/`` through the write stage's sinks (``assemble_tables`` joins
    both after the run)."""
    documents = functools.partial(table_row, table=DOCUMENTS)
    rows = functools.partial(table_row, table=DECISIONS)
    loose_docs = docs | "StageDocuments" >> beam.ParDo(StageRecordsFn(staging, DOCUMENTS, "documents", documents))
    loose = [
        d | f"StageDecisions{i}" >> beam.ParDo(StageRecordsFn(staging, DECISIONS, f"decisions{i}", rows, without_document))
        for i, d in enumerate(decisions)
    ]
    loose_decisions = loose | "LooseDecisions" >> beam.Flatten()
    # No images or pairs rows reach this phase: their tables are assembled from no
    # parts, as files with the schema and no rows, the same as from an empty sink's.
    here = staging.phase_dir
    _ = (loose_docs, loose_decisions) | "Write" >> WriteCorpus(beam_files.join(here, LOOSE_DIR), write, given_only=True)


def _parts(here: str, table: str, reads: dict[str, dict]) -> list[str]:
    """A table's parts in input order: the range parts by (file, range start, first
    record's offset), then what Beam's sink wrote."""
    fs = FileSystems
    directory = beam_files.join(here, PARTS_DIR, table)
    ranged = staging_files.staged_files(fs, directory) if table in (DOCUMENTS, DECISIONS) else []

    def order(path: str):
        rid = staging_files.part_range_id(path)
        path_start = tuple(reads[rid]["range"][:2]) if rid in reads else ("", 0)
        first = int(path.rsplit("-", 1)[-1][: -len(".parquet")])
        return (*path_start, first, path)

    return sorted(ranged, key=order) + staging_files.staged_files(fs, beam_files.join(here, LOOSE_DIR, table))


def plan_tables(here: str, tables: str, config: Config) -> list[tuple[str, table_assembly.OutputFile]]:
    """Every output file of a run's only phase (after its pipeline has run), planned
    from the parts' footers: ``(table, OutputFile)`` under ``tables``."""
    reads = staging_files.read_records(FileSystems, here)
    num_shards = config.write.num_shards
    planned = []
    for table in TABLES:
        parts = _parts(here, table, reads)
        for spec in table_assembly.plan_files(FileSystems, parts, beam_files.join(tables, table), num_shards):
            planned.append((table, spec))
    return planned


def assemble_tables(here: str, tables: str, config: Config) -> dict[str, list[str]]:
    """The output tables under ``tables`` from a run's only phase's parts, written by
    this process: table -> the files written."""
    write = config.write
    written: dict[str, list[str]] = {table: [] for table in TABLES}
    for table, spec in plan_tables(here, tables, config):
        written[table].append(table_assembly.write_file(FileSystems, spec, SCHEMAS[table], write.compression, write.row_group_size))
    return written
