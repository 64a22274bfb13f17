"""Named sets of Beam flags, selected with ``mmcurate run --runner-preset NAME``.

A preset turns a few named parameters, given as ``--runner-opt NAME=VALUE``
(repeatable), into Beam command-line flags, and nothing else: no pipeline logic.
Flags given explicitly on the command line come after the preset's and so win.
An unknown parameter, or a missing required one, is an error naming it.

| preset | runner | parameters |
|---|---|---|
| ``direct`` | DirectRunner, one process | none |
| ``local`` | DirectRunner, a worker process per core | ``workers`` |
| ``portable`` | PortableRunner against a running job service | ``endpoint``, ``environment``, ``environment_config`` |
| ``flink`` | FlinkRunner | ``master``, ``parallelism``, ``max_parallelism``, ``environment``, ``environment_config``, ``worker_image``, ``job_endpoint``, ``job_server_jar``, ``flink_version``, ``uber_jar`` |
| ``dataflow`` | DataflowRunner | ``project``, ``region``, ``temp_location``, ``staging_location``, ``machine_type``, ``max_workers``, ``setup_file``, ``wheel``, ``worker_image``, ``gpu``, ``gpu_count`` |
| ``dask`` | Beam's DaskRunner (mmcurate's fixes, see ``runners.dask_runner``) | ``address``, ``partitions`` |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

# The repository root, whose pyproject.toml builds the worker package for Dataflow.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
DASK_RUNNER = "mmcurate.runners.dask_runner.DaskRunner"
ENVIRONMENTS = ("LOOPBACK", "DOCKER", "PROCESS", "EXTERNAL")


class PresetError(ValueError):
    """A preset parameter that is unknown, missing or invalid; the message names it."""


@dataclass(frozen=True)
class Param:
    name: str
    help: str
    default: Optional[str] = None
    required: bool = False


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    params: tuple[Param, ...]
    flags: Callable[[dict[str, Optional[str]]], list[str]]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _positive_int(name: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise PresetError(f"runner option {name}={value!r}: not an integer") from None
    if number < 1:
        raise PresetError(f"runner option {name}={value!r}: must be at least 1")
    return number


def _environment(name: str, value: str) -> str:
    upper = value.upper()
    if upper not in ENVIRONMENTS:
        raise PresetError(f"runner option {name}={value!r}: one of {', '.join(ENVIRONMENTS)}")
    return upper


def _environment_flags(p: dict[str, Optional[str]], preset: str) -> list[str]:
    env = _environment("environment", p["environment"] or "")
    flags = [f"--environment_type={env}"]
    config = p.get("environment_config")
    image = p.get("worker_image")
    if env == "DOCKER" and image:
        config = image
    if env in ("EXTERNAL", "PROCESS") and not config:
        raise PresetError(
            f"runner preset {preset}: environment={env} needs environment_config= "
            "(EXTERNAL: host:port of a worker pool; PROCESS: JSON with the worker boot command)"
        )
    if env == "DOCKER" and not config:
        raise PresetError(
            f"runner preset {preset}: environment=DOCKER needs worker_image= (an SDK container "
            "image with mmcurate installed; Beam's stock image lacks it), or pick another environment"
        )
    if config:
        flags.append(f"--environment_config={config}")
    return flags


# -- the presets ------------------------------------------------------------------


def _direct(p: dict[str, Optional[str]]) -> list[str]:
    return ["--runner=DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory"]


def _local(p: dict[str, Optional[str]]) -> list[str]:
    workers = _positive_int("workers", p["workers"]) if p["workers"] else _cores()
    return [
        "--runner=DirectRunner",
        f"--direct_num_workers={workers}",
        "--direct_running_mode=multi_processing",
        "--default_sdk_harness_log_level=WARNING",
    ]


def _portable(p: dict[str, Optional[str]]) -> list[str]:
    return ["--runner=PortableRunner", f"--job_endpoint={p['endpoint']}", *_environment_flags(p, "portable")]


def _flink(p: dict[str, Optional[str]]) -> list[str]:
    flags = ["--runner=FlinkRunner", f"--flink_master={p['master']}"]
    for key in ("parallelism", "max_parallelism"):
        if p[key]:
            flags.append(f"--{key}={_positive_int(key, p[key])}")
    flags += _environment_flags(p, "flink")
    if p["job_endpoint"] and p["job_server_jar"]:
        raise PresetError("runner preset flink: give job_endpoint= or job_server_jar=, not both")
    if p["job_endpoint"]:
        flags.append(f"--job_endpoint={p['job_endpoint']}")
    if p["job_server_jar"]:
        flags.append(f"--flink_job_server_jar={p['job_server_jar']}")
    if p["flink_version"]:
        flags.append(f"--flink_version={p['flink_version']}")
    if (p["uber_jar"] or "").lower() in ("1", "true", "yes"):
        flags.append("--flink_submit_uber_jar")
    return flags


def _dataflow(p: dict[str, Optional[str]]) -> list[str]:
    flags = [
        "--runner=DataflowRunner",
        f"--project={p['project']}",
        f"--region={p['region']}",
        f"--temp_location={p['temp_location']}",
        f"--staging_location={p['staging_location'] or p['temp_location'].rstrip('/') + '/staging'}",
    ]
    if p["machine_type"]:
        flags.append(f"--machine_type={p['machine_type']}")
    if p["max_workers"]:
        flags.append(f"--max_num_workers={_positive_int('max_workers', p['max_workers'])}")
    if p["wheel"] and p["setup_file"]:
        raise PresetError("runner preset dataflow: give setup_file= or wheel=, not both")
    if p["wheel"]:
        flags.append(f"--extra_package={p['wheel']}")
    else:
        flags.append(f"--setup_file={p['setup_file'] or PROJECT_ROOT / 'pyproject.toml'}")
    if p["worker_image"]:
        flags.append(f"--sdk_container_image={p['worker_image']}")
    if p["gpu"]:
        count = _positive_int("gpu_count", p["gpu_count"] or "1")
        # Beam's accelerator resource hint, in the form Dataflow documents for GPU
        # workers (https://cloud.google.com/dataflow/docs/gpu/use-gpus), scoped to
        # the scoring stage's model transforms (stages.scoring.options.ScoringOptions) rather
        # than the whole pipeline: only CLIP asks for the GPU.
        flags.append(f"--scoring_accelerator=type:{p['gpu']};count:{count};install-nvidia-driver")
    return flags


def _dask(p: dict[str, Optional[str]]) -> list[str]:
    flags = [f"--runner={DASK_RUNNER}", f"--dask_client_address={p['address']}"]
    if p["partitions"]:
        flags.append(f"--dask_npartitions={_positive_int('partitions', p['partitions'])}")
    return flags


_ENV_HELP = "LOOPBACK (workers in this process), DOCKER, PROCESS or EXTERNAL"

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("direct", "DirectRunner in one process: the simplest to debug", (), _direct),
        Preset(
            "local",
            "DirectRunner with a worker process per core (their logging at WARNING)",
            (Param("workers", "worker processes (default: the cores this process may use)"),),
            _local,
        ),
        Preset(
            "portable",
            "PortableRunner against a running Beam job service",
            (
                Param("endpoint", "host:port of the job service", required=True),
                Param("environment", _ENV_HELP, default="LOOPBACK"),
                Param("environment_config", "DOCKER: image; PROCESS: JSON boot command; EXTERNAL: worker pool host:port"),
            ),
            _portable,
        ),
        Preset(
            "flink",
            "FlinkRunner on a Flink cluster",
            (
                Param("master", "Flink REST address host:8081, or [local] / [auto]", required=True),
                Param("parallelism", "default parallelism of the job (default: the cluster's)"),
                Param("max_parallelism", "upper bound for rescaling (default: Flink's)"),
                Param("environment", _ENV_HELP, default="DOCKER"),
                Param("environment_config", "PROCESS: JSON boot command; EXTERNAL: worker pool host:port"),
                Param("worker_image", "DOCKER: SDK container image with mmcurate installed"),
                Param("job_endpoint", "host:port of a running Flink job server (otherwise Beam starts one)"),
                Param("job_server_jar", "local path of the Flink job server jar (no download)"),
                Param("flink_version", "the cluster's Flink version, e.g. 1.20"),
                Param("uber_jar", "true: submit an uber jar straight to the master, no job server"),
            ),
            _flink,
        ),
        Preset(
            "dataflow",
            "DataflowRunner on Google Cloud",
            (
                Param("project", "Google Cloud project", required=True),
                Param("region", "Dataflow region, e.g. europe-west4", required=True),
                Param("temp_location", "gs:// path for temporary files", required=True),
                Param("staging_location", "gs:// path for staged packages (default: temp_location/staging)"),
                Param("machine_type", "worker machine type, e.g. n2-standard-8 (g2-standard-8 for an L4 GPU)"),
                Param("max_workers", "upper bound for autoscaling"),
                Param("setup_file", "worker package from this path (default: this repository's pyproject.toml)"),
                Param("wheel", "worker package from a wheel built from this repository instead"),
                Param("worker_image", "custom SDK container image (the pinned stack preinstalled)"),
                Param("gpu", "accelerator type for the scoring stage's model transforms, e.g. nvidia-l4"),
                Param("gpu_count", "accelerators per worker", default="1"),
            ),
            _dataflow,
        ),
        Preset(
            "dask",
            "Beam's DaskRunner on a dask.distributed cluster",
            (
                Param("address", "scheduler address, e.g. tcp://10.0.0.5:8786", required=True),
                Param("partitions", "dask bag partitions for the inputs (default: Beam's guess)"),
            ),
            _dask,
        ),
    )
}


def parse_runner_options(assignments: Sequence[str]) -> dict[str, str]:
    """``["name=value", ...]`` -> ``{name: value}``; a later assignment wins."""
    options: dict[str, str] = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or not name.strip():
            raise PresetError(f"--runner-opt {assignment!r}: expected NAME=VALUE")
        options[name.strip()] = value.strip()
    return options


def preset_args(name: str, options: Mapping[str, str] | None = None) -> list[str]:
    """The Beam flags of preset ``name`` with ``options`` as its parameters."""
    try:
        preset = PRESETS[name]
    except KeyError:
        raise PresetError(f"unknown runner preset {name!r}; presets are {', '.join(sorted(PRESETS))}") from None
    options = dict(options or {})
    known = {p.name for p in preset.params}
    for key in options:
        if key not in known:
            accepted = ", ".join(sorted(known)) or "none"
            raise PresetError(f"runner preset {name}: unknown option {key!r} (its options: {accepted})")
    values: dict[str, Optional[str]] = {}
    for param in preset.params:
        value = options.get(param.name) or param.default
        if param.required and not value:
            raise PresetError(f"runner preset {name}: --runner-opt {param.name}=... is required ({param.help})")
        values[param.name] = value
    return preset.flags(values)


def describe() -> str:
    """Every preset and its options, for ``mmcurate run --help``."""
    lines = []
    for preset in PRESETS.values():
        lines.append(f"  {preset.name}: {preset.summary}")
        for param in preset.params:
            note = " (required)" if param.required else (f" (default {param.default})" if param.default else "")
            lines.append(f"      {param.name}: {param.help}{note}")
    return "\n".join(lines)
