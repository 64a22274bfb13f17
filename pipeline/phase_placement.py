"""Where a later phase of a ``local`` run runs: on Beam's worker processes, or in
the launching process.

Beam's DirectRunner in ``multi_processing`` mode (the ``local`` preset) starts its
worker processes anew for each pipeline it runs, and a run is one pipeline per phase
(``pipeline.phases``). A worker's start costs about 3 CPU s (Beam's SDK harness and
the phase's imports; the workers of a phase start side by side, so about that much
wall time too), and every bundle's input and output crosses gRPC to and from the
launcher, which holds each stage's outputs. The first phase, hours of per-page work
on a crawl, pays for that many times over. A later phase that runs dedup on a few
thousand staged documents does not: it spends about as long starting its workers as
the work it splits between them, so on the ``local`` preset such a phase runs in the
launching process instead (DirectRunner in memory), where the direct preset runs it
too; what it shuffles, fingerprints and notes, is held by the launcher either way.

The rule is a cost model of the phase's documents ``docs`` (the kept count of the
phase before, from its counters) on ``workers`` worker processes: the phase runs here
when ``docs * SECONDS_PER_DOC * (1 - WORKER_OVERHEAD / workers) < START_SECONDS``,
what the workers would save against what starting them costs. With the figures
below, a dedup phase of up to about 1,300 documents runs here on two workers (about 700
on four, worked out, not measured). ``SECONDS_PER_DOC`` has a figure only
for the stages measured (dedup); a phase with any other stage (quality, images,
scoring: model inference, image retrieval and decoding) runs on the workers, and so
does every phase of every other runner, a phase whose counters are missing (a runner
without metrics), and the first phase, which loads heliport (about 830 MB that would
stay in the launcher under the later phases).
"""

from __future__ import annotations

import logging
from typing import Mapping, Optional

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

log = logging.getLogger(__name__)

# The cost model's figures, ours: the dedup phase run alone from a first phase's
# staging, in this process and on two workers, alternating, twice each, on this
# project's 2-core machine with nothing else running (docs/scale.md, "Where a later
# phase runs"; 1,039 and 3,130 staged documents of bench_memory's input, all
# different, one in ten a near or exact copy of another; measured again by
# benchmarks/bench_phase_placement.py, which prints these three figures). A line through each mode's
# wall times: START_SECONDS is what the two-worker phase costs more before its first
# document (their start-up, gRPC set-up), SECONDS_PER_DOC a document's cost in this
# process, per stage, and WORKER_OVERHEAD how much more a document costs on the
# workers, all told (its records cross gRPC to and from the launcher): on w workers
# the phase's per-document wall time is SECONDS_PER_DOC * WORKER_OVERHEAD / w.
START_SECONDS = 2.6
SECONDS_PER_DOC: Mapping[str, float] = {"dedup": 0.0054}
WORKER_OVERHEAD = 1.26

_DIRECT_RUNNERS = {"direct", "directrunner", "switchingdirectrunner"}


def worker_processes(options: PipelineOptions) -> int:
    """How many worker processes the runner of ``options`` starts for a pipeline on
    this machine: ``direct_num_workers`` for Beam's DirectRunner in
    ``multi_processing`` mode (0: one per core, as Beam counts them), else 0."""
    runner = options.view_as(StandardOptions).runner
    # by name, a dotted class path or an instance
    name = runner.rsplit(".", 1)[-1] if isinstance(runner, str) else type(runner).__name__
    if name.lower() not in _DIRECT_RUNNERS:
        return 0
    direct = options.view_as(DirectOptions)
    if direct.direct_running_mode != "multi_processing":
        return 0
    if direct.direct_num_workers and direct.direct_num_workers > 0:
        return direct.direct_num_workers
    import multiprocessing

    return multiprocessing.cpu_count()


def runs_here(stages: tuple[str, ...], docs: Optional[int], workers: int) -> bool:
    """Whether a phase after the first, running ``stages`` on ``docs`` staged
    documents, costs less in one process than on ``workers`` worker processes."""
    if workers < 1 or docs is None or not stages or any(s not in SECONDS_PER_DOC for s in stages):
        return False
    per_doc = sum(SECONDS_PER_DOC[s] for s in stages)
    return docs * per_doc * (1 - WORKER_OVERHEAD / workers) < START_SECONDS


def in_this_process(options: PipelineOptions) -> PipelineOptions:
    """``options`` with Beam's DirectRunner running pipelines in this process (in
    memory, one worker), every other value as it was."""
    # flags Beam's own options do not know stay (a user's options class read later)
    values = options.get_all_options(drop_default=True, retain_unknown_options=True)
    values.update(direct_running_mode="in_memory", direct_num_workers=1)
    return PipelineOptions([], **values)


def phase_options(options: PipelineOptions, index: int, stages: tuple[str, ...], docs: Optional[int]) -> PipelineOptions:
    """The options phase ``index`` (running ``stages`` on ``docs`` documents) runs
    with: ``options``, or, for a small later phase of a ``local`` run, the same run
    in this process (see the module docstring)."""
    workers = worker_processes(options)
    if index == 0 or not runs_here(stages, docs, workers):
        return options
    log.info("phase %d (%s, %d documents) runs in this process: starting %d workers would cost more than they save",
             index, ",".join(stages), docs, workers)
    return in_this_process(options)
