"""Image stage benchmark: HTTP retrieval throughput, and pHash near-duplicate quality.

    .venv/bin/python benchmarks/bench_images.py                 # both parts
    .venv/bin/python benchmarks/bench_images.py --images 3000 --skip-phash
    .venv/bin/python benchmarks/bench_images.py --skip-http

Part 1 serves ``--images`` generated JPEGs from a local aiohttp server (its own
process) on 127.0.0.1, over ``--hosts`` ports, each port a separate host for the
per-host limits. Each request waits a random latency (log-normal, median
``--latency-ms``); 3% of URLs answer 404, 2% answer 503 once then 200 (retried),
1% are served as text/html. The client is ``ImageFetcher`` + ``normalize_image``,
exactly what ``FetchImagesFn`` runs per batch. Printed: images/s (wall), images per
CPU-second of the client process (= per core when one core is busy), success rate
and peak RSS of the client process.

Part 2 measures pHash (imagehash, 64 bits) on scikit-image's CC0/public-domain
photographs, read from the scikit-image 0.26.0 wheel (downloaded with pip into a
temporary directory at run time; nothing is vendored): recall of near-duplicates
(resize, JPEG recompression, grayscale, blur, small crop) at Hamming distance <= k,
false-positive rate over pairs of distinct photographs, and whether the band keys
(k + 1 bands) found every pair within k.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import multiprocessing
import random
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from PIL import Image, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from imagegen import jpeg  # noqa: E402

from mmcurate.filters.images import hamming  # noqa: E402
from mmcurate.filters.lsh import band_keys, hex_bits  # noqa: E402
from mmcurate.pipeline.config import ImagesConfig  # noqa: E402
from mmcurate.stages.engines.image_decode import normalize_image  # noqa: E402
from mmcurate.stages.engines.image_fetch import ImageFetcher  # noqa: E402
from mmcurate.schemas.rows import STATUS_OK  # noqa: E402

# -- part 1: retrieval ---------------------------------------------------------------


def _serve(ports: list[int], distinct: int, latency_ms: float, ready) -> None:
    from aiohttp import web

    bodies = [jpeg(i, (400, 300)) for i in range(distinct)]
    rng = random.Random(7)
    seen_503: set[str] = set()

    async def image(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        await asyncio.sleep(rng.lognormvariate(0, 0.6) * latency_ms / 1000)
        roll = (n * 2654435761) % 100
        if roll < 3:
            return web.Response(status=404, text="gone")
        if roll < 5 and request.path not in seen_503:
            seen_503.add(request.path)
            return web.Response(status=503, text="busy", headers={"Retry-After": "0"})
        if roll < 6:
            return web.Response(text="<html></html>", content_type="text/html")
        return web.Response(body=bodies[n % distinct], content_type="image/jpeg")

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow: /admin/\n")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/robots.txt", robots)
        app.router.add_get("/img/{n}.jpg", image)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        for port in ports:
            await web.TCPSite(runner, "127.0.0.1", port).start()
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


def _free_ports(n: int) -> list[int]:
    import socket

    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def bench_http(n: int, hosts: int, latency_ms: float, concurrency: int, per_host: int, batch: int) -> None:
    ports = _free_ports(hosts)
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(ports, 200, latency_ms, ready), daemon=True)
    server.start()
    ready.wait(60)
    config = ImagesConfig(
        http=True,
        allowed_networks=("127.0.0.1/32",),
        concurrency=concurrency,
        per_host_concurrency=per_host,
        batch_size=batch,
        backoff_seconds=0.05,
        deadline_seconds=10,
    )
    urls = [f"http://127.0.0.1:{ports[i % hosts]}/img/{i}.jpg" for i in range(n)]

    async def run() -> tuple[int, dict[str, int], int]:
        fetcher = ImageFetcher(config)
        ok, failures = 0, {}
        try:
            for start in range(0, n, batch):
                for item in await fetcher.fetch_all(urls[start : start + batch]):
                    if item.ok:
                        result = normalize_image(item.url, item.payload, config)
                        reason = "" if result.status == STATUS_OK else result.reason
                    else:
                        reason = item.reason
                    if reason:
                        failures[reason] = failures.get(reason, 0) + 1
                    else:
                        ok += 1
        finally:
            await fetcher.close()
        return ok, failures, fetcher.requests

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    ok, failures, requests = asyncio.run(run())
    wall = time.perf_counter() - wall0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    server.terminate()
    print(f"HTTP retrieval: {n} URLs over {hosts} hosts, latency median {latency_ms:.0f} ms (log-normal)")
    print(f"  concurrency {concurrency}/worker, {per_host}/host, batch {batch}; {requests} requests (robots.txt included)")
    print(f"  wall {wall:.2f} s -> {n / wall:.0f} images/s; client CPU {cpu:.2f} s -> {n / cpu:.0f} images per CPU-second")
    print(f"  success {ok}/{n} = {ok / n:.1%} (expected ~94%: 3% 404, 1% text/html by design); failures {failures}")
    print(f"  peak RSS of the client process {cpu1.ru_maxrss / 1024:.0f} MiB")


# -- part 2: pHash ----------------------------------------------------------------------


def skimage_photos() -> dict[str, Image.Image]:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
             "scikit-image==0.26.0", "-d", tmp],
            check=True,
        )
        wheel = next(Path(tmp).glob("scikit_image-*.whl"))
        photos = {}
        with zipfile.ZipFile(wheel) as zf:
            for name in sorted(zf.namelist()):
                if name.startswith("skimage/data/") and name.endswith(".png"):
                    image = Image.open(io.BytesIO(zf.read(name)))
                    image.load()
                    if min(image.size) >= 64:
                        photos[Path(name).stem] = image.convert("RGB")
    return photos


def _encode_decode(image: Image.Image, quality: int) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buffer.getvalue()))


TRANSFORMS = {
    "resize 50%": lambda im: im.resize((im.width // 2, im.height // 2), Image.Resampling.LANCZOS),
    "JPEG q=30": lambda im: _encode_decode(im, 30),
    "grayscale": lambda im: im.convert("L").convert("RGB"),
    "blur r=1.5": lambda im: im.filter(ImageFilter.GaussianBlur(1.5)),
    "crop 3%": lambda im: im.crop((im.width * 3 // 100, im.height * 3 // 100, im.width * 97 // 100, im.height * 97 // 100)),
    "crop 10%": lambda im: im.crop((im.width // 10, im.height // 10, im.width * 9 // 10, im.height * 9 // 10)),
}


def bench_phash(ks: list[int]) -> None:
    import imagehash

    photos = skimage_photos()
    hashes = {name: str(imagehash.phash(im)) for name, im in photos.items()}
    print(f"pHash on {len(photos)} scikit-image 0.26.0 photographs (skimage/data/*.png, CC0/public domain)")
    variants = {t: {name: str(imagehash.phash(fn(im))) for name, im in photos.items()} for t, fn in TRANSFORMS.items()}
    header = "  transform      " + "".join(f"  k<={k:<3}" for k in ks) + "  median distance"
    print("recall of near-duplicates (share of photos whose variant is within k of the original)")
    print(header)
    for t, hs in variants.items():
        distances = sorted(hamming(hashes[n], h) for n, h in hs.items())
        cells = "".join(f"  {sum(d <= k for d in distances) / len(distances):6.1%}" for k in ks)
        print(f"  {t:<15}{cells}  {distances[len(distances) // 2]}")
    pairs = list(itertools.combinations(sorted(hashes), 2))
    distances = [hamming(hashes[a], hashes[b]) for a, b in pairs]
    print(f"false positives over {len(pairs)} pairs of distinct photographs")
    print("  " + "".join(f"  k<={k}: {sum(d <= k for d in distances) / len(pairs):.2%} ({sum(d <= k for d in distances)})" for k in ks))
    close = [(a, b, d) for (a, b), d in zip(pairs, distances) if d <= max(ks)]
    if close:
        print("  closest distinct pairs: " + ", ".join(f"{a}/{b}={d}" for a, b, d in sorted(close, key=lambda x: x[2])[:5]))
    # Band keys must find every pair within k (pigeonhole), originals and variants together.
    everything = list(hashes.values()) + [h for hs in variants.values() for h in hs.values()]
    for k in ks:
        keyed: dict[str, set[int]] = {}
        for i, h in enumerate(everything):
            for key in band_keys(hex_bits(h), k + 1):
                keyed.setdefault(key, set()).add(i)
        candidates = set()
        for members in keyed.values():
            candidates.update(itertools.combinations(sorted(members), 2))
        within = {(i, j) for i, j in itertools.combinations(range(len(everything)), 2) if hamming(everything[i], everything[j]) <= k}
        all_pairs = len(everything) * (len(everything) - 1) // 2
        print(
            f"  band keys, k={k}: {len(within - candidates)} pairs within k missed; "
            f"{len(candidates)} candidate pairs compared instead of {all_pairs} ({len(candidates) / all_pairs:.1%})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=80.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-phash", action="store_true")
    args = parser.parse_args()
    if not args.skip_http:
        bench_http(args.images, args.hosts, args.latency_ms, args.concurrency, args.per_host, args.batch)
    if not args.skip_phash:
        bench_phash([0, 5, 8, 10])


if __name__ == "__main__":
    main()
