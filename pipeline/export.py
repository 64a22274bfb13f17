"""``mmcurate export DIR --format webdataset|jsonl|parquet-embedded --output OUT``:
a run's documents (or pairs, ``--table pairs``) with their image bytes joined in,
as shards a trainer reads directly. A Beam pipeline (``pipeline/export_shards.py``;
the formats in ``pipeline/shard_formats.py``), so it runs on the same runners and
flags as ``mmcurate run``.

``OUT`` gets ``NNNNN.tar|jsonl|parquet`` shards, a ``NNNNN_stats.json`` per shard and
``export.json`` (the totals, written last). A rerun into the same ``OUT`` first
removes the shards and stats an earlier export left there.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections import Counter
from typing import Any, Optional, Sequence, TextIO

from mmcurate.pipeline import beam_files
from mmcurate.pipeline.command_start import add_runner_flags, command_parser, start_command, with_runner_preset
from mmcurate.pipeline.export_shards import EXPORT_TABLES, ExportShards, plan_shards
from mmcurate.pipeline.run_output import OutputError, load_manifest, table_files
from mmcurate.pipeline.shard_formats import EXTENSIONS, FORMATS, STATS_SUFFIX
from mmcurate.runners.presets import PresetError

log = logging.getLogger(__name__)

SUMMARY = "export.json"
DEFAULT_SHARD_SIZE = 1000


class ExportError(ValueError):
    """DIR is not a finished run's output, or an option is invalid."""


def _parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mmcurate export",
        "Write a run's documents (or pairs) with their image bytes joined in, as shards a trainer "
        "reads directly: WebDataset tar, JSON lines or Parquet with the images inline.",
        "examples:\n"
        "  mmcurate export out --format webdataset --output shards/\n"
        "  mmcurate export out --table pairs --format parquet-embedded --output pairs-shards/\n"
        "  mmcurate export gs://b/curated --format webdataset --output gs://b/wds --runner-preset dataflow ...\n\n"
        "Each shard NNNNN.EXT gets NNNNN_stats.json (rows, images embedded and missing, bytes, languages);\n"
        "export.json holds the totals. Every flag not listed above goes to Beam's PipelineOptions.\n",
    )
    parser.add_argument("directory", metavar="DIR", help="a finished run's output directory (local, gs://, s3://, ...)")
    parser.add_argument("--format", "-f", required=True, choices=FORMATS, help="shard format")
    parser.add_argument("--output", "-o", required=True, metavar="OUT", help="directory for the shards (any Beam filesystem)")
    parser.add_argument("--table", choices=EXPORT_TABLES, default="documents",
                        help="documents (interleaved, default) or pairs (image-text pairs)")
    parser.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE, metavar="N",
                        help=f"rows per shard at most, in whole Parquet row groups (default {DEFAULT_SHARD_SIZE})")
    add_runner_flags(parser)
    return parser


def _clear_previous(output: str) -> None:
    """Removes the shards, stats and summary an earlier export wrote to ``output``."""
    patterns = [f"[0-9]*.{ext}" for ext in EXTENSIONS.values()] + ["[0-9]*" + STATS_SUFFIX, SUMMARY]
    for path in sorted({path for pattern in patterns for path in beam_files.match(beam_files.join(output, pattern))}):
        beam_files.remove(path)


def summarise(shard_stats: Sequence[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The totals over every shard's stats."""
    languages: Counter[str] = Counter()
    formats: Counter[str] = Counter()
    totals = {k: 0 for k in ("rows", "images", "images_missing", "image_bytes", "text_chars", "bytes")}
    for stats in shard_stats:
        for key in totals:
            totals[key] += stats[key]
        languages.update(stats["languages"])
        formats.update(stats["image_formats"])
    return {
        **fields,
        "shards": len(shard_stats),
        **totals,
        "languages": dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))),
        "image_formats": dict(sorted(formats.items())),
        "files": [s["file"] for s in sorted(shard_stats, key=lambda s: s["shard"])],
    }


def export(
    directory: str,
    output: str,
    fmt: str,
    table: str = "documents",
    shard_size: int = DEFAULT_SHARD_SIZE,
    beam_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Runs the export pipeline; returns the summary it wrote to ``OUT/export.json``."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from mmcurate.runners import direct

    if shard_size < 1:
        raise ExportError(f"--shard-size {shard_size}: must be at least 1")
    manifest = load_manifest(directory)
    files = table_files(directory, table)
    specs = plan_shards(files, shard_size)
    image_files = table_files(directory, "images")
    if beam_files.is_local(output):
        os.makedirs(output, exist_ok=True)
    _clear_previous(output)
    options = PipelineOptions(list(beam_args))
    with beam.Pipeline(runner=direct.runner_for(options), options=options) as pipeline:
        _ = pipeline | "Export" >> ExportShards(specs, image_files, output, fmt, table)
    stats = [beam_files.read_json(p) for p in beam_files.match(beam_files.join(output, "[0-9]*" + STATS_SUFFIX))]
    summary = summarise(
        stats, source=directory, run_id=manifest.get("run_id"), table=table, format=fmt, shard_size=shard_size
    )
    beam_files.write_json(beam_files.join(output, SUMMARY), summary)
    return summary


def cmd_export(argv: Sequence[str], out: Optional[TextIO] = None) -> int:
    out = out or sys.stdout
    started = start_command(argv, _parser(), set_logging=False, out=out)
    if started is None:
        return 0
    args, beam_args = started
    try:
        beam_args = with_runner_preset(args, beam_args)
        summary = export(args.directory, args.output, args.format, args.table, args.shard_size, beam_args)
    except (ExportError, OutputError, PresetError) as exc:
        print(f"mmcurate export: {exc}", file=sys.stderr)
        return 2
    out.write(
        f"{summary['shards']} {args.format} shard(s) in {args.output}: {summary['rows']} {args.table}, "
        f"{summary['images']} images embedded ({summary['image_bytes']} bytes), "
        f"{summary['images_missing']} without bytes; totals in {SUMMARY}\n"
    )
    return 0
