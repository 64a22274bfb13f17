"""How well the images stage's scheduler (``stages/engines/host_fetch.HostScheduler``)
packs a web's URLs into its slots, apart from any CPU or network cost: each request
(robots.txt and every URL) takes its host's time to first byte of the web that
benchmarks/bench_web.py plans (benchmarks/localweb.py: Zipf-like URLs per host, a
slow tail of hosts), and nothing else. Printed: the scheduler's wall time on that
web, against two bounds no polite client can beat -- every answer's time over the
slots (``concurrency``), and the slowest host's robots.txt plus its URLs in rounds
of ``per_host`` -- and the most URLs in progress at once.

Times are run scaled down by --time-scale (0.05: a 70 s web runs in 3.5 s) and
printed scaled back up.

    .venv/bin/python benchmarks/bench_host_schedule.py --urls 20000 --hosts 1000 --seed 1
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import localweb  # noqa: E402
from mmcurate.stages.engines.host_fetch import HostScheduler  # noqa: E402
from mmcurate.stages.engines.image_fetch import Fetched, politeness_host  # noqa: E402

SKIPPED = (localweb.KIND_HANG, localweb.KIND_REFUSED)


class TimedFetcher:
    """Answers each request after its host's time to first byte (scaled)."""

    def __init__(self, latency: dict[str, float], scale: float):
        self._latency = latency
        self._scale = scale

    def host_delay(self, host: str) -> float:
        return 0.0

    async def prepare_host(self, url: str) -> None:
        await asyncio.sleep(self._latency[politeness_host(url)] * self._scale)

    async def fetch_first(self, url: str, candidates=()) -> Fetched:
        await asyncio.sleep(self._latency[politeness_host(url)] * self._scale)
        return Fetched(url, True, b"", attempts=1)


async def schedule(web: localweb.Web, concurrency: int, per_host: int, scale: float) -> tuple[float, int]:
    latency = {h.address: h.latency for h in web.hosts}
    by_host: dict[str, list] = defaultdict(list)
    for u in web.urls:
        if u.kind not in SKIPPED:
            by_host[web.hosts[u.host].address].append((u.url, ()))
    total = sum(map(len, by_host.values()))
    finished = asyncio.Event()
    done = [0]

    def on_done(tag, want, fetched) -> None:
        done[0] += 1
        if done[0] == total:
            finished.set()

    scheduler = HostScheduler(TimedFetcher(latency, scale), concurrency, per_host, 0, on_done)
    loop = asyncio.get_running_loop()
    started = loop.time()
    for host, wants in by_host.items():
        scheduler.submit(host, wants)
    await finished.wait()
    return (loop.time() - started) / scale, scheduler.peak_running


def bounds(web: localweb.Web, concurrency: int, per_host: int) -> tuple[float, float]:
    """(every answer's time over the slots, the slowest host's robots.txt and rounds)."""
    counts = Counter(u.host for u in web.urls if u.kind not in SKIPPED)
    answers = sum(web.hosts[h].latency * (n + 1) for h, n in counts.items())
    slowest = max((1 + math.ceil(n / per_host)) * web.hosts[h].latency for h, n in counts.items())
    return answers / concurrency, slowest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=20000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--time-scale", type=float, default=0.05)
    args = parser.parse_args()
    web = localweb.plan_web(args.urls, args.hosts, args.seed, 1, 2)
    wall, peak = asyncio.run(schedule(web, args.concurrency, args.per_host, args.time_scale))
    over_slots, slowest = bounds(web, args.concurrency, args.per_host)
    print(f"web: {args.urls} URLs on {args.hosts} hosts (seed {args.seed}), {args.concurrency} slots, {args.per_host} per host")
    print(f"scheduler's wall time: {wall:.1f} s (most URLs in progress: {peak})")
    print(f"bounds: every answer's time over the slots {over_slots:.1f} s; the slowest host's robots.txt and rounds {slowest:.1f} s")
    print(f"over the larger bound: {wall / max(over_slots, slowest):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
