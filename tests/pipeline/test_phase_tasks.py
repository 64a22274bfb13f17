"""The first phase of a local run as tasks (pipeline/phase_tasks.py): the ranges the
launcher hands out, the same output as a direct run, and a killed or interrupted
run that resumes from the ranges its tasks finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from mmcurate.pipeline import phase_tasks
from mmcurate.pipeline.build import plan_phases
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import load_config
from mmcurate.runners.presets import preset_args
from mmcurate.stages import read
from mmcurate.stages.engines import staging_files
from mmcurate.stages.engines.staging_files import range_id
from mmcurate.stages.read_index import ReadWarcIndex

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_resume import (  # noqa: E402,F401
    DEMO,
    FIXTURES,
    RANGE_FILES,
    ctrl_c_keeps_the_finished_ranges,
    finished_phases,
    finished_ranges,
    split_input,
    wait_for,
)
from test_run_scale import assert_same_run, outcome  # noqa: E402

LOCAL = ["--runner-preset", "local", "--runner-opt", "workers=2", "--quiet"]


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "mmcurate.pipeline.cli", "run", *map(str, args), *LOCAL]


def _local(*flags: str) -> PipelineOptions:
    return PipelineOptions(preset_args("local", {"workers": "2"}) + list(flags))


def test_the_dealer_hands_out_each_range_once_in_file_order_but_those_finished_before():
    files = [str(DEMO), str(FIXTURES / "books.toscrape.warc")]
    every = [chunk for path in files for chunk in read.file_ranges(path)]
    assert len(every) >= 5 and all(end == -1 for _, _, end in (every[3], every[-1]))  # the demo's 4 ranges, then books'
    finished = every[1]
    dealer = phase_tasks.RangeDealer(files, {range_id(*finished): 7})
    got = []
    while (chunk := dealer.answer(len(got) % 2, phase_tasks.NEXT_RANGE)) is not None:
        got.append(chunk)
    assert got == [chunk for chunk in every if chunk != finished]
    assert dealer.answer(0, phase_tasks.NEXT_RANGE) is None  # and so on, to every task that asks
    assert dealer.handed == [(i % 2, chunk) for i, chunk in enumerate(got)]
    with pytest.raises(ValueError, match="asked 'something else'"):
        dealer.answer(0, "something else")


def test_a_fault_of_the_cutting_thread_fails_the_phase_and_is_not_taken_for_the_end(monkeypatch):
    files = [str(DEMO), str(FIXTURES / "books.toscrape.warc")]
    cut = read.file_ranges

    def failing_on_the_second_file(path):
        if path == files[1]:
            raise MemoryError("no memory left")  # file_ranges reports a file's own faults as a range: not this
        yield from cut(path)

    monkeypatch.setattr(read, "file_ranges", failing_on_the_second_file)
    dealer = phase_tasks.RangeDealer(files, {})
    got = [dealer.answer(0, phase_tasks.NEXT_RANGE) for _ in range(4)]
    assert got == list(cut(str(DEMO)))
    with pytest.raises(RuntimeError, match=r"^cutting the input into ranges failed: MemoryError\('no memory left'\)$"):
        dealer.answer(1, phase_tasks.NEXT_RANGE)
    dealer.close()


def test_closing_the_dealer_stops_its_thread_while_it_waits_for_room(monkeypatch):
    def endless(path):
        start = 0
        while True:
            yield path, start, start + 1
            start += 1

    monkeypatch.setattr(read, "file_ranges", endless)
    dealer = phase_tasks.RangeDealer(["endless.warc.gz"], {})
    assert dealer.answer(0, phase_tasks.NEXT_RANGE) == ("endless.warc.gz", 0, 1)
    dealer.close()  # the queue is full: the thread waits for room until it is told to stop
    assert not dealer._thread.is_alive()


@pytest.mark.parametrize(
    "flags, stages, reader, tasks",
    [
        ([], "heuristics,dedup", None, 2),
        ([], "heuristics", None, 2),  # a first phase that is the last: its tables in parts
        (["--direct_running_mode=in_memory"], "heuristics,dedup", None, 0),  # not multi_processing
        ([], "heuristics,images,recycle", None, 2),  # recycling in a later phase
        ([], "heuristics,dedup", "index", 0),  # batches of index pointers: not tasks (yet the runner's)
    ],
)
def test_where_the_first_phase_runs_as_tasks(flags, stages, reader, tasks):
    config = load_config(overrides=[f"run.stages={stages}"])
    first = plan_phases(config)[0]
    index = ReadWarcIndex(["pointers.parquet"], "", config.read) if reader else None
    assert phase_tasks.task_count(_local(*flags), first, config, index) == tasks


@pytest.mark.parametrize("override", ["read.reshuffle=false", "read.limit=5"])
def test_files_read_whole_are_not_cut_for_tasks(override):
    config = load_config(overrides=["run.stages=heuristics,dedup", override])
    assert phase_tasks.task_count(_local(), plan_phases(config)[0], config, None) == 0


@pytest.fixture(scope="module")
def direct_heuristics(tmp_path_factory):
    out = tmp_path_factory.mktemp("direct") / "out"
    assert main(["run", str(DEMO), "-o", str(out), "--stages", "heuristics", "--runner-preset", "direct", "--quiet"]) == 0
    return outcome(out)


def test_a_local_run_reads_its_first_phase_in_tasks_and_gives_the_direct_runs_output(direct_heuristics, tmp_path, monkeypatch):
    out = tmp_path / "out"
    dealers = []

    class Watching(phase_tasks.RangeDealer):
        """Notes a task that asks for a range before the one it was handed last is staged."""

        def __init__(self, paths, done):
            super().__init__(paths, done)
            self.last: dict[int, tuple] = {}
            self.unfinished: list[tuple] = []
            dealers.append(self)

        def answer(self, task, request):
            previous = self.last.get(task)
            if previous is not None:
                marked = {rid for phase in out.glob(".staging/*/0-read")
                          for rid in staging_files.finished_ranges(FileSystems, str(phase))}
                if range_id(*previous) not in marked:
                    self.unfinished.append(previous)
            self.last[task] = chunk = super().answer(task, request)
            return chunk

    monkeypatch.setattr(phase_tasks, "RangeDealer", Watching)
    assert main(["run", str(DEMO), "-o", str(out), "--stages", "heuristics", *LOCAL]) == 0
    got = outcome(out)
    assert_same_run(got, direct_heuristics)
    (dealer,) = dealers
    chunks = [chunk for _, chunk in dealer.handed]
    assert sorted(chunks) == list(read.file_ranges(str(DEMO))) and len(chunks) == 4
    assert dealer.unfinished == []  # each range staged, its marker written, before the next was asked for
    (phase,) = got[2]["phases"]
    assert (phase["workers"], phase["ranges"], phase["pid"]) == (2, {"read": 4, "resumed": 0}, None)
    assert len(set(phase["tasks"])) == 2 and os.getpid() not in phase["tasks"]  # two processes, not this one


@pytest.mark.slow
def test_a_local_run_killed_inside_its_first_phase_resumes_from_the_ranges_its_tasks_finished(split_input, tmp_path):  # noqa: F811
    inputs = str(split_input / "part*.warc.gz")
    whole = tmp_path / "whole"
    assert main(["run", inputs, "-o", str(whole), "--runner-preset", "direct", "--quiet"]) == 0
    want = outcome(whole)

    output = tmp_path / "out"
    proc = subprocess.Popen(_cli(inputs, "-o", output), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_for(lambda: len(finished_ranges(output)) >= 1, 300, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and its tasks
    proc.wait()
    finished = len(finished_ranges(output))
    assert 0 < finished < RANGE_FILES and finished_phases(output) == []
    assert main(["run", inputs, "-o", str(output), *LOCAL]) == 0
    got = outcome(output)
    assert got[2]["phases"][0]["ranges"] == {"read": RANGE_FILES - finished, "resumed": finished}
    assert_same_run(got, want)


@pytest.mark.slow
def test_ctrl_c_ends_a_local_run_with_one_line_and_keeps_the_finished_ranges(split_input, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    ctrl_c_keeps_the_finished_ranges(_cli(split_input / "part*.warc.gz", "-o", output), output)
