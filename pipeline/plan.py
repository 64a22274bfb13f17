"""``mmcurate plan RUN_DIR... --index INDEX --budget N --output POINTERS.parquet``.

Learns from finished runs which sources turn into interleaved image-text documents
and chooses the next ``N`` Common Crawl records to read (``stages.plan_sources``,
``filters.bandit``); ``mmcurate run --index POINTERS.parquet`` reads them. Like
``run``, it parses its own flags and hands every other flag to Beam.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from typing import Any, Sequence

from mmcurate.pipeline.config import ConfigError, PlanConfig, load_config
from mmcurate.pipeline.command_start import add_runner_flags, command_parser, start_command, with_runner_preset
from mmcurate.runners.presets import PresetError

log = logging.getLogger(__name__)

EPILOG = """\
RUN_DIR: output directories of `mmcurate run` (their documents/ and decisions/
tables; manifest.json must be there). None: the plan explores from the index alone.

INDEX: Parquet or CSV files (or a glob) with Common Crawl columnar-index columns:
  url, warc_filename, warc_record_offset, warc_record_length (required);
  url_host_name, url_host_registered_domain, url_host_tld, url_path,
  content_mime_detected, content_languages, fetch_status (used when present).

config section `plan` (--set plan.KEY=VALUE): seed, min_images, max_per_domain,
  max_domain_share, languages (e.g. --set plan.languages=de:0.2,ja:0.1),
  prior_strength, feature_strength, domain_weight, mime_types, fetch_status,
  skip_read_urls.

writes POINTERS.parquet (mmcurate run --index reads it) and a summary JSON beside it
(POINTERS.summary.json): pointers per domain, expected yield, exploration share,
language quotas met. Beam flags (--runner, --direct_num_workers, ...) work as in run.
"""


class PlanInputError(ValueError):
    """A run directory or index that cannot be used; nothing ran."""


def _parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mmcurate plan", "Choose the next Common Crawl records to read from what earlier runs yielded per source.", EPILOG
    )
    parser.add_argument("runs", nargs="*", metavar="RUN_DIR", help="output directories of earlier runs")
    parser.add_argument("--index", required=True, metavar="INDEX", help="CC columnar-index extract (Parquet/CSV, or a glob)")
    parser.add_argument("--budget", required=True, type=int, metavar="N", help="pointers to choose (at most)")
    parser.add_argument("--output", "-o", required=True, metavar="POINTERS.parquet", help="the pointer table to write")
    parser.add_argument("--config", "-c", metavar="FILE", help="config file, YAML or TOML (its `plan` section is used)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="override one config value (repeatable), e.g. --set plan.seed=7",
    )
    add_runner_flags(parser)
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the summary line")
    parser.add_argument("--verbose", "-v", action="store_true", help="show Beam's own INFO logging")
    return parser


def resolve_plan_inputs(runs: Sequence[str], index: str) -> tuple[list[str], list[str]]:
    """Absolute run directories and index patterns; PlanInputError on anything unusable."""
    from apache_beam.io.filesystems import FileSystems

    from mmcurate.pipeline.beam_files import absolute, exists, join
    from mmcurate.pipeline.run_output import MANIFEST
    from mmcurate.stages.engines.plan_index import BadPlanIndex
    from mmcurate.stages.plan_inputs import check_plan_index

    resolved_runs = []
    for run in runs:
        path = absolute(run)
        if not exists(join(path, MANIFEST)):
            raise PlanInputError(f"{run}: not a finished run (no manifest.json)")
        resolved_runs.append(path)
    pattern = absolute(index)
    matched = FileSystems.match([pattern])[0].metadata_list
    if not matched:
        raise PlanInputError(f"index {index}: no such file")
    for metadata in matched:
        try:
            check_plan_index(metadata.path)
        except BadPlanIndex as exc:
            raise PlanInputError(str(exc)) from exc
    return resolved_runs, [pattern]


def plan_sources(
    runs: Sequence[str],
    index: str,
    budget: int,
    output: str,
    config: PlanConfig,
    beam_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Runs the planning pipeline; returns the summary it wrote beside ``output``."""
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

    from mmcurate.pipeline.beam_files import absolute, is_local
    from mmcurate.runners import direct
    from mmcurate.stages.engines.source_plan import summary_path
    from mmcurate.stages.plan_sources import PlanSources

    if budget <= 0:
        raise PlanInputError(f"--budget {budget}: must be a positive number of pointers")
    run_dirs, patterns = resolve_plan_inputs(runs, index)
    output = absolute(output)
    if is_local(output):
        os.makedirs(os.path.dirname(output), exist_ok=True)
    options = PipelineOptions(list(beam_args))
    standard = options.view_as(StandardOptions)
    if not standard.runner:
        standard.runner = "DirectRunner"
    extra = {"run_dirs": run_dirs, "index": patterns, "seed": config.seed, "config": config.model_dump(mode="json")}
    started = time.perf_counter()
    with beam.Pipeline(runner=direct.runner_for(options), options=options) as pipeline:
        _ = pipeline | "Plan" >> PlanSources(run_dirs, patterns, budget, output, config, extra)
    with FileSystems.open(summary_path(output)) as fh:
        summary = json.loads(fh.read().decode("utf-8"))
    summary["wall_seconds"] = round(time.perf_counter() - started, 2)
    return summary


def format_summary(summary: dict[str, Any], output: str) -> str:
    runs = summary["measured"]
    lines = [
        f"runs: {runs['pages_read']} pages read, {runs['successes']} became documents with images "
        f"(yield {runs['yield'] if runs['yield'] is not None else '-'}), {runs['domains_read']} domains",
        f"plan: {summary['selected']} of {summary['budget']} pointers from {summary['domains']} domains "
        f"(cap {summary['domain_cap']} per domain), expected yield {summary['expected_yield']}, "
        f"exploration share {summary['exploration_share']}",
    ]
    for lang, q in summary["languages"].items():
        lines.append(f"  language {lang}: {q['selected']} of {q['wanted']} wanted ({'met' if q['met'] else 'NOT met'})")
    lines.append(f"output: {output} (+ summary JSON beside it)")
    return "\n".join(lines)


def cmd_plan(argv: Sequence[str]) -> int:
    started = start_command(argv, _parser())
    if started is None:
        return 0
    args, beam_args = started
    try:
        config = load_config(args.config, args.overrides)
        beam_args = with_runner_preset(args, beam_args)
        summary = plan_sources(args.runs, args.index, args.budget, args.output, config.plan, beam_args)
    except (ConfigError, PresetError, PlanInputError) as exc:
        print(f"mmcurate: {exc}", file=sys.stderr)
        return 2
    print(format_summary(summary, args.output))
    return 0
