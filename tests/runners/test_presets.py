"""Runner presets: the Beam flags each one produces, and the errors that name a
missing or unknown option."""

import pytest

from mmcurate.pipeline.cli import main
from mmcurate.runners.presets import DASK_RUNNER, PROJECT_ROOT, PresetError, parse_runner_options, preset_args


def test_direct_and_local():
    assert preset_args("direct") == ["--runner=DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory"]
    local = preset_args("local", {"workers": "3"})
    assert "--direct_num_workers=3" in local and "--direct_running_mode=multi_processing" in local


def test_portable_defaults_to_loopback():
    assert preset_args("portable", {"endpoint": "localhost:8099"}) == [
        "--runner=PortableRunner",
        "--job_endpoint=localhost:8099",
        "--environment_type=LOOPBACK",
    ]


def test_flink_with_a_job_server_and_docker_workers():
    flags = preset_args(
        "flink",
        {"master": "flink-jm:8081", "parallelism": "16", "worker_image": "reg/mmcurate-worker:0.1", "job_endpoint": "js:8099"},
    )
    assert flags == [
        "--runner=FlinkRunner",
        "--flink_master=flink-jm:8081",
        "--parallelism=16",
        "--environment_type=DOCKER",
        "--environment_config=reg/mmcurate-worker:0.1",
        "--job_endpoint=js:8099",
    ]


def test_flink_docker_without_an_image_is_an_error():
    with pytest.raises(PresetError, match="worker_image"):
        preset_args("flink", {"master": "jm:8081"})


def test_flink_external_worker_pool_and_jar():
    flags = preset_args(
        "flink",
        {"master": "jm:8081", "environment": "external", "environment_config": "localhost:50000", "job_server_jar": "/opt/js.jar"},
    )
    assert "--environment_type=EXTERNAL" in flags and "--environment_config=localhost:50000" in flags
    assert "--flink_job_server_jar=/opt/js.jar" in flags


def test_dataflow_ships_this_repository_and_asks_for_gpus():
    flags = preset_args(
        "dataflow",
        {
            "project": "p",
            "region": "europe-west4",
            "temp_location": "gs://b/tmp/",
            "machine_type": "g2-standard-8",
            "gpu": "nvidia-l4",
        },
    )
    assert flags == [
        "--runner=DataflowRunner",
        "--project=p",
        "--region=europe-west4",
        "--temp_location=gs://b/tmp/",
        "--staging_location=gs://b/tmp/staging",
        "--machine_type=g2-standard-8",
        f"--setup_file={PROJECT_ROOT / 'pyproject.toml'}",
        "--scoring_accelerator=type:nvidia-l4;count:1;install-nvidia-driver",
    ]
    wheel = preset_args("dataflow", {"project": "p", "region": "r", "temp_location": "gs://b/t", "wheel": "dist/m.whl"})
    assert "--extra_package=dist/m.whl" in wheel and not any(f.startswith("--setup_file") for f in wheel)


def test_dask_uses_mmcurates_dask_runner():
    assert preset_args("dask", {"address": "tcp://127.0.0.1:8786", "partitions": "4"}) == [
        f"--runner={DASK_RUNNER}",
        "--dask_client_address=tcp://127.0.0.1:8786",
        "--dask_npartitions=4",
    ]


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("dataflow", {"project": "p"}, "region=... is required"),
        ("portable", {"endpoint": "x", "colour": "red"}, "unknown option 'colour'"),
        ("local", {"workers": "0"}, "workers='0': must be at least 1"),
        ("nosuch", {}, "unknown runner preset 'nosuch'"),
    ],
)
def test_bad_options_name_the_problem(name, options, message):
    with pytest.raises(PresetError, match=message):
        preset_args(name, options)


def test_parse_runner_options():
    assert parse_runner_options(["a=1", "b=x=y", "a=2"]) == {"a": "2", "b": "x=y"}
    with pytest.raises(PresetError, match="expected NAME=VALUE"):
        parse_runner_options(["novalue"])


def test_cli_reports_a_preset_error_before_running(tmp_path, capsys):
    warc = tmp_path / "x.warc"
    warc.write_bytes(b"")
    assert main(["run", str(warc), "-o", str(tmp_path / "o"), "--runner-preset", "dataflow", "--runner-opt", "project=p"]) == 2
    assert "region=... is required" in capsys.readouterr().err
    assert main(["run", str(warc), "-o", str(tmp_path / "o"), "--runner-opt", "workers=2"]) == 2
    assert "--runner-opt needs --runner-preset" in capsys.readouterr().err
