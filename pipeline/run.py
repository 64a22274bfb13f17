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

import apache_beam as beam
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineState

from mmcurate.pipeline import output as out
from mmcurate.pipeline.build import build_pipeline
from mmcurate.pipeline.config import Config
from mmcurate.pipeline.manifest import build_manifest
from mmcurate.runners.progress import ProgressMonitor
from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE
from mmcurate.stages.common import COUNTER_KEPT
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
    from mmcurate.pipeline import remote_output
    from mmcurate.pipeline.report import REPORT

    stale = remote_output.join(output, REPORT)
    if remote_output.exists(stale):
        remote_output.delete([stale])
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


def run_curation(
    inputs: Sequence[str],
    output: str,
    config: Config,
    beam_args: Sequence[str] = (),
    *,
    progress: bool = False,
    index: Optional[str] = None,
    warc_prefix: str = "",
) -> dict[str, Any]:
    """Curates ``inputs`` into ``output``; returns the manifest it wrote.

    With ``index`` (a Parquet/CSV file or glob of CC-index style pointers) the
    records it names are read by range reads instead, ``warc_prefix`` going before
    relative WARC filenames; ``inputs`` must then be empty. With ``progress``, a
    local run prints live progress to stderr (``runners.progress``).

    Raises InputError before anything runs if an input is missing, and RunError if
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

    run_id = out.new_run_id()
    if out.is_local(output):
        os.makedirs(output, exist_ok=True)
    out.clear_staging(output)
    staging = out.staging_dir(output, run_id)
    log.info(
        "run %s: %d input file(s), %.1f MB, stages %s, runner %s",
        run_id,
        n_files,
        n_bytes / 1e6,
        ",".join(config.run.stages) or "(none)",
        runner,
    )

    started = datetime.now(timezone.utc)
    clock = time.perf_counter()
    pipeline = beam.Pipeline(options=options)
    build_pipeline(pipeline, patterns, staging, config, reader=reader)
    # The monitor must be listening before the workers start: DirectRunner's run() blocks.
    with ProgressMonitor(n_bytes, run_id) if progress else contextlib.nullcontext():
        result, state = _run(pipeline)
    if state not in (PipelineState.DONE, None):
        raise RunError(f"pipeline ended in state {state}; nothing was published (staging kept at {staging})")
    wall = time.perf_counter() - clock

    written = out.table_summary(staging)
    out.publish(output, staging)
    remove_stale_report(output)
    counters = query_counters(result)
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
        started=started.isoformat(timespec="seconds"),
        finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        wall_seconds=wall,
    )
    manifest["counters_source"] = counters_source
    if index:
        manifest["index"] = {"files": patterns, "warc_prefix": warc_prefix, "bytes_pointed_at": n_bytes}
    out.write_json(out.join(output, out.MANIFEST), manifest)
    if not manifest["totals"]["conserved"]:
        t = manifest["totals"]
        raise RunError(
            f"conservation violated: pages {t['pages']} != kept {t['kept']} + rejected {t['rejected']}"
            f" + errors {t['errors']} (manifest written to {output})"
        )
    for problem in manifest["counter_mismatches"]:
        log.warning("counter/rows mismatch: %s", problem)
    return manifest
