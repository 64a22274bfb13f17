"""The whole pipeline on DirectRunner: one process against several, and memory at
1x and 10x the input.

Builds WARCs by repeating the HTML pages of tests/fixtures/warc/demo.warc.gz under
distinct URLs (tests/warcbuild.py): ``--copies`` times for 1x, ten times that for
10x. Each run is a fresh ``mmcurate run`` subprocess with the default config, so
its figures are those a user gets. Prints wall time and pages/s of the
single-process (``--runner-preset direct``) and multi-process (``--runner-preset
local``) runs on the 10x input, and the peak RSS of the largest process of the
single-process run at 1x and 10x (``wait4`` rusage: the run's own process, or an
extractor child if one were larger).

    .venv/bin/python benchmarks/bench_runners.py --copies 5 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from warcbuild import repeat_pages  # noqa: E402

DEMO = ROOT / "tests" / "fixtures" / "warc" / "demo.warc.gz"


def build_input(path: Path, copies: int) -> int:
    return repeat_pages(DEMO, path, copies)


def run(warc: Path, out: Path, preset: list[str]) -> dict:
    cmd = [sys.executable, "-m", "mmcurate.pipeline.cli", "run", str(warc), "-o", str(out), "--quiet", *preset]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
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
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=5, help="copies of the demo pages in the 1x input")
    parser.add_argument("--factor", type=int, default=10, help="size of the large input, in multiples of 1x")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the multi-process run")
    args = parser.parse_args()
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
    print(f"{'run':<16} {'pages':>7} {'kept':>6} {'wall s':>8} {'pages/s':>8} {'peak RSS MB':>12}")
    for name, r in results.items():
        print(f"{name:<16} {r['pages']:>7} {r['kept']:>6} {r['wall_s']:>8} {r['pages_per_s']:>8} {r['peak_rss_mb']:>12}")
    one, ten = results["direct 1x"], results[f"direct {args.factor}x"]
    print(f"peak RSS {args.factor}x / 1x (single process): {ten['peak_rss_mb'] / one['peak_rss_mb']:.2f}")


if __name__ == "__main__":
    main()
