"""The first phase of a run of several in a child process of its own
(pipeline/phase_process.py): where it applies, and that the child's result, errors,
logging, environment, Ctrl-C and death behave as if it ran in the launcher."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from mmcurate.pipeline import phase_process
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.phases import RunError
from mmcurate.pipeline.run import run_curation
from mmcurate.runners.presets import preset_args

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

import phase_children  # noqa: E402
from shared_runs import SMALL_STAGES  # noqa: E402


def test_a_run_of_several_phases_runs_its_first_in_another_process(demo_run):
    first, second = demo_run.manifest["phases"]
    assert (first["phase"], second["phase"]) == ("0-read", "1-dedup")
    assert isinstance(first["pid"], int) and isinstance(second["pid"], int)
    assert first["pid"] != second["pid"]


SCRIPT = """
import json, os, sys
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.run import run_curation
from mmcurate.runners.presets import preset_args

with open(sys.argv[1], "a") as log:  # the script's top level, with no __main__ guard
    log.write("top level ran\\n")
manifest = run_curation([sys.argv[2]], sys.argv[3], load_config(overrides=["run.stages=heuristics,dedup"]), preset_args("direct"))
print(json.dumps([os.getpid(), [phase["pid"] for phase in manifest["phases"]]]))
"""


def test_a_script_without_a_main_guard_runs_once_with_its_first_phase_apart(small_warc, tmp_path):
    script, log = tmp_path / "curate.py", tmp_path / "top-level.log"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(log), str(small_warc), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    launcher, (first, second) = json.loads(done.stdout.strip().splitlines()[-1])
    assert second == launcher and first != launcher  # the first phase in a child, the second here
    assert log.read_text() == "top level ran\n"  # the child did not run the script again


class DefinedInMain:
    pass


def test_a_call_that_names_the_launching_script_is_not_sent_to_a_child(monkeypatch):
    assert phase_process.portable(phase_process.payload(phase_children.logs_and_returns, {"a": 1}))
    monkeypatch.setattr(DefinedInMain, "__module__", "__main__")
    monkeypatch.setattr(sys.modules["__main__"], "DefinedInMain", DefinedInMain, raising=False)
    assert not phase_process.portable(phase_process.payload(phase_children.logs_and_returns, DefinedInMain()))


def _forbid_children(monkeypatch) -> None:
    def forbidden(*args, **kwargs):
        raise AssertionError("a process was started for a phase")

    monkeypatch.setattr(phase_process, "call_pickled", forbidden)  # call_in_child goes through it too


def test_a_run_of_one_phase_starts_no_process(small_warc, tmp_path, monkeypatch):
    _forbid_children(monkeypatch)
    config = load_config(overrides=[f"run.stages={SMALL_STAGES}"])
    manifest = run_curation([str(small_warc)], str(tmp_path / "out"), config, preset_args("direct"))
    assert [(p["phase"], p["pid"]) for p in manifest["phases"]] == [("0-read", os.getpid())]


def test_one_process_runs_every_phase_here(small_warc, tmp_path, monkeypatch):
    _forbid_children(monkeypatch)
    out = tmp_path / "out"
    args = ["run", str(small_warc), "-o", str(out), "--stages", "heuristics,dedup", "--runner-preset", "direct"]
    assert main([*args, "--quiet", "--one-process"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(p["phase"], p["pid"]) for p in manifest["phases"]] == [("0-read", os.getpid()), ("1-dedup", os.getpid())]


@pytest.mark.parametrize(
    "flags, here",
    [
        (preset_args("direct"), True),
        ([], False),  # no runner named: run_curation names DirectRunner before asking (below)
        (["--runner=direct"], True),
        (["--runner=DirectRunner", "--direct_running_mode=multi_threading"], True),
        (preset_args("local", {"workers": "2"}), False),
        (preset_args("portable", {"endpoint": "localhost:8099"}), False),
        (preset_args("dask", {"address": "tcp://localhost:8786"}), False),
    ],
)
def test_only_runners_that_run_pipelines_in_the_calling_process_get_a_child(flags, here):
    assert phase_process.runs_in_this_process(PipelineOptions(flags)) is here


def test_the_childs_result_logging_and_environment_come_back(caplog, monkeypatch):
    monkeypatch.setenv("MMCURATE_TEST_ENV", "inherited")  # as the progress line's side channel is
    with caplog.at_level(logging.INFO):
        value, pid, env = phase_process.call_in_child(phase_children.logs_and_returns, {("ns", "name"): 3})
    assert value == {("ns", "name"): 3} and pid != os.getpid() and env == "inherited"
    relayed = [(r.name, r.levelname, r.getMessage(), r.process) for r in caplog.records if r.name == phase_children.log.name]
    assert relayed == [
        (phase_children.log.name, "INFO", "child says {('ns', 'name'): 3}", pid),
        (phase_children.log.name, "WARNING", "child warns", pid),
    ]


def test_an_error_in_the_child_is_raised_here_with_its_class_and_message():
    with pytest.raises(RunError, match="^phase 0-read ended in state FAILED; staging kept$") as caught:
        phase_process.call_in_child(phase_children.fails, "phase 0-read ended in state FAILED; staging kept")
    cause = caught.value.__cause__
    assert isinstance(cause, phase_process.ChildTraceback) and "in fails" in cause.text
    with pytest.raises(RuntimeError, match=r"^phase_children\.NeedsTwo: a/b$"):
        phase_process.call_in_child(phase_children.fails_unpicklably)


def test_a_child_that_dies_is_reported():
    with pytest.raises(phase_process.ChildDied, match="exited with 3") as caught:
        phase_process.call_in_child(phase_children.dies)
    assert caught.value.exitcode == 3


@pytest.fixture
def launcher(tmp_path):
    """A process that runs ``phase_children.waits`` in a child (its pid in the marker
    file); killed with its group, should the test leave it running."""
    marker = tmp_path / "child.pid"
    code = f"import sys; sys.path.insert(0, {str(TESTS)!r}); import phase_children; phase_children.launch({str(marker)!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        yield proc, marker
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _child_pid(marker: Path, launcher: subprocess.Popen) -> int:
    deadline = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        assert launcher.poll() is None and time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    return int(marker.read_text())


def _gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_child_exits_when_its_launcher_is_killed(launcher):
    launcher, marker = launcher
    child = _child_pid(marker, launcher)
    os.kill(launcher.pid, signal.SIGKILL)  # the launcher alone, not its process group
    launcher.wait()
    assert _gone(child, 10), "the child outlived its launcher"


def test_ctrl_c_on_the_launcher_interrupts_the_child_and_waits_for_it(launcher):
    launcher, marker = launcher
    child = _child_pid(marker, launcher)
    os.kill(launcher.pid, signal.SIGINT)  # the launcher alone: it passes the interrupt on
    assert launcher.wait(timeout=60) == 0
    assert Path(f"{marker}.interrupted").read_text() == "yes"  # the child's KeyboardInterrupt
    assert Path(f"{marker}.launcher").read_text() == "interrupted"  # then the launcher's, the child gone
    assert _gone(child, 0.1)


def test_children_ask_the_launcher_and_each_reply_goes_to_the_child_that_asked():
    items = list(range(40))
    answered: dict[int, list] = {0: [], 1: []}
    requests: dict[int, set] = {0: set(), 1: set()}

    def answer(child: int, request):
        requests[child].add(request)
        item = items.pop(0) if items else None
        if item is not None:
            answered[child].append(item)
        return item

    calls = [phase_process.payload(phase_children.takes_until_none, tag) for tag in ("first", "second")]
    got = phase_process.call_many(calls, answer)
    assert got == [answered[0], answered[1]]  # results in call order, each the replies its child asked for
    assert sorted(got[0] + got[1]) == list(range(40))
    assert requests == {0: {"first"}, 1: {"second"}}


def test_when_one_child_fails_the_others_are_stopped_and_its_error_is_raised(tmp_path):
    marker = tmp_path / "waiting.pid"

    def answer(child: int, request):
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text()):  # the other child is waiting by now
            assert time.monotonic() < deadline, "the waiting child never started"
            time.sleep(0.05)
        return "an item"

    calls = [phase_process.payload(phase_children.waits, str(marker)),
             phase_process.payload(phase_children.takes_one_then_fails, "tag")]
    with pytest.raises(RunError, match="^failed after taking 'an item'$"):
        phase_process.call_many(calls, answer)
    assert Path(f"{marker}.interrupted").read_text() == "yes"  # stopped as by Ctrl-C
    assert _gone(int(marker.read_text()), 0.1)


def test_asking_is_for_children_of_call_many():
    with pytest.raises(RuntimeError, match="not a child of call_many"):
        phase_process.ask("anything")


def test_a_child_that_dies_among_several_is_named_and_the_others_are_stopped(tmp_path):
    marker = tmp_path / "waiting.pid"
    # The second child dies once the first has started, so there is a running child to stop.
    calls = [phase_process.payload(phase_children.waits, str(marker)),
             phase_process.payload(phase_children.dies, str(marker))]
    with pytest.raises(phase_process.ChildDied, match="^its process exited with 3 before it finished$") as caught:
        phase_process.call_many(calls)
    assert (caught.value.child, caught.value.how) == (1, "exited with 3")
    assert Path(f"{marker}.interrupted").read_text() == "yes"  # stopped as by Ctrl-C, not left running
    assert _gone(int(marker.read_text()), 0.1)


def test_a_child_waiting_for_its_answer_is_stopped_when_another_fails():
    def answer(child: int, request):
        if child == 0:
            time.sleep(0.01)  # child 0 keeps asking: it is mostly waiting for a reply
            return "more"
        return "the one"

    calls = [phase_process.payload(phase_children.takes_until_none, "endless"),
             phase_process.payload(phase_children.takes_one_then_fails, "tag")]
    started = time.monotonic()
    with pytest.raises(RunError, match="^failed after taking 'the one'$"):
        phase_process.call_many(calls, answer)
    # Stopped by its interrupt, well before INTERRUPT_GRACE_SECONDS would have it killed.
    assert time.monotonic() - started < phase_process.INTERRUPT_GRACE_SECONDS / 2
