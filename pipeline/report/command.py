"""``mmcurate report DIR``: writes ``DIR/report.html`` (``DIR`` local or on any Beam
filesystem; a remote run's tables are read from a local copy)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from mmcurate.pipeline import beam_files
from mmcurate.pipeline.report.page import render
from mmcurate.pipeline.run_output import REPORT, OutputError, local_copy


def write_report(directory: str, **kwargs: Any) -> str:
    """Writes ``directory/report.html`` (``directory`` local or on any Beam
    filesystem) and returns its path."""
    with local_copy(directory) as local:
        page = render(local, source=directory if local != directory else "", **kwargs).encode("utf-8")
    path = beam_files.join(directory, REPORT)
    beam_files.write_bytes(path, page, "text/html")
    return path


def cmd_report(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mmcurate report",
        description="Write DIR/report.html: one self-contained page (no network when viewed) with the funnel, signal "
        "distributions with thresholds, and samples of kept and rejected documents.",
    )
    parser.add_argument("directory", metavar="DIR", help="a run's output directory (local, or gs://, s3://, ... "
                        "through Beam's filesystems)")
    parser.add_argument("--kept", type=int, default=8, help="kept documents to show (default 8)")
    parser.add_argument("--per-reason", type=int, default=3, help="rejected pages to show per reason (default 3)")
    parser.add_argument("--max-chars", type=int, default=1500, help="text characters shown per kept document (default 1500)")
    args = parser.parse_args(list(argv))
    try:
        path = write_report(
            args.directory, kept_sample=args.kept, rejected_per_reason=args.per_reason, max_chars=args.max_chars
        )
    except OutputError as exc:
        print(f"mmcurate report: {exc}", file=sys.stderr)
        return 2
    size = beam_files.size(path)
    print(f"report: {path} ({size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(cmd_report(sys.argv[1:]))
