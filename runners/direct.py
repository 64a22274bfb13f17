"""Beam's DirectRunner without its hand-off to the Prism runner.

Beam 2.77's ``DirectRunner`` (``SwitchingDirectRunner.run_pipeline``) offers every
pipeline it can to the ``PrismRunner`` first, which downloads Prism's binary from
GitHub at run time and runs the pipeline in that Go process and its workers; only
when that fails (no network: the download fails, logged at INFO) does it run the
pipeline on its own ``FnApiRunner``. mmcurate downloads nothing at run time, and
its runs rely on what the DirectRunner's own path does: in ``in_memory`` mode the
pipeline runs inside the calling process (``pipeline.phase_process`` runs a first
phase in a child of its own for that reason, ``pipeline.phase_placement`` runs a
small later phase in the launcher, and ``pipeline.phases`` reads the counters from
``result.metrics()``), in ``multi_processing`` mode on ``direct_num_workers``
Python worker processes.

``runner_for(options)`` is what each pipeline mmcurate builds passes to
``beam.Pipeline(runner=..., options=options)``: for Beam's DirectRunner, however
named, a ``DirectRunnerWithoutPrism``; for any other runner None, so Beam creates
the one the options name, as before.
"""

from __future__ import annotations

import importlib
from typing import Optional

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner
from apache_beam.runners.runner import PipelineRunner


class DirectRunnerWithoutPrism(SwitchingDirectRunner):
    """Beam's DirectRunner that never tries the PrismRunner: it runs a pipeline on
    the ``FnApiRunner`` it builds itself (the ``BundleBasedDirectRunner`` for the
    few pipelines the FnApiRunner cannot run), with every ``DirectOptions`` value
    and the pipeline options its workers are given, exactly as the DirectRunner
    does after Prism has failed.

    It relies on a private behaviour of Beam 2.77: ``is_interactive()`` (what Beam's
    InteractiveRunner calls on the runner it wraps) sets ``_is_interactive``, and
    ``SwitchingDirectRunner.run_pipeline`` skips Prism for an interactive runner,
    which changes nothing else there. Beam's whole choice of runner and the
    FnApiRunner's set-up stay Beam's own, so nothing of them is copied here to fall
    out of step on an upgrade. tests/runners/test_direct.py fails if an upgrade
    makes this runner offer a pipeline to Prism again.
    """

    def __init__(self) -> None:
        super().__init__()
        self.is_interactive()


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


def runner_for(options: PipelineOptions) -> Optional[PipelineRunner]:
    """The ``runner`` argument of ``beam.Pipeline`` for a pipeline run with
    ``options``: a new ``DirectRunnerWithoutPrism`` when the options name Beam's
    DirectRunner (by name, a dotted path, an instance of it, or no runner at all,
    Beam's default), else None (Beam creates the runner the options name). An
    instance of a subclass of the DirectRunner is someone's own runner and is left
    to run the pipeline."""
    runner = options.view_as(StandardOptions).runner
    if runner is None:
        runner = StandardOptions.DEFAULT_RUNNER
    if isinstance(runner, str):
        direct = _names_direct_runner(runner)
    else:
        direct = type(runner) is SwitchingDirectRunner
    return DirectRunnerWithoutPrism() if direct else None
