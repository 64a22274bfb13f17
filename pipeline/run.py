"""Runs one curation: checks inputs, runs the Beam pipeline, publishes the tables
and writes the manifest."""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineState

from mmcurate.pipeline import output as out
from mmcurate.pipeline.build import build_pipeline
from mmcurate.pipeline.config import Config
from mmcurate.pipeline.manifest import build_manifest

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


def query_counters(result: Any) -> dict[tuple[str, str], int]:
    """Every user counter of the run, summed over steps: {(namespace, name): value}."""
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for counter in result.metrics().query()["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[(counter.key.metric.namespace, counter.key.metric.name)] += int(value or 0)
    return dict(totals)


def run_curation(
    inputs: Sequence[str],
    output: str,
    config: Config,
    beam_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Curates ``inputs`` into ``output``; returns the manifest it wrote.

    Raises InputError before anything runs if an input is missing, and RunError if
    the pipeline fails or pages are not conserved (the manifest is written first,
    so the numbers are there to read).
    """
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
    build_pipeline(pipeline, patterns, staging, config)
    result = pipeline.run()
    state = result.wait_until_finish()
    if state not in (PipelineState.DONE, None):
        raise RunError(f"pipeline ended in state {state}; nothing was published (staging kept at {staging})")
    wall = time.perf_counter() - clock

    written = out.table_summary(staging)
    out.publish(output, staging)
    manifest = build_manifest(
        run_id=run_id,
        inputs=patterns,
        output=output,
        runner=runner,
        config=config,
        counters=query_counters(result),
        written=written,
        started=started.isoformat(timespec="seconds"),
        finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        wall_seconds=wall,
    )
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
