"""Runs one curation: checks inputs, runs the Beam pipeline, publishes the tables
and writes the manifest."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Mapping, Optional, Sequence

import apache_beam as beam
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineState

from mmcurate.pipeline import beam_files
from mmcurate.pipeline import publication as out
from mmcurate.pipeline.build import (
    STAGED_CAPTURED,
    STAGED_DECISIONS,
    STAGED_DOCS,
    TABLES_DIR,
    Phase,
    build_phase,
    phase_dir,
    plan_phases,
)
from mmcurate.pipeline.config import Config
from mmcurate.pipeline.manifest import build_manifest
from mmcurate.pipeline.progress import ProgressMonitor
from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE
from mmcurate.stages.engines import staging_files
from mmcurate.stages.range_staging import NAMESPACE as RANGES_NAMESPACE
from mmcurate.stages.range_staging import RANGES_READ
from mmcurate.stages.results import COUNTER_KEPT
from mmcurate.stages.read_index import ReadWarcIndex, check_index, index_batches

log = logging.getLogger(__name__)


class InputError(ValueError):
    """An input path or pattern that matches nothing, or cannot be listed."""


class RunError(RuntimeError):
    """The pipeline did not finish, or its output does not add up."""


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
    from mmcurate.pipeline.report.command import REPORT

    stale = beam_files.join(output, REPORT)
    if beam_files.exists(stale):
        beam_files.remove(stale)
        log.info("removed %s: it described the previous run (mmcurate report %s writes a new one)", stale, output)


def query_counters(result: Any) -> Optional[dict[tuple[str, str], int]]:
    """Every user counter of the run, summed over steps: {(namespace, name): value};
    None when the runner reports no metrics (Beam's DaskRunner raises
    NotImplementedError for ``metrics()``)."""
    try:
        queried = result.metrics().query()["counters"]
    except NotImplementedError:
        return None
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for counter in queried:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[(counter.key.metric.namespace, counter.key.metric.name)] += int(value or 0)
    if not totals:
        return None  # every run counts read.files or read.ranges: no counters means no metrics
    return dict(totals)


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


def _run(pipeline: beam.Pipeline) -> tuple[Any, Any]:
    """Runs ``pipeline`` to the end: (result, final state)."""
    result = pipeline.run()
    return result, result.wait_until_finish()


class Interrupted(RunError):
    """The run was stopped (Ctrl-C); the message says whether it can resume."""


COMPLETE = "_COMPLETE.json"
STATE = "run.json"


def run_key(config: Config, files: Sequence[tuple[str, int, float]], index: Optional[str], warc_prefix: str) -> str:
    """What a rerun must match to resume: the config and every input file (path,
    size, modification time), or the index and prefix."""
    material = json.dumps(
        {"config": config.digest(), "files": sorted(files), "index": index or "", "warc_prefix": warc_prefix},
        sort_keys=True,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def _input_files(patterns: Sequence[str]) -> list[tuple[str, int, float]]:
    files = []
    for pattern in patterns:
        for m in FileSystems.match([pattern])[0].metadata_list:
            if not m.path.endswith("/"):
                files.append((m.path, int(m.size_in_bytes), float(m.last_updated_in_seconds or 0)))
    return sorted(set(files))


def _merge(totals: dict[tuple[str, str], int], counters: Optional[dict[tuple[str, str], int]]) -> None:
    for key, value in (counters or {}).items():
        totals[key] = totals.get(key, 0) + value


def _run_phases(
    phases: Sequence[Phase],
    root: str,
    options: PipelineOptions,
    patterns: Sequence[str],
    config: Config,
    reader: Optional[beam.PTransform],
) -> tuple[Optional[dict[tuple[str, str], int]], list[dict[str, Any]]]:
    """Runs every phase not finished yet (one Beam pipeline each); returns the
    counters of all phases (None if a runner reported none) and what each phase did."""
    totals: dict[tuple[str, str], int] = {}
    metrics = True
    report = []
    for phase in phases:
        here = phase_dir(root, phase)
        done = beam_files.read_json(beam_files.join(here, COMPLETE))
        resumed = done is not None
        if resumed:
            log.info("phase %s: finished by an earlier run, resumed after it", phase.dirname)
        else:
            finished = _resumable_ranges(here) if phase.index == 0 else {}
            clock = time.perf_counter()
            pipeline = beam.Pipeline(options=options)
            build_phase(pipeline, phases, phase, root, patterns, config, reader=reader, done_ranges=frozenset(finished))
            result, state = _run(pipeline)
            if state not in (PipelineState.DONE, None):
                raise RunError(f"phase {phase.dirname} ended in state {state}; nothing was published (staging kept at {root})")
            counters = query_counters(result)
            if counters is None and phase.index > 0 and metrics:
                counters = {}  # the runner reports metrics: this phase saw nothing to count
            ranges_read = None if counters is None else counters.pop((RANGES_NAMESPACE, RANGES_READ), 0)
            if counters is not None:
                # The ranges an earlier run finished count as they counted then.
                _merge(counters, staging_files.summed_counters(finished.values()))
            done = {
                "counters": None if counters is None else [[ns, name, value] for (ns, name), value in sorted(counters.items())],
                "seconds": round(time.perf_counter() - clock, 3),
            }
            if phase.index == 0:
                done["ranges"] = {"read": ranges_read, "resumed": len(finished)}
            beam_files.write_json(beam_files.join(here, COMPLETE), done)
        if done["counters"] is None:
            metrics = False
        else:
            _merge(totals, {(ns, name): value for ns, name, value in done["counters"]})
        entry = {"phase": phase.dirname, "stages": list(phase.stages), "seconds": done["seconds"], "resumed": resumed}
        if "ranges" in done:
            entry["ranges"] = done["ranges"]
        report.append(entry)
    return (totals if metrics else None), report


STAGED_TABLES = (STAGED_DOCS, STAGED_DECISIONS, STAGED_CAPTURED)


def _resumable_ranges(here: str) -> dict[str, dict]:
    """The input ranges of a first phase that an earlier, killed run finished (their
    markers: ``stages/range_staging.py``); everything else that run left of the phase
    is removed, to be read again."""
    if not beam_files.exists(here):
        return {}
    finished = staging_files.finished_ranges(FileSystems, here)
    stale = staging_files.stale_files(FileSystems, here, STAGED_TABLES, finished)
    for path in stale:
        beam_files.remove(path)
    for name in ("blobs", TABLES_DIR):
        beam_files.remove(beam_files.join(here, name))
    if finished:
        log.info("phase %s: %d input range(s) finished by an earlier run are kept", here, len(finished))
    else:
        beam_files.remove(here)
    return finished


def _kept_ranges(root: str, phases: Sequence[Phase]) -> int:
    return len(staging_files.finished_ranges(FileSystems, phase_dir(root, phases[0])))


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
    input files skips the phases an earlier, killed or interrupted run finished.

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
        key = run_key(config, _input_files(patterns), index, warc_prefix)
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
            with ProgressMonitor(n_bytes, run_id) if progress else contextlib.nullcontext():
                counters, report = _run_phases(phases, root, options, patterns, config, reader)
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
            ranges = _kept_ranges(root, phases)
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
