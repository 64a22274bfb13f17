"""The ``mmcurate`` command line.

``mmcurate run`` parses its own flags and hands every other flag to Beam's
``PipelineOptions`` unchanged, so any Beam flag (``--runner``,
``--direct_num_workers``, ``--project``, ...) works as it does in Beam's examples.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from typing import Sequence

from mmcurate import __version__
from mmcurate.pipeline.config import (
    IMPLEMENTED_FILTER_STAGES,
    OPT_IN_STAGES,
    STAGE_NAMES,
    ConfigError,
    RunConfig,
    load_config,
)
from mmcurate.pipeline.command_start import (
    add_runner_flags,
    beam_option_parser,
    command_parser,
    configure_logging,
    start_command,
    with_runner_preset,
)
from mmcurate.runners.presets import PresetError
from mmcurate.runners.quiet_workers import QuietWorkerStartup, uses_worker_processes

log = logging.getLogger("mmcurate")

RUN_EPILOG = f"""\
stages (a contract: config sections, manifest keys, metric namespaces and the
`stage` column of the decisions table use these names):
  {', '.join(STAGE_NAMES)}
  read, extract and write always run; --stages picks the filtering stages
  (available in this version: {', '.join(IMPLEMENTED_FILTER_STAGES)}).

Beam flags: every flag not listed above goes to Beam's PipelineOptions, e.g.
  --runner DirectRunner (default) | PortableRunner | FlinkRunner | DataflowRunner
  --direct_num_workers 4 --direct_running_mode multi_processing
  --job_endpoint localhost:8099 --environment_type LOOPBACK
A flag that neither mmcurate nor Beam knows is an error.

outputs under --output DIR:
  documents/*.parquet   kept documents (OBELICS-style interleaved texts/images)
  decisions/*.parquet   one row per rejected or failed page (or image, pair
                        candidate): stage, kind, reason, value, threshold,
                        detail, signals, WARC provenance
  images/*.parquet      retrieved images (stage images): sha256 id, URLs, bytes,
                        size, pHash, status
  pairs/*.parquet       recycled image-text pairs (stage recycle)
  manifest.json         totals (pages = kept + rejected + errors), the funnel per
                        stage, WARC record counts, config and its sha256, versions
"""


def _run_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mmcurate run", "Curate WARC files into interleaved image-text documents, as Parquet shards.", RUN_EPILOG
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="WARC/ARC files (.warc, .warc.gz, .arc, .arc.gz) or globs, on any filesystem Beam knows "
        "(local paths, gs://, s3://, ...); quote globs so Beam expands them",
    )
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="output directory (replaced cleanly on rerun)")
    parser.add_argument("--config", "-c", metavar="FILE", help="config file, YAML or TOML, a section per stage "
                        "(default: none, the built-in defaults; `mmcurate config --defaults` prints them, "
                        "examples/ has ready ones)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one config value (repeatable), e.g. --set heuristics.min_words=100",
    )
    parser.add_argument(
        "--stages",
        metavar="NAMES",
        help=f"comma-separated filtering stages to run (default: run.stages of the config, "
        f"{','.join(RunConfig().stages)}; available: {','.join(IMPLEMENTED_FILTER_STAGES)}, of which "
        f"{','.join(OPT_IN_STAGES)} run only when named)",
    )
    parser.add_argument(
        "--index",
        metavar="FILE",
        help="read only the WARC records a CC-index style table points at (Parquet or CSV with columns "
        "warc_filename, warc_record_offset, warc_record_length), by range reads; replaces INPUT",
    )
    parser.add_argument(
        "--warc-prefix",
        default="",
        metavar="PREFIX",
        help="prefix for the index's relative warc_filename values, e.g. s3://commoncrawl/",
    )
    add_runner_flags(parser)
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="read only the first N pages (input files in path order), for sampling; same as --set read.limit=N",
    )
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="continue from the phases, and the input ranges of the first phase, that a killed or "
        "interrupted run of the same config on the same inputs finished (default); --no-resume starts over",
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print only the funnel table (no live progress on stderr)"
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="show Beam's own INFO logging")
    return parser


def cmd_run(argv: Sequence[str]) -> int:
    parser = _run_parser()
    started = start_command(argv, parser)
    if started is None:
        return 0
    args, beam_args = started
    overrides = list(args.overrides)
    if args.stages is not None:
        overrides.append(f"run.stages={args.stages}")
    if args.limit is not None:
        overrides.append(f"read.limit={args.limit}")
    try:
        config = load_config(args.config, overrides)
    except ConfigError as exc:
        print(f"mmcurate: {exc}", file=sys.stderr)
        return 2

    from mmcurate.pipeline.manifest import format_funnel
    from mmcurate.pipeline.publication import OutputBusy
    from mmcurate.pipeline.run import InputError, Interrupted, RunError, run_curation

    if args.index and args.inputs:
        parser.error("give INPUT files or --index, not both")
    if not args.index and not args.inputs:
        parser.error("the following arguments are required: INPUT (or --index)")
    from mmcurate.pipeline.preflight import PreflightError, check_run

    try:
        beam_args = with_runner_preset(args, beam_args)
        check_run(config, args.output, beam_args, beam_option_parser)
    except (PresetError, PreflightError) as exc:
        print(f"mmcurate: {exc}", file=sys.stderr)
        return 2
    # Worker processes (the local preset) print Beam's start-up notices once or twice
    # each; --verbose shows them.
    quiet = QuietWorkerStartup() if uses_worker_processes(beam_args) and not args.verbose else contextlib.nullcontext()
    try:
        with quiet:
            manifest = run_curation(
                args.inputs,
                args.output,
                config,
                beam_args,
                progress=not args.quiet,
                index=args.index,
                warc_prefix=args.warc_prefix,
                resume=args.resume,
            )
    except InputError as exc:
        print(f"mmcurate: {exc}", file=sys.stderr)
        return 2
    except OutputBusy as exc:
        print(f"mmcurate: {exc}", file=sys.stderr)
        return 1
    except Interrupted as exc:
        print(f"mmcurate: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # before the run started, or while publishing
        print("mmcurate: interrupted", file=sys.stderr)
        return 130
    except RunError as exc:
        print(f"mmcurate: {exc}", file=sys.stderr)
        return 1
    print(format_funnel(manifest))
    print(f"output: {manifest['output']} (manifest.json, documents/, decisions/, images/, pairs/)")
    return 0


def cmd_train(argv: Sequence[str]) -> int:
    from mmcurate.pipeline.train import cmd_train as train

    return train(argv)


def cmd_report(argv: Sequence[str]) -> int:
    from mmcurate.pipeline.report.command import cmd_report as report

    return report(argv)


def cmd_inspect(argv: Sequence[str]) -> int:
    from mmcurate.pipeline.inspect_cmd import cmd_inspect as inspect_output

    return inspect_output(argv)


def cmd_plan(argv: Sequence[str]) -> int:
    from mmcurate.pipeline.plan import cmd_plan as plan

    return plan(argv)


def cmd_export(argv: Sequence[str]) -> int:
    configure_logging(quiet=True, verbose=any(a in ("-v", "--verbose") for a in argv))
    from mmcurate.pipeline.export import cmd_export as export_shards

    return export_shards(argv)


def cmd_config(argv: Sequence[str]) -> int:
    from mmcurate.pipeline.config_doc import cmd_config as config_command

    return config_command(argv)


COMMANDS = {
    "run": cmd_run, "train": cmd_train, "report": cmd_report, "inspect": cmd_inspect, "plan": cmd_plan,
    "export": cmd_export, "config": cmd_config,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = argparse.ArgumentParser(
        prog="mmcurate",
        description="Curate interleaved image-text pretraining data from WARC files with Apache Beam.",
    )
    top.add_argument("--version", action="version", version=f"mmcurate {__version__}")
    top.add_argument("command", choices=sorted(COMMANDS), help="run: curate WARC files (see mmcurate run --help); train: train a quality-stage classifier (mmcurate train --help); report: write DIR/report.html; inspect: documents, decisions or SQL over a run's tables; plan: choose the next CC-index records to read from what runs yielded per source (mmcurate plan --help); export: documents or pairs with image bytes as WebDataset/JSONL/Parquet shards; config: the default config as commented YAML (--defaults)")
    if not argv or argv[0] not in COMMANDS:
        top.parse_args(argv)  # prints help, version or the error
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
