"""The whole pipeline on DirectRunner: one process against several, and memory at
1x and 10x the input.

Builds WARCs by repeating the HTML pages of tests/fixtures/warc/demo.warc.gz under
distinct URLs (tests/warcbuild.py): ``--copies`` times for 1x, ten times that for
10x. Each run is a fresh ``mmcurate run`` subprocess with the default config, so
its figures are those a user gets. Prints wall time and pages/s of the
single-process (``--runner-preset direct``) and multi-process (``--runner-preset
local``) runs on the 10x input, the ratio of their pages/s, and the peak RSS of the largest process of
the single-process run at 1x and 10x (``wait4`` rusage: the run's own process, or
an extractor child if one were larger).

Because wall-clock ratios mean little on a shared machine, each run also prints
its CPU seconds (``wait4``: the run and every worker process it waited for) and
how they were spread over its processes (the process tree sampled every 0.2 s
with psutil: the launcher, and each worker process Beam started), with the load
average before and after.

    .venv/bin/python benchmarks/bench_runners.py --copies 5 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from warcbuild import repeat_pages  # noqa: E402

DEMO = ROOT / "tests" / "fixtures" / "warc" / "demo.warc.gz"


def build_input(path: Path, copies: int) -> int:
    return repeat_pages(DEMO, path, copies)


def sample_cpu(pid: int, seen: dict[int, float], stop: threading.Event) -> None:
    """CPU seconds (user + system) of every process of the tree under ``pid``, the
    latest reading of each, until ``stop``."""
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        for proc in procs:
            try:
                times = proc.cpu_times()
                seen[proc.pid] = times.user + times.system
            except psutil.Error:
                pass
        stop.wait(0.2)


def run(warc: Path, out: Path, preset: list[str]) -> dict:
    cmd = [sys.executable, "-m", "mmcurate.pipeline.cli", "run", str(warc), "-o", str(out), "--quiet", *preset]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: dict[int, float] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample_cpu, args=(proc.pid, seen, stop), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    stderr = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    pages = manifest["totals"]["pages"]
    return {
        "pages": pages,
        "kept": manifest["totals"]["kept"],
        "wall_s": round(wall, 2),
        "pages_per_s": round(pages / wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        # the launcher first, then its worker processes by CPU (sampled: the last
        # 0.2 s of a process may be missing)
        "cpu_by_process": [round(seen.get(proc.pid, 0.0), 1)]
        + sorted((round(v, 1) for k, v in seen.items() if k != proc.pid), reverse=True),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=5, help="copies of the demo pages in the 1x input")
    parser.add_argument("--factor", type=int, default=10, help="size of the large input, in multiples of 1x")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the multi-process run")
    args = parser.parse_args()
    print("load average at start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small, large = tmp / "1x.warc.gz", tmp / f"{args.factor}x.warc.gz"
        n_small = build_input(small, args.copies)
        n_large = build_input(large, args.copies * args.factor)
        print(f"input: 1x = {n_small} pages ({small.stat().st_size / 1e6:.1f} MB), "
              f"{args.factor}x = {n_large} pages ({large.stat().st_size / 1e6:.1f} MB); cores: {os.cpu_count()}")
        direct = ["--runner-preset", "direct"]
        local = ["--runner-preset", "local", "--runner-opt", f"workers={args.workers}"]
        results = {
            "direct 1x": run(small, tmp / "o1", direct),
            f"direct {args.factor}x": run(large, tmp / "o2", direct),
            f"local({args.workers}) {args.factor}x": run(large, tmp / "o3", local),
        }
    print(f"{'run':<16} {'pages':>7} {'kept':>6} {'wall s':>8} {'pages/s':>8} {'CPU s':>7} {'peak RSS MB':>12}  CPU s by process (launcher, workers)")
    for name, r in results.items():
        print(f"{name:<16} {r['pages']:>7} {r['kept']:>6} {r['wall_s']:>8} {r['pages_per_s']:>8} {r['cpu_s']:>7} {r['peak_rss_mb']:>12}  "
              + " ".join(str(c) for c in r["cpu_by_process"]))
    one, ten = results["direct 1x"], results[f"direct {args.factor}x"]
    local = results[f"local({args.workers}) {args.factor}x"]
    print(f"peak RSS {args.factor}x / 1x (single process): {ten['peak_rss_mb'] / one['peak_rss_mb']:.2f}")
    print(f"local({args.workers}) / direct, {args.factor}x: pages/s {local['pages_per_s'] / ten['pages_per_s']:.2f}x, "
          f"CPU s {local['cpu_s'] / ten['cpu_s']:.2f}x")
    print("load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
