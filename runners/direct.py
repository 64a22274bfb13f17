"""Beam's DirectRunner as mmcurate runs it: on its FnApiRunner, never on Prism.

Beam 2.77's ``DirectRunner`` offers every pipeline it can to the ``PrismRunner``
first, which downloads Prism's binary from GitHub at run time; only when that fails
(no network) does it run the pipeline on its own ``FnApiRunner``. mmcurate downloads
nothing at run time, so where the options name the DirectRunner, ``runner_for``
gives the runner the DirectRunner itself falls back to: Beam's public
``FnApiRunner``, given the pipeline options its workers need, as the DirectRunner
builds it. Its ``DirectOptions`` are its own: ``direct_running_mode`` (``in_memory``,
``multi_threading``, ``multi_processing``) and ``direct_num_workers``.

``runner_for(options)`` is what each pipeline mmcurate builds passes to
``beam.Pipeline(runner=..., options=options)``: for Beam's DirectRunner, however
named, an ``FnApiDirectRunner``; for any other runner None, so Beam creates the one the
options name.
"""

from __future__ import annotations

import importlib
from typing import Optional

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.portability.api import beam_provision_api_pb2
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
from apache_beam.runners.portability.portable_runner import JobServiceHandle
from apache_beam.runners.runner import PipelineRunner


def _names_direct_runner(name: str) -> bool:
    """Whether Beam's ``create_runner`` makes a ``SwitchingDirectRunner`` of
    ``name``: a known name (any case, with or without "Runner") or a dotted path."""
    known = {path.rsplit(".", 1)[1].lower(): path for path in StandardOptions.ALL_KNOWN_RUNNERS}
    path = known.get(name.lower(), known.get(name.lower() + "runner", name))
    if "." not in path or path.rsplit(".", 1)[1].lower() not in ("directrunner", "switchingdirectrunner"):
        return False
    module, attribute = path.rsplit(".", 1)
    try:
        # a dotted path to someone else's class of that name is not Beam's runner
        return getattr(importlib.import_module(module), attribute, None) is SwitchingDirectRunner
    except ImportError:
        return False  # Beam's own create_runner says what is wrong, a line later


def fn_api_runner(options: PipelineOptions) -> FnApiRunner:
    """Beam's ``FnApiRunner``, its workers given ``options`` (as the DirectRunner does)."""
    given = options.get_all_options()
    if not isinstance(given.get("runner"), (str, type(None))):
        given["runner"] = type(given["runner"]).__name__  # an instance is no option a worker can read
    encoded = JobServiceHandle.encode_pipeline_options(given)
    return FnApiRunner(provision_info=ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)))


class FnApiDirectRunner(PipelineRunner):
    """Beam's DirectRunner's own path without Prism: each pipeline on a new
    ``FnApiRunner`` built from the options the pipeline runs with."""

    def run_pipeline(self, pipeline, options):
        return fn_api_runner(options).run_pipeline(pipeline, options)

    def is_fnapi_compatible(self) -> bool:
        # As Beam's DirectRunner answers: its pipelines get no beam_fn_api experiment.
        return False


def runner_for(options: PipelineOptions) -> Optional[PipelineRunner]:
    """The ``runner`` argument of ``beam.Pipeline`` for a pipeline run with
    ``options``: an ``FnApiDirectRunner`` when the options name Beam's DirectRunner (by
    name, a dotted path, an instance of it, or no runner at all, Beam's default), else
    None (Beam creates the runner the options name). An instance of a subclass of the
    DirectRunner is someone's own runner and is left to run the pipeline."""
    runner = options.view_as(StandardOptions).runner
    if runner is None:
        runner = StandardOptions.DEFAULT_RUNNER
    if isinstance(runner, str):
        direct = _names_direct_runner(runner)
    else:
        direct = type(runner) is SwitchingDirectRunner
    return FnApiDirectRunner() if direct else None
