"""The start-up the commands that run a Beam pipeline share (``run``, ``plan``,
``export``): mmcurate's flags are parsed here and every other flag goes to Beam's
``PipelineOptions`` unchanged, as Beam's examples do; logging is set before Beam is
imported; a runner preset adds its Beam flags in front of the explicit ones."""

from __future__ import annotations

import argparse
import logging
from typing import Optional, Sequence, TextIO

from mmcurate.runners.presets import PRESETS, PresetError, describe, parse_runner_options, preset_args


class _DropNoise(logging.Filter):
    """Drops Beam's import-time warning about Google Cloud client libraries,
    which says nothing to a run that does not use them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("apitools not found")


def configure_logging(quiet: bool, verbose: bool) -> None:
    """Must run before apache_beam is imported: Beam logs at import time."""
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_DropNoise())
    if not verbose:
        logging.getLogger("apache_beam").setLevel(logging.WARNING)


def beam_option_parser() -> argparse.ArgumentParser:
    """A parser that knows every flag of every PipelineOptions class Beam defines."""
    from apache_beam.options import pipeline_options as po

    import mmcurate.stages.scoring.options  # noqa: F401  (our own Beam options)

    parser = po._BeamArgumentParser(add_help=False, conflict_handler="resolve")
    seen: set[type] = set()

    def add(cls: type) -> None:
        for sub in cls.__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            try:
                sub._add_argparse_args(parser)
            except (argparse.ArgumentError, TypeError):
                pass  # a class that redeclares a flag another class owns
            add(sub)

    add(po.PipelineOptions)
    return parser


def split_beam_args(argv: Sequence[str], ours: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """Splits ``argv`` into mmcurate's arguments and Beam's.

    Raises SystemExit (via ``ours.error``) for a flag neither side knows.
    """
    our_flags = ours._option_string_actions
    beam_flags = None
    mine: list[str] = []
    beams: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        name = token.split("=", 1)[0]
        if not token.startswith("-") or token == "-" or name in our_flags:
            action = our_flags.get(name)
            mine.append(token)
            if action is not None and "=" not in token and action.nargs != 0:
                takes = 1 if action.nargs in (None, "?") else 0
                mine.extend(argv[i + 1 : i + 1 + takes])
                i += takes
            i += 1
            continue
        if beam_flags is None:
            beam_flags = beam_option_parser()._option_string_actions
        action = beam_flags.get(name)
        if action is None:
            ours.error(f"unknown option {name} (neither an mmcurate flag nor a Beam pipeline option)")
        beams.append(token)
        if "=" not in token and action.nargs != 0 and i + 1 < len(argv):
            beams.append(argv[i + 1])
            i += 1
        i += 1
    return mine, beams


def command_parser(prog: str, description: str, epilog: str) -> argparse.ArgumentParser:
    """The parser of a command that runs a Beam pipeline: its help ends with the
    runner presets and their options; ``add_runner_flags`` adds the flags that use them."""
    return argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog=epilog + "\nrunner presets (--runner-preset NAME, options with --runner-opt NAME=VALUE):\n" + describe(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_runner_flags(parser: argparse.ArgumentParser) -> None:
    """``--runner-preset NAME`` and ``--runner-opt NAME=VALUE`` (``with_runner_preset`` reads them)."""
    parser.add_argument(
        "--runner-preset",
        choices=sorted(PRESETS),
        help="Beam flags for a runner (see 'runner presets' below); explicit Beam flags override the preset's "
        "(default: none, Beam's DirectRunner with its own defaults: one worker, in memory)",
    )
    parser.add_argument(
        "--runner-opt",
        dest="runner_options",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter of the runner preset (repeatable), e.g. --runner-opt endpoint=localhost:8099",
    )


def start_command(
    argv: Sequence[str], parser: argparse.ArgumentParser, *, set_logging: bool = True, out: Optional[TextIO] = None
) -> Optional[tuple[argparse.Namespace, list[str]]]:
    """(mmcurate's parsed arguments, Beam's flags) of ``argv``; None when help was
    asked for (and printed to ``out``). With ``set_logging``, logging is configured
    first from ``--quiet``/``--verbose``."""
    argv = list(argv)
    if any(a in ("-h", "--help") for a in argv):
        parser.print_help(out)
        return None
    if set_logging:
        configure_logging(any(a in ("-q", "--quiet") for a in argv), any(a in ("-v", "--verbose") for a in argv))
    mine, beam_args = split_beam_args(argv, parser)
    return parser.parse_args(mine), beam_args


def with_runner_preset(args: argparse.Namespace, beam_args: Sequence[str]) -> list[str]:
    """``beam_args`` behind the flags of ``--runner-preset`` (with its ``--runner-opt``
    values); PresetError for an unknown preset or option, or options without one."""
    if args.runner_options and not args.runner_preset:
        raise PresetError("--runner-opt needs --runner-preset")
    if args.runner_preset:
        return preset_args(args.runner_preset, parse_runner_options(args.runner_options)) + list(beam_args)
    return list(beam_args)
