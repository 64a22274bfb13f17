"""Where a later phase of a ``local`` run runs: the cost model's choice, and the
options it runs with."""

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from mmcurate.pipeline import phase_placement as placement
from mmcurate.runners.presets import preset_args
from mmcurate.stages.scoring.options import ScoringOptions


def local(workers: int = 2, *extra: str) -> PipelineOptions:
    return PipelineOptions(preset_args("local", {"workers": str(workers)}) + list(extra))


def test_worker_processes_of_each_runner():
    assert placement.worker_processes(local(2)) == 2
    assert placement.worker_processes(local(3)) == 3
    assert placement.worker_processes(PipelineOptions(preset_args("direct"))) == 0
    assert placement.worker_processes(PipelineOptions(["--runner=DirectRunner"])) == 0
    dotted = ["--runner=apache_beam.runners.direct.direct_runner.DirectRunner", "--direct_running_mode=multi_processing"]
    assert placement.worker_processes(PipelineOptions([*dotted, "--direct_num_workers=2"])) == 2
    from apache_beam.runners.direct.direct_runner import DirectRunner

    instance = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=3"])
    instance.view_as(StandardOptions).runner = DirectRunner()
    assert placement.worker_processes(instance) == 3
    assert placement.worker_processes(PipelineOptions(preset_args("portable", {"endpoint": "localhost:8099"}))) == 0


def test_a_dedup_phase_runs_here_below_the_break_even_and_on_workers_above():
    # docs * 0.0054 s * (1 - 1.26 / workers) < 2.6 s
    assert placement.runs_here(("dedup",), 1301, 2)
    assert not placement.runs_here(("dedup",), 1302, 2)
    assert placement.runs_here(("dedup",), 702, 4)
    assert not placement.runs_here(("dedup",), 703, 4)
    # One worker process never does the work faster than this process.
    assert placement.runs_here(("dedup",), 10**9, 1)


def test_unmeasured_stages_missing_counts_and_in_process_runners_keep_the_runner():
    assert not placement.runs_here(("dedup", "quality"), 10, 2)
    assert not placement.runs_here(("images",), 10, 2)
    assert not placement.runs_here(("dedup",), None, 2)
    assert not placement.runs_here(("dedup",), 10, 0)


def test_a_small_later_phase_gets_in_process_options_with_every_other_value_kept():
    given = local(2, "--scoring_accelerator=type:nvidia-l4", "--job_name=x", "--an_option_read_later=kept")
    here = placement.phase_options(given, 1, ("dedup",), 100)
    assert here is not given
    direct = here.view_as(DirectOptions)
    assert (direct.direct_running_mode, direct.direct_num_workers) == ("in_memory", 1)
    assert here.view_as(StandardOptions).runner == "DirectRunner"
    assert here.view_as(ScoringOptions).scoring_accelerator == "type:nvidia-l4"
    assert here.get_all_options()["job_name"] == "x"
    assert here.get_all_options(retain_unknown_options=True)["an_option_read_later"] == "kept"
    assert placement.worker_processes(here) == 0
    # The options it was given are untouched.
    assert given.view_as(DirectOptions).direct_running_mode == "multi_processing"


def test_the_first_phase_and_large_later_phases_run_as_given():
    given = local(2)
    assert placement.phase_options(given, 0, ("heuristics",), None) is given
    assert placement.phase_options(given, 0, (), 10) is given
    assert placement.phase_options(given, 1, ("dedup",), 100_000) is given
    direct = PipelineOptions(preset_args("direct"))
    assert placement.phase_options(direct, 1, ("dedup",), 100) is direct
