"""The first phase of a ``local`` run as tasks: a process per worker, each running the
phase's pipeline in memory on the input ranges it asks the launcher for, one at a time.

Beam's DirectRunner in ``multi_processing`` mode (the ``local`` preset) runs a
pipeline's steps on worker processes it starts for it, and for the first phase that
costs time no work is done in: one worker cuts the files into ranges (a serial scan of
every record boundary) while the others wait; each worker is given a fixed share of
the ranges (every n-th), so one that finishes its share first stays idle until the
last is done; and the ranges cross gRPC to the workers through the launcher
(measured on 13,600 pages on two workers: about 13 s of a 77 s phase; docs/scale.md).
Here the launcher instead starts ``workers`` fresh processes at once
(``phase_process.call_many``) and, while they start, cuts the input files into the
same ranges ``ReadWarc`` cuts (``read.file_ranges``) in a thread of its own. Each
process builds the first phase's pipeline with ``ReadWarc(chunks=AskForRanges())``
and runs it on Beam's DirectRunner in memory: its reader asks the launcher for a
range (``phase_process.ask``), reads, extracts, filters and stages it
(``stages/range_staging.py``: the steps between reading and staging are fused, so
the range is staged before the next is asked for), and asks again until none is
left. Work goes to whichever process is free, to the end.

Nothing about the output changes: each range is staged with its marker as on any
runner, so the next phase, the assembled tables of a run of one phase and a rerun's
resume are the same; the ranges an earlier run finished are not handed out. The
phase's counters are the sum of the tasks' and the files the launcher cut (the
``read.files`` counter, which ``ReadWarc`` counts where it cuts them). What the
tasks' Beam sinks write beside the ranges' files (nothing, as the steps are fused;
see ``range_staging``) is named per task, ``part-t<i>-*``. The manifest's phase
records the tasks' process ids (``tasks``), their count as its ``workers``, and no
``pid`` (it ran in several processes).

Used when the runner is Beam's DirectRunner in ``multi_processing`` mode, the first
phase stages by range (``build.stages_by_range``) reading WARC files cut into ranges
(``read.reshuffle``, no ``read.limit``, no CC index), on POSIX, and the phase's call
pickles without naming the launching script (``phase_process.portable``); else the
phase runs on Beam's workers as before. Ctrl-C, a task's error or a task killed stops
the others (``call_many``): the ranges staged so far keep their markers, and a rerun
resumes from them.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections import defaultdict
from typing import Any, Iterator, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState

from mmcurate.pipeline import phase_placement, phase_process
from mmcurate.pipeline.build import Phase, build_phase, stages_by_range
from mmcurate.pipeline.config import Config
from mmcurate.pipeline.run_results import RunError, query_counters
from mmcurate.runners import direct, dofn_signatures, options_views
from mmcurate.stages import read
from mmcurate.stages.engines.staging_files import range_id
from mmcurate.stages.range_staging import NAMESPACE as RANGES_NAMESPACE
from mmcurate.stages.range_staging import RANGES_READ

log = logging.getLogger(__name__)

# The request a task's reader sends for its next range.
NEXT_RANGE = "next range"


def task_count(options: PipelineOptions, phase: Phase, config: Config, reader: Optional[beam.PTransform]) -> int:
    """How many tasks run ``phase`` (0: it runs on the runner as usual); see the
    module docstring for when."""
    if not phase_process.SUPPORTED or reader is not None or config.read.limit or not config.read.reshuffle:
        return 0
    if not stages_by_range(config, phase, reader) or direct.runner_for(options) is None:
        return 0  # a runner of the user's own named DirectRunner runs as given
    return phase_placement.worker_processes(options)


class _AskRangesFn(beam.DoFn):
    """The impulse -> each range the launcher hands out (``phase_process.ask``), until
    it has none left."""

    def process(self, _impulse: Any) -> Iterator[tuple[str, int, int]]:
        while True:
            chunk = phase_process.ask(NEXT_RANGE)
            if chunk is None:
                return
            yield tuple(chunk)


class AskForRanges(beam.PTransform):
    """A pipeline's root -> the ranges the launcher hands this task, one at a time."""

    def expand(self, pbegin) -> beam.PCollection:
        return pbegin | "Impulse" >> beam.Impulse() | "AskRanges" >> beam.ParDo(_AskRangesFn())


class RangeDealer:
    """The launcher's side: cuts ``paths`` into ranges (``read.file_ranges``) in a
    thread of its own and hands them out in file order, one per request, skipping
    those named in ``done`` (finished by an earlier run); None once all are out.
    ``handed`` records which task got which range. A fault of the cutting thread is
    raised to the task that asks next (the run fails, as it does when Beam's cutting
    step fails), never taken for the end of the input; ``close`` stops the thread."""

    def __init__(self, paths: Sequence[str], done: Mapping[str, Any]):
        self.paths = list(paths)
        self._done = done
        self._ranges: queue.Queue = queue.Queue(maxsize=1024)
        self._over = False
        self._stop = threading.Event()
        self._fault: Optional[BaseException] = None
        self.handed: list[tuple[int, tuple[str, int, int]]] = []
        self._thread = threading.Thread(target=self._cut, name="mmcurate-range-cutter", daemon=True)
        self._thread.start()

    def _cut(self) -> None:
        try:
            for path in self.paths:
                for chunk in read.file_ranges(path):
                    if range_id(*chunk) not in self._done and not self._put(chunk):
                        return
        except BaseException as exc:  # file_ranges reports a file's faults as one range: this is not one
            self._fault = exc
        self._put(None)

    def _put(self, item: Any) -> bool:
        """Queues ``item`` unless the dealer is closed first: whether it was."""
        while not self._stop.is_set():
            try:
                self._ranges.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def answer(self, task: int, request: Any) -> Optional[tuple[str, int, int]]:
        if request != NEXT_RANGE:
            raise ValueError(f"a first-phase task asked {request!r}")
        if self._over:
            return None
        chunk = self._ranges.get()
        if chunk is None:
            if self._fault is not None:
                raise RuntimeError(f"cutting the input into ranges failed: {self._fault!r}") from self._fault
            self._over = True
            return None
        self.handed.append((task, chunk))
        return chunk

    def close(self) -> None:
        """Stops the cutting thread (which holds a file open while it cuts) and waits for it."""
        self._stop.set()
        self._thread.join()


def run_in_tasks(job: tuple, paths: Sequence[str], tasks: int) -> Optional[tuple[dict, list[int], bool]]:
    """Runs the first phase of ``job`` (``phases._run_phase``'s arguments) as ``tasks``
    processes on the ranges of ``paths``: (its counters, the tasks' process ids,
    whether its tables are left in parts to assemble); None when its call cannot be
    run in another process (it does not pickle, or names the launching script), and
    the caller runs it on the runner instead."""
    phases, phase, root, options, patterns, config, reader, done_ranges = job
    in_memory = phase_placement.in_this_process(options)
    calls = []
    for i in range(tasks):
        pickled = phase_process.portable_payload("the first phase runs on Beam's workers", _run_task, phases, phase,
                                                 root, in_memory, patterns, config, i)
        if pickled is None:
            return None
        calls.append(pickled)
    dealer = RangeDealer(paths, done_ranges)
    try:
        outcomes = phase_process.call_many(calls, dealer.answer)
    finally:
        dealer.close()
    counters: dict[tuple[str, str], int] = defaultdict(int)
    for task_counters, _in_parts, _pid in outcomes:
        for key, value in task_counters.items():
            counters[key] += value
    counters[(read.STAGE, "files")] += len(dealer.paths)
    read_by_tasks = counters.get((RANGES_NAMESPACE, RANGES_READ), 0)
    if read_by_tasks != len(dealer.handed):
        # Each range handed out is read by the task it went to: anything else loses pages.
        raise RunError(f"phase {phase.dirname}: its tasks read {read_by_tasks} input ranges of the "
                       f"{len(dealer.handed)} handed out to them; nothing was published (staging kept at {root})")
    log.info("phase %s: %d ranges read by %d tasks", phase.dirname, len(dealer.handed), tasks)
    return dict(counters), [pid for _, _, pid in outcomes], any(in_parts for _, in_parts, _ in outcomes)


def _run_task(phases, phase, root, options, patterns, config, task: int) -> tuple[dict, bool, int]:
    """One task (in a process of its own): the first phase's pipeline on the ranges it
    is handed, run here; its counters, whether the phase's tables are in parts, and
    this process's id."""
    dofn_signatures.install()
    options_views.install()
    pipeline = beam.Pipeline(runner=direct.runner_for(options), options=options)
    # Staged by range, as every first phase of a run; no range to skip (the dealer hands out none finished).
    in_parts = build_phase(pipeline, phases, phase, root, patterns, config, done_ranges={},
                           chunks=AskForRanges(), sink_name=f"part-t{task}")
    result = pipeline.run()
    state = result.wait_until_finish()
    if state not in (PipelineState.DONE, None):
        raise RunError(f"phase {phase.dirname}, task {task}, ended in state {state}")
    # The in-memory runner reports metrics; a task handed no range has counted nothing.
    return query_counters(result) or {}, in_parts, os.getpid()
