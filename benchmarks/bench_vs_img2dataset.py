"""Image retrieval: mmcurate side by side with img2dataset, on the same URL list,
served from 127.0.0.1 by a local ``http.server`` (ThreadingHTTPServer, its own
process) that serves generated JPEGs, in one invocation.

* img2dataset (PyPI, in /tmp/mmcurate-bench/img2dataset-venv): ``download`` with
  one process and 64 threads, input_format=txt, resize_mode=no,
  disable_all_reencoding=True, output_format=files, retries=0.
* mmcurate: the images stage's fetch step, ``FetchImagesFn`` (its event loop and
  host scheduler fetching, ``normalize_image`` decoding, validating and hashing
  each payload as it arrives), handed the URLs as the stage's ``GroupByHost`` hands
  them, without the rest of a Beam pipeline -- with concurrency 64, once with the
  default 4 requests per host (all URLs are one host here) and once with 64 per
  host. It keeps no bytes (the stage passes each result on); img2dataset writes
  files.

Each side is its own process (benchmarks/peers.py): wall, CPU (user + system,
children included: img2dataset forks its worker), peak RSS.

    .venv/bin/python benchmarks/bench_vs_img2dataset.py              # 2000 URLs
    .venv/bin/python benchmarks/bench_vs_img2dataset.py --urls 10000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import BENCH_DIR, MMCURATE_PYTHON, ROOT, ensure_venv, installed_versions, measure, table  # noqa: E402

IMG2DATASET_REQUIREMENTS = ("img2dataset==1.47.0",)
IMG2DATASET_PACKAGES = ("img2dataset", "requests", "pyarrow", "opencv-python-headless", "albumentations")
DISTINCT_IMAGES = 200
THREADS = 64

IMG2DATASET = r"""
import sys
from img2dataset import download

if __name__ == "__main__":  # img2dataset's workers are spawned: they re-import this file
    url_list, out = sys.argv[1:3]
    download(url_list=url_list, output_folder=out, processes_count=1, thread_count=64, input_format="txt",
             output_format="files", resize_mode="no", disable_all_reencoding=True, retries=0, timeout=10,
             incremental_mode="incremental", number_sample_per_shard=10000, distributor="multiprocessing")
"""
IMG2DATASET_SETTINGS = (
    "download(processes_count=1, thread_count=64, input_format=txt, output_format=files, resize_mode=no, "
    "disable_all_reencoding=True, retries=0, timeout=10, number_sample_per_shard=10000, distributor=multiprocessing)"
)


def _serve(port: int, ready) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from imagegen import jpeg

    images = [jpeg(i) for i in range(DISTINCT_IMAGES)]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 - http.server's name
            if not self.path.startswith("/img/"):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = images[int(self.path.rsplit("/", 1)[1].split(".")[0]) % DISTINCT_IMAGES]
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    ready.set()
    server.serve_forever()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mmcurate_client(url_list: str, per_host: int) -> None:
    """Runs inside the mmcurate virtualenv: every URL through the stage's fetch step,
    one bundle, as grouped by host; print counts."""
    from collections import defaultdict

    from mmcurate.pipeline.config import ImagesConfig
    from mmcurate.stages.engines.image_fetch import politeness_host
    from mmcurate.stages.image_retrieval import FetchImagesFn

    urls = Path(url_list).read_text().split()
    config = ImagesConfig(http=True, allowed_networks=("127.0.0.1/32",), concurrency=THREADS, per_host_concurrency=per_host)
    by_host: dict[str, list] = defaultdict(list)
    for url in urls:
        by_host[politeness_host(url)].append((url, ()))
    counts: dict[str, int] = {}

    def count(result) -> None:
        key = result.reason or "ok"
        counts[key] = counts.get(key, 0) + 1

    fetch = FetchImagesFn(config)
    fetch.setup()
    try:
        fetch.start_bundle()
        for element in by_host.items():
            for result in fetch.process(element):
                count(result)
        for windowed in fetch.finish_bundle():
            count(windowed.value)
    finally:
        fetch.teardown()
    print(json.dumps(counts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=2000, help="URLs to fetch (default 2000)")
    parser.add_argument("--mmcurate-client", nargs=2, metavar=("URL_LIST", "PER_HOST"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mmcurate_client:
        mmcurate_client(args.mmcurate_client[0], int(args.mmcurate_client[1]))
        return

    python = ensure_venv("img2dataset-venv", IMG2DATASET_REQUIREMENTS)
    peer = installed_versions(python, IMG2DATASET_PACKAGES)
    ours = installed_versions(MMCURATE_PYTHON, ("mmcurate", "aiohttp", "pillow", "imagehash"))
    print("img2dataset venv: " + ", ".join(f"{k} {v}" for k, v in peer.items()))
    print("mmcurate venv:    " + ", ".join(f"{k} {v}" for k, v in ours.items()))
    print("img2dataset: " + IMG2DATASET_SETTINGS)
    print(f"mmcurate:    FetchImagesFn (the stage's fetch step), ImagesConfig(http=True, concurrency={THREADS}, "
          "per_host_concurrency=4 | 64, allowed_networks=127.0.0.1/32)")

    work = BENCH_DIR / "images"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    port = _free_port()
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(port, ready), daemon=True)
    server.start()
    if not ready.wait(60):
        raise SystemExit("the image server did not start")
    url_list = work / "urls.txt"
    url_list.write_text("".join(f"http://127.0.0.1:{port}/img/{i}.jpg\n" for i in range(args.urls)))
    print(f"serving {DISTINCT_IMAGES} generated JPEGs (320x240) at 127.0.0.1:{port}; {args.urls} URLs\n")
    try:
        script = work / "img2dataset_run.py"
        script.write_text(IMG2DATASET)
        i2d = measure([python, str(script), str(url_list), str(work / "img2dataset-out")])
        stats = [json.loads(p.read_text()) for p in (work / "img2dataset-out").glob("*_stats.json")]
        i2d_ok = sum(s.get("successes", 0) for s in stats)
        i2d_fail: dict[str, int] = {}
        for s in stats:
            for reason, n in (s.get("status_dict") or {}).items():
                if reason != "success":
                    i2d_fail[reason] = i2d_fail.get(reason, 0) + n
        rows = [["img2dataset", args.urls, i2d_ok, i2d.wall, args.urls / i2d.wall, 1000 * i2d.cpu / args.urls, i2d.rss_mib,
                 json.dumps(i2d_fail) if i2d_fail else "-"]]
        for per_host in (4, THREADS):
            mm = measure([MMCURATE_PYTHON, __file__, "--mmcurate-client", str(url_list), str(per_host)])
            counts = json.loads(mm.stdout.strip().splitlines()[-1])
            rows.append([f"mmcurate ({per_host}/host)", args.urls, counts.get("ok", 0), mm.wall, args.urls / mm.wall,
                         1000 * mm.cpu / args.urls, mm.rss_mib, json.dumps({k: v for k, v in counts.items() if k != "ok"}) or "-"])
            rows.append(["  ratio to img2dataset", "", "", mm.wall / i2d.wall, i2d.wall / mm.wall, mm.cpu / i2d.cpu,
                         mm.rss_mib / i2d.rss_mib, ""])
    finally:
        server.terminate()
    print(table(
        "3./4. image retrieval and memory (ratio rows: wall, speed-up, CPU, RSS as mmcurate / img2dataset)",
        ["tool", "urls", "ok", "wall s", "images/s", "CPU s/1k images", "peak RSS MiB", "failures"],
        rows,
    ))


if __name__ == "__main__":
    main()
