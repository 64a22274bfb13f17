"""Image retrieval on a local web of the real web's shape: mmcurate's images stage,
run as ``mmcurate run`` runs it, side by side with img2dataset 1.47.0, in one
invocation. Nothing leaves 127.0.0.0/8.

The web (benchmarks/localweb.py, drawn from --seed): --hosts hosts, each a loopback
address of its own, with a Zipf-like number of the --urls URLs; a time to first byte
per host (median 150 ms, a slow tail of 1-5 s); 404s, 500-once-then-ok URLs, URLs that
hang until the client gives up, hosts that refuse connections; a robots.txt on every
host, some disallowing a path; about 60% of the hosts over HTTPS with a test
certificate authority (trustme) that both tools trust through SSL_CERT_FILE. It is
served by --server-processes asyncio processes, whose CPU is measured and printed.

Runs, each its own process measured by wait4 (benchmarks/peers.py): wall, CPU (user
+ system, children included), peak RSS:

* img2dataset: ``download(processes_count=1, thread_count=C, input_format=txt,
  output_format=files, resize_mode=no, disable_all_reencoding=False, retries=R,
  timeout=D)`` on the page-ordered URL list; it decodes each image and re-encodes it
  (its defaults: jpg, quality 95);
* mmcurate: ``mmcurate run pages.warc.gz --stages images`` with images.http on,
  images.concurrency=C, images.per_host_concurrency=4, images.retries=R,
  images.deadline_seconds=D, loopback allowed (images.allowed_networks), the
  corpus-wide image dedup off (img2dataset has none; the images repeat their pixels)
  -- on a WARC of pages whose <img> tags name the web's URLs (2 to 30 per page), and
  on the same pages without the hanging URLs; and once with images.http off, the
  cost of everything but retrieval (start-up, read, extract, write); with --workers N
  also on N DirectRunner worker processes (politeness must hold across them);
  --revision REV runs mmcurate as committed at REV instead of the working tree;

then each tool's outcomes by the URL's planned kind, images/s, CPU s per 1,000
images, peak RSS; the floor that the per-host limit puts on a polite client's wall
time; what the server saw per host. It exits 1 when the server was a bottleneck (half
a core or more, averaged over a run) or when mmcurate broke politeness: more than
the per-host limit of requests in flight at one host, robots.txt fetched more than
once from a host, or a request for a path robots.txt disallows; and when a tool's
output names no outcome for some of its URLs (a silent drop). The targets of
issue 31 item 2 are printed as met or missed; they do not change the exit code.

    .venv/bin/python benchmarks/bench_web.py --urls 20000 --hosts 1000 --seed 1   # the full web
    .venv/bin/python benchmarks/bench_web.py --urls 2000 --hosts 200 --seed 1     # quick
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import localweb  # noqa: E402
from localweb import KIND_HANG, KINDS, LocalWeb, ServerStats, Web  # noqa: E402
from peers import BENCH_DIR, MMCURATE_PYTHON, ROOT, Measured, ensure_venv, installed_versions, measure, table  # noqa: E402

IMG2DATASET_REQUIREMENTS = ("img2dataset==1.47.0",)
IMG2DATASET_PACKAGES = ("img2dataset", "pyarrow", "opencv-python-headless", "albumentations")
MMCURATE = str(ROOT / ".venv" / "bin" / "mmcurate")
SERVER_CORE_LIMIT = 0.5

IMG2DATASET = r"""
import json, sys
from img2dataset import download

if __name__ == "__main__":  # img2dataset's workers are spawned: they re-import this file
    url_list, out, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    download(url_list=url_list, output_folder=out, input_format="txt", output_format="files",
             resize_mode="no", disable_all_reencoding=False, incremental_mode="incremental",
             distributor="multiprocessing", **settings)
"""

WORDS = (
    "harbour ferry morning tide station river market bridge garden museum library winter summer lantern "
    "village mountain coast island festival kitchen recipe bread orchard valley railway engine workshop "
    "painting gallery meadow forest harvest season weather journey evening window street square tower"
).split()


# ---------------------------------------------------------------------------------
# Inputs: the pages, the URL lists
# ---------------------------------------------------------------------------------


def pages_of(web: Web, seed: int, per_page: tuple[int, int] = (2, 30)) -> list[list[int]]:
    """The web's URLs (indices, in the web's seeded order) cut into pages of
    ``per_page`` images each."""
    rng = random.Random(seed + 7919)
    pages, start = [], 0
    while start < len(web.urls):
        n = rng.randint(*per_page)
        pages.append(list(range(start, min(start + n, len(web.urls)))))
        start += n
    return pages


def _paragraph(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def page_html(n: int, image_urls: Sequence[str], rng: random.Random) -> str:
    parts = [f"<p>{_paragraph(rng, 60)}</p>"]
    for i, src in enumerate(image_urls):
        parts.append(f'<figure><img src="{src}" alt="Picture {i} of story {n}" width="640" height="480">'
                     f"<figcaption>{_paragraph(rng, 8)}</figcaption></figure><p>{_paragraph(rng, 30)}</p>")
    return (f"<!doctype html><html lang=en><head><title>Story {n}</title></head><body><article>"
            f"<h1>Story {n}</h1>{''.join(parts)}</article></body></html>")


def write_inputs(web: Web, pages: list[list[int]], work: Path, without: frozenset[str] = frozenset()) -> tuple[Path, Path, int]:
    """A WARC of the pages and the page-ordered URL list, leaving out URLs of the
    kinds in ``without``; returns (warc, url list, URLs)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from warcbuild import WarcBuilder

    suffix = "-without-" + "-".join(sorted(without)) if without else ""
    warc_path, list_path = work / f"pages{suffix}.warc.gz", work / f"urls{suffix}.txt"
    rng = random.Random(web.seed)
    urls: list[str] = []
    with WarcBuilder.open(warc_path) as warc:
        for n, page in enumerate(pages):
            chosen = [web.urls[i].url for i in page if web.urls[i].kind not in without]
            urls += chosen
            warc.html(f"https://stories{n % 97}.example/{n}", page_html(n, chosen, rng))
    list_path.write_text("".join(u + "\n" for u in urls))
    return warc_path, list_path, len(urls)


# ---------------------------------------------------------------------------------
# Outcomes
# ---------------------------------------------------------------------------------


def i2d_outcome(status: str, error: Optional[str]) -> str:
    """An img2dataset metadata row as an outcome: ok, http_404, timeout, refused, ..."""
    if status == "success":
        return "ok"
    message = (error or "").lower()
    if "http error" in message:
        return "http_" + message.split("http error", 1)[1].strip().split(":")[0]
    if "timed out" in message:
        return "timeout"
    if "refused" in message:
        return "refused"
    if "certificate" in message or "ssl" in message:
        return "tls"
    return "other:" + message[:40]


def mm_outcome(status: str, reason: Optional[str], value: Optional[float], detail: Optional[str]) -> str:
    """An images-table row (or image decision) of mmcurate as an outcome."""
    if status == "ok":
        return "ok"
    reason = reason or ""
    text = (detail or "").lower()
    if reason == "image.http_status" and value is not None:
        return f"http_{int(value)}"
    if reason == "image.timeout":
        return "timeout"
    if "refused" in text or "connect call failed" in text:
        # robots.txt unreachable is a complete disallow (RFC 9309): the host refused.
        return "refused" if reason != "image.robots_disallowed" else "refused (robots.txt)"
    if reason == "image.robots_disallowed":
        return "robots"
    if "[ssl" in text or "certificate" in text:  # not aiohttp's "ssl:default", which every connect error names
        return "tls"
    return reason.removeprefix("image.") or status


@dataclass
class Run:
    tool: str
    urls: int
    measured: Measured
    server: ServerStats
    outcomes: dict[str, str] = field(default_factory=dict)  # URL -> outcome

    @property
    def ok(self) -> int:
        return sum(1 for o in self.outcomes.values() if o == "ok")

    @property
    def images_per_s(self) -> float:
        return self.ok / self.measured.wall

    @property
    def images_per_cpu_s(self) -> float:
        return self.ok / self.measured.cpu if self.measured.cpu else 0.0


def read_i2d(out: Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    outcomes = {}
    for part in sorted(out.glob("*.parquet")):
        for row in pq.read_table(part, columns=["url", "status", "error_message"]).to_pylist():
            outcomes[row["url"]] = i2d_outcome(row["status"], row["error_message"])
    return outcomes


def read_mmcurate(out: Path) -> dict[str, str]:
    """URL -> outcome from the run's images table, and the image decisions for URLs
    the table does not name."""
    import pyarrow.parquet as pq

    outcomes: dict[str, str] = {}
    images = pq.read_table(out / "images", columns=["urls", "status", "reason", "detail"]).to_pylist()
    for row in images:
        for url in row["urls"] or ():
            outcomes[url] = mm_outcome(row["status"], row["reason"], None, row["detail"])
    decisions = pq.read_table(out / "decisions").to_pylist()
    for row in decisions:
        if row.get("subject") == "image" and row.get("url"):
            # The decision carries the measured value (the HTTP status) the images table does not.
            outcomes[row["url"]] = mm_outcome("failed", row["reason"], row["value"], row["detail"])
    return outcomes


# ---------------------------------------------------------------------------------
# Running the tools
# ---------------------------------------------------------------------------------


def client_env(ca_file: Path) -> dict[str, str]:
    """Trust the web's certificate authority; no proxy for anything."""
    return {
        "SSL_CERT_FILE": str(ca_file),
        "REQUESTS_CA_BUNDLE": str(ca_file),
        "http_proxy": "", "https_proxy": "", "HTTP_PROXY": "", "HTTPS_PROXY": "", "all_proxy": "", "ALL_PROXY": "",
        "no_proxy": "*", "NO_PROXY": "*",
        "NO_ALBUMENTATIONS_UPDATE": "1",  # its import asks PyPI for a newer version otherwise
    }


def run_img2dataset(python: str, url_list: Path, work: Path, settings: dict, env: dict, server: LocalWeb, n: int, name: str) -> Run:
    script = work / "img2dataset_run.py"
    script.write_text(IMG2DATASET)
    out = work / f"{name}-out"
    shutil.rmtree(out, ignore_errors=True)
    server.reset()
    measured = measure([python, str(script), str(url_list), str(out), json.dumps(settings)], env=env, cwd=str(work))
    return Run(name, n, measured, server.stats(), read_i2d(out))


# Top-level folders installed as subpackages of mmcurate (pyproject's package-dir).
PACKAGE_DIRS = ("pipeline", "stages", "filters", "schemas", "runners")


def snapshot(revision: str, work: Path) -> tuple[str, Path]:
    """mmcurate as of a git revision, for a working tree others are changing:
    ``git archive`` of it in WORK/tree and, for PYTHONPATH (ahead of the editable
    install), WORK/path laid out as the installed package. Returns (commit, path)."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{revision}^{{commit}}"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    tree, path = work / "tree", work / "path"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    package = path / "mmcurate"
    package.mkdir(parents=True)
    for item in (tree / "pipeline" / "_root").iterdir():
        (package / item.name).symlink_to(item)
    for name in PACKAGE_DIRS:
        (package / name).symlink_to(tree / name)
    return commit, path


def mmcurate_settings(args) -> list[str]:
    pairs = {
        "images.http": "true",
        "images.allowed_networks": "[127.0.0.0/8]",
        "images.concurrency": str(args.concurrency),
        "images.per_host_concurrency": str(args.per_host),
        "images.retries": str(args.retries),
        "images.deadline_seconds": str(args.deadline),
        "images.max_doc_frequency": "0",
        "images.phash_max_distance": "-1",
        "images.dedup_image_sets": "false",
    }
    for item in args.set:
        key, _, value = item.partition("=")
        pairs[key] = value
    out = []
    for key, value in pairs.items():
        out += ["--set", f"{key}={value}"]
    return out


def run_mmcurate(warc: Path, work: Path, settings: list[str], extra: list[str], env: dict, server: LocalWeb, n: int, name: str) -> Run:
    out = work / f"{name}-out"
    shutil.rmtree(out, ignore_errors=True)
    server.reset()
    cmd = [MMCURATE, "run", str(warc), "--output", str(out), "--stages", "images", "--quiet", "--no-resume", *settings, *extra]
    measured = measure(cmd, env=env, cwd=str(work))
    return Run(name, n, measured, server.stats(), read_mmcurate(out))


# ---------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------


def outcome_table(web: Web, runs: Sequence[Run]) -> str:
    kind_of = {u.url: u.kind for u in web.urls}
    rows = []
    for run in runs:
        by_kind: dict[str, Counter] = {}
        for url, outcome in run.outcomes.items():
            by_kind.setdefault(kind_of.get(url, "unplanned"), Counter())[outcome] += 1
        missing = run.urls - len(run.outcomes)
        for kind in (*KINDS, "unplanned"):
            if kind in by_kind:
                counts = by_kind[kind]
                rows.append([run.tool, kind, sum(counts.values()), ", ".join(f"{o} {c}" for o, c in counts.most_common())])
        if missing:
            rows.append([run.tool, "(no outcome)", missing, "URLs the output does not name"])
    return table("outcomes by the URL's planned kind", ["run", "planned kind", "URLs", "outcomes"], rows)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=2000, help="image URLs (default 2000; the issue's web: 20000)")
    parser.add_argument("--hosts", type=int, default=200, help="hosts (default 200; the issue's web: 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight, both tools (default 64)")
    parser.add_argument("--per-host", type=int, default=4, help="mmcurate's requests in flight per host (default 4)")
    parser.add_argument("--retries", type=int, default=1, help="retries, both tools (default 1)")
    parser.add_argument("--deadline", type=float, default=10.0,
                        help="mmcurate's images.deadline_seconds = img2dataset's timeout (default 10)")
    parser.add_argument("--server-processes", type=int, default=2)
    parser.add_argument("--tools", default="img2dataset,mmcurate", help="which to run (default both)")
    parser.add_argument("--no-baseline", action="store_true", help="skip mmcurate's run with images.http off")
    parser.add_argument("--no-hangless", action="store_true", help="skip the runs on the web without hanging URLs")
    parser.add_argument("--workers", type=int, default=0,
                        help="also run mmcurate on N DirectRunner worker processes (multi_processing), its politeness "
                             "checked as the one worker's is (issue 31 item 3)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="another mmcurate config override (repeatable)")
    parser.add_argument("--runner-arg", action="append", default=[], metavar="ARG",
                        help="an argument for `mmcurate run` (repeatable), e.g. --runner-arg=--runner-preset=local")
    parser.add_argument("--revision", metavar="REV",
                        help="run mmcurate as of this git revision (e.g. HEAD) instead of the working tree")
    parser.add_argument("--work", type=Path, default=BENCH_DIR / "web", help="work directory (replaced)")
    args = parser.parse_args(argv)
    tools = set(args.tools.split(","))

    i2d_python = ensure_venv("img2dataset-venv", IMG2DATASET_REQUIREMENTS) if "img2dataset" in tools else ""
    if i2d_python:
        peer = installed_versions(i2d_python, IMG2DATASET_PACKAGES)
        print("img2dataset venv: " + ", ".join(f"{k} {v}" for k, v in peer.items()))
    ours = installed_versions(MMCURATE_PYTHON, ("mmcurate", "apache-beam", "aiohttp", "pillow"))
    print("mmcurate venv:    " + ", ".join(f"{k} {v}" for k, v in ours.items()))

    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = client_env(work / "ca.pem")
    if args.revision:
        commit, path = snapshot(args.revision, work)
        env["PYTHONPATH"] = str(path)
        print(f"mmcurate as of {args.revision} ({commit[:12]}), from {path}")
    else:
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", *PACKAGE_DIRS], cwd=ROOT,
                               capture_output=True, text=True).stdout.split("\n")
        print(f"mmcurate from the working tree ({sum(1 for line in dirty if line)} changed files not committed)")
    http_port, https_port = localweb.free_ports(2)
    started = time.perf_counter()
    web = localweb.plan_web(args.urls, args.hosts, args.seed, http_port, https_port)
    pages = pages_of(web, args.seed)
    warc, url_list, n_all = write_inputs(web, pages, work)
    hangless = write_inputs(web, pages, work, frozenset({KIND_HANG})) if not args.no_hangless else None
    kinds = web.kinds()
    hang_urls = kinds[KIND_HANG]
    busiest, busiest_n = web.busiest_host()
    floor, floor_host = web.politeness_floor(args.per_host)
    hang_floor, hang_floor_host = web.politeness_floor(args.per_host, args.deadline)
    https_hosts = sum(h.https for h in web.hosts)
    latencies = sorted(h.latency for h in web.hosts)
    print(f"web (seed {args.seed}): {len(web.urls)} URLs on {len(web.hosts)} hosts ({https_hosts} HTTPS, "
          f"{sum(h.refuses for h in web.hosts)} refusing, {sum(h.disallows for h in web.hosts)} disallowing {localweb.DISALLOWED_PREFIX}), "
          f"{len(pages)} pages; ports {http_port} (http), {https_port} (https)")
    print("  URLs by kind: " + ", ".join(f"{k} {kinds[k]}" for k in KINDS))
    print(f"  time to first byte per host: median {latencies[len(latencies) // 2] * 1000:.0f} ms, "
          f"p90 {latencies[int(len(latencies) * 0.9)] * 1000:.0f} ms, max {latencies[-1]:.2f} s")
    print(f"  busiest host {web.hosts[busiest].address}: {busiest_n} URLs at {web.hosts[busiest].latency * 1000:.0f} ms "
          f"-> {busiest_n * web.hosts[busiest].latency / args.per_host:.1f} s at {args.per_host} in flight")
    print(f"  floor of a polite client's wall time (max over hosts of requests x latency / {args.per_host}): {floor:.1f} s "
          f"(host {web.hosts[floor_host].address}: {web.urls_per_host()[floor_host]} URLs at {web.hosts[floor_host].latency:.2f} s); "
          f"with each host's hanging URLs holding a slot for the deadline: {hang_floor:.1f} s (host {web.hosts[hang_floor_host].address})")

    runs: list[Run] = []
    with LocalWeb(web, processes=args.server_processes) as server:
        server.authority.write(work / "ca.pem")
        print(f"  served by {args.server_processes} processes, started in {time.perf_counter() - started:.1f} s\n")
        i2d_settings = dict(processes_count=1, thread_count=args.concurrency, retries=args.retries, timeout=args.deadline)
        print("img2dataset: download(" + ", ".join(f"{k}={v}" for k, v in i2d_settings.items()) +
              ", input_format=txt, output_format=files, resize_mode=no, disable_all_reencoding=False)")
        settings = mmcurate_settings(args)
        print("mmcurate:    mmcurate run PAGES --stages images " + " ".join(settings[1::2]) + " " + " ".join(args.runner_arg) + "\n")
        if "img2dataset" in tools:
            runs.append(run_img2dataset(i2d_python, url_list, work, i2d_settings, env, server, n_all, "img2dataset"))
            print(f"img2dataset done: {runs[-1].measured.wall:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
        if "mmcurate" in tools:
            runs.append(run_mmcurate(warc, work, settings, args.runner_arg, env, server, n_all, "mmcurate"))
            print(f"mmcurate done: {runs[-1].measured.wall:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
            if hangless:
                runs.append(run_mmcurate(hangless[0], work, settings, args.runner_arg, env, server, hangless[2],
                                         "mmcurate, no hangs"))
                print(f"mmcurate without hangs done: {runs[-1].measured.wall:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
            if args.workers:
                workers = ["--direct_num_workers", str(args.workers), "--direct_running_mode", "multi_processing"]
                runs.append(run_mmcurate(warc, work, settings, [*args.runner_arg, *workers], env, server, n_all,
                                         f"mmcurate, {args.workers} workers"))
                print(f"mmcurate on {args.workers} workers done: {runs[-1].measured.wall:.1f} s; "
                      f"load average {os.getloadavg()[0]:.1f}", flush=True)
            if not args.no_baseline:
                off = [s if s != "images.http=true" else "images.http=false" for s in settings]
                runs.append(run_mmcurate(warc, work, off, args.runner_arg, env, server, n_all, "mmcurate, http off"))
                print(f"mmcurate with images.http off done: {runs[-1].measured.wall:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
        if "img2dataset" in tools and hangless:
            runs.append(run_img2dataset(i2d_python, hangless[1], work, i2d_settings, env, server, hangless[2], "img2dataset, no hangs"))
            print(f"img2dataset without hangs done: {runs[-1].measured.wall:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)

    print()
    print(table(
        f"image retrieval on the local web: {len(web.hosts)} hosts, {args.concurrency} in flight, retries {args.retries}, "
        f"deadline/timeout {args.deadline:g} s",
        ["run", "URLs", "ok", "wall s", "images/s", "CPU s", "CPU s/1k images", "peak RSS MiB", "server cores", "server lag ms p99/max"],
        [[r.tool, r.urls, r.ok, r.measured.wall, r.images_per_s, r.measured.cpu,
          1000 * r.measured.cpu / r.ok if r.ok else float("nan"), r.measured.rss_mib, r.server.cores,
          f"{1000 * r.server.loop_lag_p99:.0f}/{1000 * r.server.max_loop_lag:.0f}"] for r in runs],
    ))
    print()
    print(outcome_table(web, [r for r in runs if r.tool != "mmcurate, http off"]))
    print()
    print(table(
        "what the server saw (per host: peak requests in flight, robots.txt fetches; requests for disallowed paths)",
        ["run", "requests", "statuses", "peak in flight", "robots.txt max", "hosts asked for robots.txt", "disallowed requests"],
        [[r.tool, sum(r.server.statuses.values()), ", ".join(f"{s or 'left'} {c}" for s, c in sorted(r.server.statuses.items())),
          "{} ({})".format(*r.server.peak_in_flight()), "{} ({})".format(*r.server.robots_fetches()),
          sum(1 for c in r.server.hosts.values() if c[1]), r.server.disallowed_requests()]
         for r in runs if r.tool != "mmcurate, http off"],
    ))

    failures = []
    for r in runs:
        if len(r.outcomes) < r.urls:
            failures.append(f"{r.tool}: {r.urls - len(r.outcomes)} of {r.urls} URLs have no outcome in its output (dropped)")
        if r.server.cores >= SERVER_CORE_LIMIT:
            failures.append(f"{r.tool}: the server used {r.server.cores:.2f} cores (limit {SERVER_CORE_LIMIT}): it may have been the bottleneck")
        if r.tool.startswith("mmcurate") and r.tool != "mmcurate, http off":
            peak, where = r.server.peak_in_flight()
            robots, robots_where = r.server.robots_fetches()
            if peak > args.per_host:
                failures.append(f"{r.tool}: {peak} requests in flight at {where} (limit {args.per_host})")
            if robots > 1:
                failures.append(f"{r.tool}: robots.txt fetched {robots} times from {robots_where}")
            if r.server.disallowed_requests():
                failures.append(f"{r.tool}: {r.server.disallowed_requests()} requests for paths robots.txt disallows")

    by_name = {r.tool: r for r in runs}
    i2d, mm, mm_free = by_name.get("img2dataset"), by_name.get("mmcurate"), by_name.get("mmcurate, no hangs")
    print("\nissue 31, item 2 (politeness on):")
    if mm:
        print(f"  floor the per-host limit puts on mmcurate's wall: {floor:.1f} s, {hang_floor:.1f} s with the hanging URLs; "
              f"mmcurate took {mm.measured.wall:.1f} s")
    if i2d and mm:
        ratio = mm.images_per_cpu_s / i2d.images_per_cpu_s if i2d.images_per_cpu_s else float("nan")
        print(f"  images per CPU-second: mmcurate {mm.images_per_cpu_s:.1f}, img2dataset {i2d.images_per_cpu_s:.1f}: "
              f"{ratio:.2f}x (target >= 1.5x): {'met' if ratio >= 1.5 else 'MISSED'}")
        off = by_name.get("mmcurate, http off")
        if off and mm.measured.cpu > off.measured.cpu:
            fetch_only = mm.ok / (mm.measured.cpu - off.measured.cpu)
            print(f"    past mmcurate's fixed cost (its run with images.http off: {off.measured.cpu:.1f} CPU s for start-up, "
                  f"read, extract, write): {fetch_only:.1f} images per CPU-second, "
                  f"{fetch_only / i2d.images_per_cpu_s:.2f}x img2dataset's (whose own start-up is in its figure)")
        wall = mm.images_per_s / i2d.images_per_s if i2d.images_per_s else float("nan")
        print(f"  images/s (wall): mmcurate {mm.images_per_s:.1f}, img2dataset {i2d.images_per_s:.1f}: "
              f"{wall:.2f}x (target >= 1x): {'met' if wall >= 1 else 'MISSED'}")
    if mm and mm_free:
        bound = 1.1 * (mm_free.measured.wall + hang_urls * args.deadline / args.concurrency)
        held = mm.measured.wall <= bound
        print(f"  with {hang_urls} hanging URLs: {mm.measured.wall:.1f} s; bound 1.1 x ({mm_free.measured.wall:.1f} s without them "
              f"+ {hang_urls} x {args.deadline:g} s / {args.concurrency}) = {bound:.1f} s: {'holds' if held else 'MISSED'}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    if mm:
        print("\nmmcurate kept politeness: at most the per-host limit in flight, one robots.txt per host, "
              "no disallowed path asked for")
    print(f"the server stayed under {SERVER_CORE_LIMIT} cores in every run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
