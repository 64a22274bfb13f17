"""Runs one curation: checks inputs, runs the Beam pipeline, publishes the tables
and writes the manifest."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Mapping, Optional, Sequence

import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from mmcurate.pipeline import beam_files, run_output
from mmcurate.pipeline import publication as out
from mmcurate.pipeline.build import TABLES_DIR, phase_dir, plan_phases
from mmcurate.pipeline.config import Config
from mmcurate.pipeline.manifest import build_manifest
from mmcurate.pipeline.phases import COMPLETE, STATE, RunError, input_files, kept_ranges, run_key, run_phases
from mmcurate.pipeline.progress import ProgressMonitor
from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE
from mmcurate.stages.results import COUNTER_KEPT
from mmcurate.stages.read_index import ReadWarcIndex, check_index, index_batches

log = logging.getLogger(__name__)


class InputError(ValueError):
    """An input path or pattern that matches nothing, or cannot be listed."""


def _absolute(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def resolve_inputs(patterns: Sequence[str]) -> tuple[list[str], int, int]:
    """Absolute patterns, the number of files they match and their total bytes.

    Fails on the first pattern that matches no file, naming it.
    """
    if not patterns:
        raise InputError("no input given")
    resolved, files, size = [], 0, 0
    for pattern in patterns:
        absolute = _absolute(pattern)
        try:
            matched = FileSystems.match([absolute])[0].metadata_list
        except Exception as exc:  # unknown scheme, missing credentials, ...
            raise InputError(f"input {pattern}: cannot be listed: {exc}") from exc
        matched = [m for m in matched if not m.path.endswith("/")]
        if not matched:
            raise InputError(f"input {pattern}: no such file (or the pattern matches nothing)")
        resolved.append(absolute)
        files += len(matched)
        size += sum(m.size_in_bytes for m in matched)
    return resolved, files, size


def remove_stale_report(output: str) -> None:
    """An earlier run's report.html describes tables this run has just replaced."""
    stale = beam_files.join(output, run_output.REPORT)
    if beam_files.exists(stale):
        beam_files.remove(stale)
        log.info("removed %s: it described the previous run (mmcurate report %s writes a new one)", stale, output)


def counters_from_rows(config: Config, written: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    """The per-stage counters rebuilt from the output rows, for runners without metrics.

    The page funnel is a chain, so it follows from the rows alone: each stage's
    rejected and error counts are its decision rows, the last stage keeps the
    written documents, and each stage keeps what the next one took in. Counters
    that no row records (WARC records by type, seconds) stay absent.
    """
    counters: dict[tuple[str, str], int] = defaultdict(int)
    removed: dict[str, int] = defaultdict(int)
    for (subject, stage, kind, reason), n in written["decision_counts"].items():
        if subject != SUBJECT_PAGE:
            continue
        prefix = "rejected" if kind == KIND_REJECTED else "errors"
        counters[(stage, f"{prefix}.{reason}")] += n
        removed[stage] += n
    chain = ["read", "extract", *config.run.stages]
    kept = written["kept"]
    for stage in reversed(chain):
        counters[(stage, COUNTER_KEPT)] = kept
        kept += removed[stage]
    counters[("read", "pages")] = kept
    return dict(counters)


def resolve_index(patterns: Sequence[str]) -> tuple[list[str], int, int]:
    """Absolute index patterns, the number of index files and the bytes their
    pointers name (for the ETA). Fails on a missing or malformed index."""
    resolved, files, _ = resolve_inputs(patterns)
    ranged = 0
    for pattern in resolved:
        for metadata in FileSystems.match([pattern])[0].metadata_list:
            try:
                check_index(metadata.path)
                for batch in index_batches(metadata.path):
                    ranged += int(pc.sum(batch.column("warc_record_length")).as_py() or 0)
            except Exception as exc:
                raise InputError(str(exc)) from exc
    return resolved, files, ranged


class Interrupted(RunError):
    """The run was stopped (Ctrl-C); the message says whether it can resume."""


def run_curation(
    inputs: Sequence[str],
    output: str,
    config: Config,
    beam_args: Sequence[str] = (),
    *,
    progress: bool = False,
    index: Optional[str] = None,
    warc_prefix: str = "",
    resume: bool = True,
) -> dict[str, Any]:
    """Curates ``inputs`` into ``output``; returns the manifest it wrote.

    With ``index`` (a Parquet/CSV file or glob of CC-index style pointers) the
    records it names are read by range reads instead, ``warc_prefix`` going before
    relative WARC filenames; ``inputs`` must then be empty. With ``progress``, a
    local run prints live progress to stderr (``pipeline.progress``).

    The run goes in phases (``pipeline.build``), each finished phase recorded in
    staging; with ``resume`` (the default) a rerun of the same config on the same
    input files skips the phases (and the first phase's input ranges) an earlier,
    killed or interrupted run finished.

    Raises InputError before anything runs if an input is missing, OutputBusy if
    another run holds the output directory, Interrupted on Ctrl-C, and RunError if
    the pipeline fails or pages are not conserved (the manifest is written first,
    so the numbers are there to read).
    """
    reader = None
    if index:
        if inputs:
            raise InputError("give WARC inputs or an index, not both")
        patterns, n_files, n_bytes = resolve_index([index])
        reader = ReadWarcIndex(patterns, warc_prefix, config.read)
    else:
        patterns, n_files, n_bytes = resolve_inputs(inputs)
    output = _absolute(output)
    options = PipelineOptions(list(beam_args))
    standard = options.view_as(StandardOptions)
    if not standard.runner:
        standard.runner = "DirectRunner"
    runner = standard.runner if isinstance(standard.runner, str) else type(standard.runner).__name__

    with out.lock_output(output):
        key = run_key(config, input_files(patterns), index, warc_prefix)
        out.clear_staging(output, keep=key if resume else None)
        root = out.staging_dir(output, key)
        state = beam_files.read_json(beam_files.join(root, STATE))
        if state is None:
            state = {"run_id": out.new_run_id(), "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            _write_state(root, state)
        run_id = state["run_id"]
        log.info(
            "run %s: %d input file(s), %.1f MB, stages %s, runner %s",
            run_id,
            n_files,
            n_bytes / 1e6,
            ",".join(config.run.stages) or "(none)",
            runner,
        )
        phases = plan_phases(config)
        clock = time.perf_counter()
        # Ctrl-C inside a transform is logged by Beam with a traceback before it is re-raised; the
        # interrupt is reported below in one line instead.
        beam_log = logging.getLogger("apache_beam.runners.common")
        beam_log.addFilter(_drop_interrupt_records)
        try:
            # The monitor must be listening before the workers start: DirectRunner's run() blocks.
            with ProgressMonitor(n_bytes, run_id) if progress else contextlib.nullcontext() as monitor:
                counters, report = run_phases(phases, root, options, patterns, config, reader, monitor)
        except (KeyboardInterrupt, Exception) as exc:
            # Beam re-raises a KeyboardInterrupt that reaches a DoFn as RuntimeError("KeyboardInterrupt
            # [while running ...]"): that is Ctrl-C too. Any other failure goes on up.
            if not isinstance(exc, KeyboardInterrupt) and not _is_interrupt(exc):
                raise
            finished = [p.dirname for p in phases if beam_files.exists(beam_files.join(phase_dir(root, p), COMPLETE))]
            if finished:
                raise Interrupted(
                    f"interrupted; phase(s) {', '.join(finished)} of {len(phases)} are kept in {root}:"
                    " run the same command again to resume"
                ) from None
            ranges = kept_ranges(root, phases, config)
            if ranges:
                raise Interrupted(
                    f"interrupted; {ranges} input range(s) of phase {phases[0].dirname} are kept in {root}:"
                    " run the same command again to resume"
                ) from None
            _drop_staging(output, root)
            raise Interrupted("interrupted before any phase finished; staging removed, nothing published") from None
        finally:
            beam_log.removeFilter(_drop_interrupt_records)
        wall = time.perf_counter() - clock
        return _publish(output, root, phases, run_id, state, counters, report, config, patterns, runner, wall, index, warc_prefix, n_bytes)


def _drop_interrupt_records(record: logging.LogRecord) -> bool:
    """A logging filter: drops Beam's log line (and traceback) of a KeyboardInterrupt in a transform."""
    return not record.getMessage().startswith("KeyboardInterrupt")


def _is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt, or Beam's re-raise of one from inside a transform."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt) or str(exc).startswith("KeyboardInterrupt"):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _drop_staging(output: str, root: str) -> None:
    beam_files.remove(root)
    staging = beam_files.join(output, out.STAGING)
    if beam_files.is_local(staging) and os.path.isdir(staging) and not os.listdir(staging):
        os.rmdir(staging)


def _write_state(root: str, state: dict[str, Any]) -> None:
    if beam_files.is_local(root):
        os.makedirs(root, exist_ok=True)
    beam_files.write_json(beam_files.join(root, STATE), state)


def _publish(output, root, phases, run_id, state, counters, report, config, patterns, runner, wall, index, warc_prefix, n_bytes):
    tables = beam_files.join(phase_dir(root, phases[-1]), TABLES_DIR)
    # A run killed while publishing has moved its tables already: count them there.
    written = out.table_summary(tables if beam_files.exists(tables) or not beam_files.is_local(output) else out.version_dir(output, run_id))
    counters_source = "runner metrics"
    if counters is None:
        counters = counters_from_rows(config, written)
        counters_source = "output rows (the runner reports no metrics)"
        log.warning("runner %s reports no metrics: the funnel is rebuilt from the output rows", runner)
    manifest = build_manifest(
        run_id=run_id,
        inputs=patterns,
        output=output,
        runner=runner,
        config=config,
        counters=counters,
        written=written,
        started=state["started"],
        finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        wall_seconds=wall,
    )
    manifest["counters_source"] = counters_source
    manifest["phases"] = report
    if index:
        manifest["index"] = {"files": patterns, "warc_prefix": warc_prefix, "bytes_pointed_at": n_bytes}
    out.publish(output, tables, run_id, manifest)
    remove_stale_report(output)
    _drop_staging(output, root)
    if not manifest["totals"]["conserved"]:
        t = manifest["totals"]
        raise RunError(
            f"conservation violated: pages {t['pages']} != kept {t['kept']} + rejected {t['rejected']}"
            f" + errors {t['errors']} (manifest written to {output})"
        )
    for problem in manifest["counter_mismatches"]:
        log.warning("counter/rows mismatch: %s", problem)
    return manifest
