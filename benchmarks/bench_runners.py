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
its CPU seconds (``wait4``: the run and every worker process it waited for), how
they were spread over its processes (the process tree sampled every 0.2 s with
psutil: the launcher, and each worker process Beam started, with the seconds of the
run in which it was seen: a phase's workers start and end with its pipeline), the
seconds each phase took (the manifest's ``phases``, with the worker processes it ran
on, 0: the launching process or the first phase's child) and what the rest of the
machine used meanwhile: the CPU seconds every other process spent during the run
(``/proc/stat``'s busy time less the run's own), as a share of the machine's cores.
A ratio measured while that share is more than a few percent is not a measure of
the runners. ``--rounds N`` runs the 10x input N times in each mode, alternating,
and prints every round's ratio and their median.

With ``--varied N`` the input is ``bench_memory.py``'s instead: N pages at 1x, every
page different (real English sentences inserted into the fixture pages), one in ten
an exact or near copy of an earlier one, so that about a quarter of the pages reach
dedup and its near-duplicate step has work, as on a crawl (the repeated demo pages
are nearly all exact copies of 17 pages).

    .venv/bin/python benchmarks/bench_runners.py --copies 5 --workers 2
    .venv/bin/python benchmarks/bench_runners.py --varied 1200 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


def build_varied_input(path: Path, pages: int) -> int:
    """``bench_memory.py``'s input: groups of 100 pages, 6 paragraphs added to each."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_memory import build_input as build_varied

    return build_varied(path, pages, 100, 6)[0]


def machine_busy_seconds() -> float:
    """CPU seconds every core of this machine spent busy since boot (``/proc/stat``:
    all but idle and iowait); 0 where there is no /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return 0.0
    ticks = [int(x) for x in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def sample_cpu(pid: int, seen: dict[int, list], started: float, stop: threading.Event) -> None:
    """For every process of the tree under ``pid``: [CPU seconds (user + system), the
    latest reading, first and last second of the run it was seen], until ``stop``."""
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        now = time.perf_counter() - started
        for proc in procs:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            entry = seen.setdefault(proc.pid, [0.0, now, now])
            entry[0], entry[2] = times.user + times.system, now
        stop.wait(0.2)


def run(warc: Path, out: Path, preset: list[str]) -> dict:
    cmd = [sys.executable, "-m", "mmcurate.pipeline.cli", "run", str(warc), "-o", str(out), "--quiet", *preset]
    load = os.getloadavg()[0]
    busy = machine_busy_seconds()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: dict[int, list] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample_cpu, args=(proc.pid, seen, started, stop), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    busy = machine_busy_seconds() - busy
    stop.set()
    sampler.join()
    stderr = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    pages = manifest["totals"]["pages"]
    cpu = usage.ru_utime + usage.ru_stime
    others = max(0.0, busy - cpu)
    # Beam's worker processes are pairs (the harness and its child, which does the
    # work): the pair shows as the busier one.
    workers = [(round(c, 1), round(a, 1), round(b, 1)) for pid, (c, a, b) in seen.items() if pid != proc.pid and c >= 0.05]
    return {
        "pages": pages,
        "kept": manifest["totals"]["kept"],
        "wall_s": round(wall, 2),
        "pages_per_s": round(pages / wall, 1),
        "cpu_s": round(cpu, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        # the launcher first, then its other processes by start (sampled: the last
        # 0.2 s of a process may be missing)
        "launcher_cpu_s": round(seen.get(proc.pid, [0.0])[0], 1),
        "processes": sorted(workers, key=lambda w: (w[1], -w[0])),
        "phases": [(p["phase"], p["seconds"], p.get("workers")) for p in manifest.get("phases", [])],
        "others_cpu_s": round(others, 1),
        "others_share": round(others / (wall * (os.cpu_count() or 1)), 3),
        "load_before": round(load, 2),
    }


def describe(name: str, r: dict) -> str:
    processes = ", ".join(f"{c} ({a}-{b} s)" for c, a, b in r["processes"]) or "none"
    where = {None: "", 0: " in one process"}
    phases = ", ".join(f"{n} {sec:.1f} s{where.get(w, f' on {w} workers')}" for n, sec, w in r["phases"])
    return (
        f"{name:<16} {r['pages']:>7} {r['kept']:>6} {r['wall_s']:>8} {r['pages_per_s']:>8} {r['cpu_s']:>7} {r['peak_rss_mb']:>12}"
        f"  launcher {r['launcher_cpu_s']}; its other processes (CPU s, seen from-to s): {processes}\n"
        f"{'':<16} phases: {phases}; load before {r['load_before']}; other processes of the machine used "
        f"{r['others_cpu_s']} CPU s meanwhile ({100 * r['others_share']:.1f}% of its cores)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=5, help="copies of the demo pages in the 1x input")
    parser.add_argument("--factor", type=int, default=10, help="size of the large input, in multiples of 1x")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the multi-process run")
    parser.add_argument("--rounds", type=int, default=1, help="runs of the large input in each mode, alternating")
    parser.add_argument("--varied", type=int, metavar="N", help="bench_memory's varied input, N pages at 1x, instead of --copies")
    args = parser.parse_args()
    print("load average at start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small, large = tmp / "1x.warc.gz", tmp / f"{args.factor}x.warc.gz"
        if args.varied:
            n_small = build_varied_input(small, args.varied)
            n_large = build_varied_input(large, args.varied * args.factor)
        else:
            n_small = build_input(small, args.copies)
            n_large = build_input(large, args.copies * args.factor)
        print(f"input: 1x = {n_small} pages ({small.stat().st_size / 1e6:.1f} MB), "
              f"{args.factor}x = {n_large} pages ({large.stat().st_size / 1e6:.1f} MB); cores: {os.cpu_count()}")
        direct = ["--runner-preset", "direct"]
        local = ["--runner-preset", "local", "--runner-opt", f"workers={args.workers}"]
        results = {"direct 1x": run(small, tmp / "o1", direct)}
        rounds = []
        for i in range(args.rounds):
            suffix = f" #{i + 1}" if args.rounds > 1 else ""
            d = results[f"direct {args.factor}x{suffix}"] = run(large, tmp / f"d{i}", direct)
            m = results[f"local({args.workers}) {args.factor}x{suffix}"] = run(large, tmp / f"m{i}", local)
            rounds.append((m["pages_per_s"] / d["pages_per_s"], m["cpu_s"] / d["cpu_s"]))
    print(f"{'run':<16} {'pages':>7} {'kept':>6} {'wall s':>8} {'pages/s':>8} {'CPU s':>7} {'peak RSS MB':>12}")
    for name, r in results.items():
        print(describe(name, r))
    one = results["direct 1x"]
    ten = next(r for n, r in results.items() if n.startswith(f"direct {args.factor}x"))
    print(f"peak RSS {args.factor}x / 1x (single process): {ten['peak_rss_mb'] / one['peak_rss_mb']:.2f}")
    for i, (speed, cpu) in enumerate(rounds):
        print(f"local({args.workers}) / direct, {args.factor}x{f', round {i + 1}' if args.rounds > 1 else ''}: "
              f"pages/s {speed:.2f}x, CPU s {cpu:.2f}x")
    if args.rounds > 1:
        print(f"median of {args.rounds} rounds: pages/s {statistics.median(r[0] for r in rounds):.2f}x")
    print("load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
