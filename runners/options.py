"""Beam pipeline options that mmcurate adds to Beam's own.

Importing this module registers them with Beam's parser, so the CLI accepts them
like any Beam flag.
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions


class ScoringOptions(PipelineOptions):
    """The Beam flag the dataflow runner preset sets for GPU scoring."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--scoring_accelerator",
            default=None,
            help="accelerator resource hint for the scoring stage's model transforms only, "
            "e.g. type:nvidia-l4;count:1;install-nvidia-driver (overrides scoring.accelerator)",
        )
