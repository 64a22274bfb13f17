"""Peak memory of decoding a page of huge images in one worker process.

    .venv/bin/python benchmarks/bench_decode_memory.py                  # 2 PNGs, 2 threads
    .venv/bin/python benchmarks/bench_decode_memory.py --images 4 --threads 4 --side 9400
    .venv/bin/python benchmarks/bench_decode_memory.py --budget-mib 100000   # budget off in effect

Writes ``--images`` distinct PNGs of ``--side``² pixels (RGB gradients, just under
``images.max_pixels`` at the default side) to a temporary directory, then, in a fresh
process, runs ``normalize_image`` on all of them from ``--threads`` threads at once,
as a worker's DoFn threads would, and prints that process's peak RSS (ru_maxrss)
before and after. ``--resize`` sets ``images.resize_max_side``. Runs against
whatever mmcurate is importable: a tree without ``images.decode_budget_bytes`` is
measured without a budget.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

_MEASURE = r"""
import resource, sys, threading
from pathlib import Path
from mmcurate.pipeline.config import ImagesConfig
from mmcurate.stages.engines.image_decode import normalize_image
paths, threads, budget, resize = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fields = ImagesConfig.model_fields
extra = {"decode_budget_bytes": budget} if "decode_budget_bytes" in fields and budget else {}
config = ImagesConfig(resize_max_side=resize, max_side=20_000, **extra)
payloads = [Path(p).read_bytes() for p in paths]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
results = [None] * len(payloads)
def work(i):
    results[i] = normalize_image(f"http://x.example/{i}.png", payloads[i], config)
pending = list(range(len(payloads)))
def worker():
    while pending:
        try:
            i = pending.pop()
        except IndexError:
            return
        work(i)
ts = [threading.Thread(target=worker) for _ in range(threads)]
[t.start() for t in ts]
[t.join() for t in ts]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"peak RSS before decoding: {before / 1024:.0f} MiB; after: {after / 1024:.0f} MiB; "
      f"statuses: {sorted(r.status + ':' + r.reason for r in results)}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--side", type=int, default=9400)
    parser.add_argument("--budget-mib", type=int, default=0, help="images.decode_budget_bytes in MiB (0: the default)")
    parser.add_argument("--resize", type=int, default=0, help="images.resize_max_side")
    args = parser.parse_args()
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(args.images):
            tile = Image.merge("RGB", [Image.linear_gradient("L").rotate(90 * ((i + k) % 4)) for k in range(3)])
            image = tile.resize((args.side, args.side), Image.Resampling.NEAREST)
            path = Path(tmp) / f"{i}.png"
            image.save(path, compress_level=1)
            del image
            paths.append(str(path))
        budget = args.budget_mib * 1024 * 1024
        subprocess.run(
            [sys.executable, "-c", _MEASURE, ",".join(paths), str(args.threads), str(budget), str(args.resize)], check=True
        )


if __name__ == "__main__":
    main()
