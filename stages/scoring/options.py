"""The scoring stage's Beam pipeline option, ``--scoring_accelerator``.

Defining the class registers the flag with Beam's parser (Beam collects every
``PipelineOptions`` subclass), so the CLI accepts it like any Beam flag once this
module is imported. Light on purpose: no model code is imported with it.
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

