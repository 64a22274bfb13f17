"""mmcurate's pipelines on Beam's DirectRunner never reach the Prism runner (which
downloads its binary at run time): which runners ``runner_for`` replaces, that its
runner hands Beam's FnApiRunner the options Beam's own fallback would, and whole
``mmcurate run``s on the direct and local presets with Prism made to fail."""

from __future__ import annotations

import logging
import sys
import types

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner, SwitchingDirectRunner
from apache_beam.runners.portability.fn_api_runner import fn_runner
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import environments

from mmcurate.pipeline.cli import main
from mmcurate.runners.direct import FnApiDirectRunner, runner_for

DIRECT_PATHS = (
    "apache_beam.runners.direct.direct_runner.DirectRunner",
    "apache_beam.runners.direct.direct_runner.SwitchingDirectRunner",
    "apache_beam.runners.direct.DirectRunner",
    "apache_beam.runners.DirectRunner",
)


class _OwnDirectRunner(SwitchingDirectRunner):
    """Someone's own runner built on the DirectRunner."""


@pytest.fixture
def fn_api_runs(monkeypatch):
    """(runner, options) of every pipeline Beam's FnApiRunner runs in this process,
    after it ran it (so the runner shows what it made of the options)."""
    runs = []
    real = fn_runner.FnApiRunner.run_pipeline

    def run_pipeline(self, pipeline, options):
        result = real(self, pipeline, options)
        runs.append((self, options))
        return result

    monkeypatch.setattr(fn_runner.FnApiRunner, "run_pipeline", run_pipeline)
    return runs


@pytest.mark.parametrize(
    "runner", [None, "DirectRunner", "direct", "directrunner", "SwitchingDirectRunner", *DIRECT_PATHS]
)
def test_beams_direct_runner_by_any_name_is_replaced(runner):
    options = PipelineOptions([] if runner is None else [f"--runner={runner}"])
    assert type(runner_for(options)) is FnApiDirectRunner


def test_an_instance_of_beams_direct_runner_is_replaced():
    options = PipelineOptions([])
    options.view_as(StandardOptions).runner = SwitchingDirectRunner()
    assert type(runner_for(options)) is FnApiDirectRunner


@pytest.mark.parametrize(
    "runner",
    [
        "PortableRunner",
        "FlinkRunner",
        "BundleBasedDirectRunner",
        "FnApiRunner",
        "PrismRunner",
        "mmcurate.runners.dask_runner.DaskRunner",
        "elsewhere.DirectRunner",  # someone else's class of that name
        "nowhere.at.all.DirectRunner",  # Beam's create_runner reports it
    ],
)
def test_other_runners_are_left_to_beam(runner, monkeypatch):
    elsewhere = types.ModuleType("elsewhere")
    elsewhere.DirectRunner = _OwnDirectRunner
    monkeypatch.setitem(sys.modules, "elsewhere", elsewhere)
    assert runner_for(PipelineOptions([f"--runner={runner}"])) is None


@pytest.mark.parametrize("instance", [_OwnDirectRunner(), BundleBasedDirectRunner()])
def test_instances_of_other_runners_are_left_to_run(instance):
    options = PipelineOptions([])
    options.view_as(StandardOptions).runner = instance
    assert runner_for(options) is None


def _small_pipeline(runner=None) -> beam.Pipeline:
    """A shuffle and a count: a pipeline Beam's DirectRunner offers to Prism."""
    options = PipelineOptions(["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1"])
    p = beam.Pipeline(runner=runner or runner_for(options), options=options)
    counted = p | beam.Create(["a", "b", "a"]) | beam.combiners.Count.PerElement()
    assert_that(counted, equal_to([("a", 2), ("b", 1)]))
    return p


def test_beams_own_direct_runner_offers_the_pipeline_to_prism(prism_calls):
    # What the next test guards against, and proof that prism_calls sees the offer:
    # when this fails, Beam no longer hands DirectRunner pipelines to Prism.
    with _small_pipeline(SwitchingDirectRunner()):
        pass
    assert len(prism_calls) == 1


def test_the_runner_never_offers_a_pipeline_to_prism(prism_calls, fn_api_runs):
    with _small_pipeline():
        pass
    assert prism_calls == []
    assert len(fn_api_runs) == 1


def _fn_api_set_up(runner, monkeypatch) -> tuple[fn_runner.FnApiRunner, PipelineOptions]:
    """The FnApiRunner ``runner`` builds for a multi-process pipeline, and the options
    it is given, caught before it starts a worker."""
    caught = []

    class Caught(Exception):
        pass

    def run_pipeline(self, pipeline, options):
        caught.append((self, options))
        raise Caught

    monkeypatch.setattr(fn_runner.FnApiRunner, "run_pipeline", run_pipeline)
    options = PipelineOptions(
        [
            "--runner=DirectRunner",
            "--direct_running_mode=multi_processing",
            "--direct_num_workers=2",
            "--default_sdk_harness_log_level=WARNING",
            "--sdk_harness_log_level_overrides={\"apache_beam.io\": \"ERROR\"}",
        ]
    )
    p = beam.Pipeline(runner=runner(options), options=options)
    _ = p | beam.Create([1, 2]) | beam.Map(lambda x: x + 1)
    with pytest.raises(Caught):
        p.run()
    [(fn_api, given)] = caught
    return fn_api, given


def test_the_fn_api_runner_gets_the_options_beams_own_fallback_gives_it(prism_calls, monkeypatch):
    ours, ours_options = _fn_api_set_up(runner_for, monkeypatch)
    beams, beams_options = _fn_api_set_up(lambda options: SwitchingDirectRunner(), monkeypatch)
    assert len(prism_calls) == 1  # Beam's own runner only, before it fell back
    # What FnApiRunner.run_pipeline reads its running mode and worker count from.
    direct = ours_options.view_as(DirectOptions)
    assert (direct.direct_running_mode, direct.direct_num_workers) == ("multi_processing", 2)
    assert ours_options.get_all_options() == beams_options.get_all_options()
    # The options the workers are provisioned with, their log levels among them.
    provided = ours._provision_info.provision_info.pipeline_options
    assert provided == beams._provision_info.provision_info.pipeline_options
    assert provided["beam:option:direct_running_mode:v1"] == "multi_processing"
    assert int(provided["beam:option:direct_num_workers:v1"]) == 2
    assert provided["beam:option:default_sdk_harness_log_level:v1"] == "WARNING"


def _outcome(out):
    """(kept URLs, (url, stage, reason) of each decision row) of a finished run."""
    kept = sorted(pq.read_table(out / "documents", columns=["url"]).column("url").to_pylist())
    decisions = sorted(
        (r["url"], r["stage"], r["reason"]) for r in pq.read_table(out / "decisions", columns=["url", "stage", "reason"]).to_pylist()
    )
    return kept, decisions


# small_warc (tests/small_corpus.py) through heuristics and dedup: two phases.
STAGES = ["--stages", "heuristics,dedup"]
KEPT = ["https://blog.example.com/orchard", "https://news.example.org/harbour"]
DECISIONS = [
    ("https://mirror.example.net/harbour", "dedup", "dedup.exact_text"),
    ("https://news.example.org/gone", "read", "http.status_not_ok"),
    ("https://news.example.org/short", "heuristics", "content.too_few_words"),
]


def test_a_direct_run_never_reaches_prism(small_warc, tmp_path, prism_calls, fn_api_runs, caplog):
    # Every phase runs in this process, on Beam's FnApiRunner; Beam logs each offer to Prism at INFO.
    caplog.set_level(logging.INFO, logger="apache_beam.runners")
    out = tmp_path / "out"
    assert main(["run", str(small_warc), "-o", str(out), *STAGES, "--runner-preset", "direct", "--quiet"]) == 0
    assert _outcome(out) == (KEPT, DECISIONS)
    assert prism_calls == []
    assert not [r.getMessage() for r in caplog.records if "prism" in r.getMessage().lower()]
    # Both phases in memory on one worker, as the preset says.
    assert len(fn_api_runs) == 2
    for runner, options in fn_api_runs:
        assert options.view_as(DirectOptions).direct_running_mode == "in_memory"
        assert runner._num_workers == 1
        assert isinstance(runner._default_environment, environments.EmbeddedPythonEnvironment)

def test_a_local_run_never_reaches_prism(small_warc, tmp_path, prism_calls, fn_api_runs, caplog):
    caplog.set_level(logging.INFO, logger="apache_beam.runners")
    out = tmp_path / "out"
    local = ["--runner-preset", "local", "--runner-opt", "workers=2", "--quiet"]
    assert main(["run", str(small_warc), "-o", str(out), *STAGES, *local]) == 0
    assert _outcome(out) == (KEPT, DECISIONS)
    assert prism_calls == []
    assert not [r.getMessage() for r in caplog.records if "prism" in r.getMessage().lower()]
    # Both phases on Beam's FnApiRunner with two worker processes, as the preset says.
    assert len(fn_api_runs) == 2
    for runner, options in fn_api_runs:
        assert options.view_as(DirectOptions).direct_running_mode == "multi_processing"
        assert runner._num_workers == 2
        assert not isinstance(runner._default_environment, environments.EmbeddedPythonEnvironment)
