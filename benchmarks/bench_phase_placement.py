"""The figures of pipeline/phase_placement.py's cost model: the dedup phase of a
``local`` run timed alone, in the launching process and on Beam's worker processes.

For each --pages size, bench_memory's varied input is built (every page different,
one in ten a near or exact copy of an earlier one), its first phase is run once on the
``local`` preset, and then the dedup phase alone, from a fresh copy of that staging,
in the launching process (DirectRunner in memory) and on --workers worker processes,
each run in a fresh process as a run's launcher is, the two alternating for --rounds
rounds. Printed: each run's wall time and what other
processes used of the machine's cores meanwhile (``/proc/stat``), then a line through
each mode's fastest run at each size: the start-up the workers cost more
(START_SECONDS), a document's cost in this process (SECONDS_PER_DOC), how much more a
document costs on the workers (WORKER_OVERHEAD), and the break-even document count.

    .venv/bin/python benchmarks/bench_phase_placement.py --pages 4000 --pages 12000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import build_input  # noqa: E402
from bench_runners import machine_busy_seconds  # noqa: E402


def time_dedup_phase(staging: str, root: str, mode: str, workers: int) -> None:
    """In a process of its own, as a run's launcher would be: the dedup phase from a
    copy of ``staging`` ``here`` or on the ``workers``; prints its wall seconds and the
    share of the cores other processes used meanwhile, as JSON."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from mmcurate.pipeline import phases as run_phases
    from mmcurate.pipeline.build import plan_phases
    from mmcurate.pipeline.config import load_config
    from mmcurate.pipeline.phase_placement import in_this_process
    from mmcurate.runners import dofn_signatures, options_views
    from mmcurate.runners.presets import preset_args

    dofn_signatures.install()  # as `mmcurate run` does in the launching process
    options_views.install()
    config = load_config(None)
    phases = plan_phases(config)
    options = PipelineOptions(preset_args("local", {"workers": str(workers)}))
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(staging, root)
    own_before = os.times()
    busy_before, started = machine_busy_seconds(), time.perf_counter()
    run_phases._run_phase(phases, phases[1], root, in_this_process(options) if mode == "here" else options, [], config,
                          None, {})
    wall = time.perf_counter() - started
    own = sum(os.times()[:4]) - sum(own_before[:4])
    others = max(0.0, machine_busy_seconds() - busy_before - own)
    print(json.dumps({"wall": wall, "others": others / ((os.cpu_count() or 1) * wall)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, action="append", help="input sizes (repeatable; default 4000 and 12000)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-phase", nargs=3, metavar=("STAGING", "ROOT", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.time_phase:
        return time_dedup_phase(*args.time_phase, args.workers)
    from apache_beam.options.pipeline_options import PipelineOptions

    from mmcurate.pipeline import phases as run_phases
    from mmcurate.pipeline.build import plan_phases
    from mmcurate.pipeline.config import load_config
    from mmcurate.runners.presets import preset_args

    config = load_config(None)
    phases = plan_phases(config)
    if len(phases) < 2 or phases[1].stages != ("dedup",):
        raise SystemExit(f"the default config's second phase is not dedup alone: {[p.stages for p in phases]}")
    on_workers = PipelineOptions(preset_args("local", {"workers": str(args.workers)}))
    fastest: dict[str, list[tuple[int, float]]] = {"here": [], "workers": []}
    with tempfile.TemporaryDirectory() as tmp:
        for pages in args.pages or [4000, 12000]:
            warc = Path(tmp) / f"varied-{pages}.warc.gz"
            build_input(warc, pages, 100, 6)
            staging = Path(tmp) / f"staging-{pages}"
            totals, _ = run_phases.run_phases(phases[:1], str(staging), on_workers, [str(warc)], config, None, None)
            docs = run_phases._documents_in(phases, phases[1], totals)
            walls: dict[str, list[float]] = {"here": [], "workers": []}
            for r in range(args.rounds):
                for mode in ("here", "workers") if r % 2 == 0 else ("workers", "here"):
                    child = [sys.executable, __file__, "--workers", str(args.workers), "--time-phase", str(staging),
                             str(Path(tmp) / "root"), mode]
                    timed = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
                    wall, others = timed["wall"], timed["others"]
                    walls[mode].append(wall)
                    print(f"{pages} pages, {docs} staged documents, round {r + 1}, {mode}: {wall:.2f} s wall "
                          f"(others used {100 * others:.0f}% of the cores; load average {os.getloadavg()[0]:.2f})", flush=True)
            for mode in walls:
                fastest[mode].append((docs, min(walls[mode])))
    if len(fastest["here"]) >= 2:
        (d1, h1), (d2, h2) = fastest["here"][:2]
        (_, w1), (_, w2) = fastest["workers"][:2]
        per_doc, per_doc_workers = (h2 - h1) / (d2 - d1), (w2 - w1) / (d2 - d1)
        start = (w1 - per_doc_workers * d1) - (h1 - per_doc * d1)
        overhead = per_doc_workers * args.workers / per_doc
        break_even = start / (per_doc * (1 - overhead / args.workers)) if overhead < args.workers else float("inf")
        print(f"fastest runs: SECONDS_PER_DOC {per_doc:.4f}, on {args.workers} workers {per_doc_workers:.4f} s a document "
              f"(WORKER_OVERHEAD {overhead:.2f}), START_SECONDS {start:.2f}; break-even {break_even:,.0f} documents")


if __name__ == "__main__":
    main()
