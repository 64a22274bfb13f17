"""A run's phases, one Beam pipeline each, and what a rerun resumes from.

Each phase is an ordinary Beam pipeline that the run's runner runs as it is. A
finished phase is recorded in staging (``_COMPLETE.json``, with its counters) by
this process once its pipeline has finished, so a rerun of the same config on the
same input files skips it. Inside the first phase, each input range whose files are
whole is kept too (``stages/range_staging.py``): a rerun reads only the other ranges
and adds the finished ones' counters to its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState

from mmcurate.pipeline import beam_files
from mmcurate.pipeline.build import (
    TABLES_DIR,
    Phase,
    build_phase,
    phase_dir,
)
from mmcurate.pipeline.range_outputs import STAGED_TABLES
from mmcurate.pipeline.config import Config
from mmcurate.pipeline.progress import ProgressMonitor, counts_from_counters
from mmcurate.pipeline.run_results import RunError, query_counters
from mmcurate.runners import direct
from mmcurate.stages import read
from mmcurate.stages.engines import staging_files
from mmcurate.stages.range_staging import NAMESPACE as RANGES_NAMESPACE
from mmcurate.stages.range_staging import RANGES_READ, finish_ranges, whole_ranges

log = logging.getLogger(__name__)


def _run(pipeline: beam.Pipeline) -> tuple[Any, Any]:
    """Runs ``pipeline`` to the end: (result, final state)."""
    result = pipeline.run()
    return result, result.wait_until_finish()


COMPLETE = "_COMPLETE.json"
STATE = "run.json"


def run_key(config: Config, files: Sequence[tuple[str, int, float]], index: Optional[str], warc_prefix: str) -> str:
    """What a rerun must match to resume: the config and every input file (path,
    size, modification time), or the index and prefix, and how files are cut into
    ranges."""
    material = json.dumps(
        {
            "config": config.digest(),
            "files": sorted(files),
            "index": index or "",
            "warc_prefix": warc_prefix,
            # How files are cut into ranges: a first phase's finished ranges are kept by name.
            "ranges": [read.CHUNK_BYTES, read.RANGES_PER_FILE, read.MIN_CHUNK_BYTES],
        },
        sort_keys=True,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def input_files(patterns: Sequence[str]) -> list[tuple[str, int, float]]:
    files = []
    for pattern in patterns:
        for m in FileSystems.match([pattern])[0].metadata_list:
            if not m.path.endswith("/"):
                files.append((m.path, int(m.size_in_bytes), float(m.last_updated_in_seconds or 0)))
    return sorted(set(files))


def _merge(totals: dict[tuple[str, str], int], counters: Optional[dict[tuple[str, str], int]]) -> None:
    for key, value in (counters or {}).items():
        totals[key] = totals.get(key, 0) + value


def run_phases(
    phases: Sequence[Phase],
    root: str,
    options: PipelineOptions,
    patterns: Sequence[str],
    config: Config,
    reader: Optional[beam.PTransform],
    progress: Optional[ProgressMonitor] = None,
) -> tuple[Optional[dict[tuple[str, str], int]], list[dict[str, Any]]]:
    """Runs every phase not finished yet (one Beam pipeline each); returns the
    counters of all phases (None if a runner reported none) and what each phase did.
    ``progress`` (a local run's live line) is told what is taken from staging."""
    totals: dict[tuple[str, str], int] = {}
    metrics = True
    report = []
    for phase in phases:
        here = phase_dir(root, phase)
        done = beam_files.read_json(beam_files.join(here, COMPLETE))
        resumed = done is not None
        if resumed:
            log.info("phase %s: finished by an earlier run, resumed after it", phase.dirname)
            if progress is not None and done["counters"] is not None:
                counters = {(ns, name): value for ns, name, value in done["counters"]}
                progress.resumed(_progress_counts(phase, counters), progress.total_bytes if phase.index == 0 else 0)
        else:
            finished = _resumable_ranges(here, phase, config) if phase.index == 0 else {}
            if progress is not None and finished:
                counts = _progress_counts(phase, staging_files.summed_counters(finished.values()))
                progress.resumed(counts, _range_bytes(finished.values(), patterns))
            clock = time.perf_counter()
            done_ranges = {rid: int(marker.get("pages", 0)) for rid, marker in finished.items()}
            counters = _run_phase(phases, phase, root, options, patterns, config, reader, done_ranges)
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


def _run_phase(phases, phase, root, options, patterns, config, reader, done_ranges) -> Optional[dict]:
    """Builds and runs one phase's pipeline: its counters (``query_counters``)."""
    pipeline = beam.Pipeline(runner=direct.runner_for(options), options=options)
    build_phase(pipeline, phases, phase, root, patterns, config, reader=reader, done_ranges=done_ranges)
    result, state = _run(pipeline)
    if state not in (PipelineState.DONE, None):
        raise RunError(f"phase {phase.dirname} ended in state {state}; nothing was published (staging kept at {root})")
    return query_counters(result)


def _progress_counts(phase: Phase, counters: dict[tuple[str, str], int]) -> dict[str, int]:
    """The progress counts of a phase's counters; in the last phase, the documents its
    last stage kept are those the write stage counts."""
    counts = counts_from_counters(counters)
    if phase.final and (phase.index == 0 or phase.stages):  # the write phase of no stage counts none
        last = ("read", "extract", *phase.stages)[-1] if phase.index == 0 else phase.stages[-1]
        counts["write.kept"] = counts.get(f"{last}.kept", 0)
    return counts


def _range_bytes(markers, patterns: Sequence[str]) -> int:
    """The input bytes of finished ranges (a range to the end of its file: to its
    size; a batch of index pointers: the bytes they name)."""
    markers = list(markers)
    sizes = {} if all("bytes" in m for m in markers) else {path: size for path, size, _ in input_files(patterns)}
    total = 0
    for marker in markers:
        path, start, end = marker["range"]
        total += marker["bytes"] if "bytes" in marker else (end if end >= 0 else sizes.get(path, start)) - start
    return total




def _resumable_ranges(here: str, phase: Phase, config: Config) -> dict[str, dict]:
    """The input ranges of a first phase that an earlier, killed run finished (their
    markers: ``stages/range_staging.finish_ranges``); everything else that run left of
    the phase is removed, to be read again."""
    if not beam_files.exists(here):
        return {}
    needs_captured = "images" in config.run.stages or "recycle" in config.run.stages
    finished = finish_ranges(here, STAGED_TABLES, needs_captured, ("read", "extract", *phase.stages))
    for name in ("blobs", TABLES_DIR):
        beam_files.remove(beam_files.join(here, name))
    if finished:
        log.info("phase %s: %d input range(s) finished by an earlier run are kept", here, len(finished))
    else:
        beam_files.remove(here)
    return finished


def kept_ranges(root: str, phases: Sequence[Phase], config: Config) -> int:
    """The input ranges of the first phase a rerun would keep (``whole_ranges``)."""
    phase = phases[0]
    needs_captured = "images" in config.run.stages or "recycle" in config.run.stages
    whole, _, _ = whole_ranges(phase_dir(root, phase), STAGED_TABLES, needs_captured, ("read", "extract", *phase.stages))
    return len(whole)
