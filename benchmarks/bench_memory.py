"""Peak memory of ``mmcurate run`` at 1x and 10x the input, on DirectRunner.

Builds real-looking WARCs from the HTML pages and captured images of the fixture
WARCs (tests/fixtures/warc, and shared/fixtures/warc beside the checkout when present): page i is
fixture page ``i mod P`` under its own URL with a few paragraphs of real English
news sentences inserted in its main content (WMT22 sources from shared/data,
picked by a seed of i), so that every page is different; one page in ten repeats an
earlier page's text exactly and one in ten nearly (one paragraph changed), so dedup
has work. Image ``src`` values that point at captured images get a ``/v<g>/`` path
segment (g = i // ``--group``) and each group's captures, generated pictures of the
originals' sizes and formats (tests/imagegen.py), are written under those URLs, so
the number of distinct images grows with the input too. ``--markup N`` adds about N
bytes of markup that is not content to each page's head, different on every page: a
React-style JSON state blob (``<script id="__NEXT_DATA__">``) and a stylesheet, the
bulk that makes a Common Crawl page weigh ~100 KB when its text is a few KB.

Each run is a fresh ``mmcurate run`` subprocess with ``--runner-preset direct``
(one process; the extractor's worker child besides), sampled every 0.2 s with
psutil: the peak of the summed RSS of the run's whole process tree, and of its
largest process. Prints both for 1x and 10x and their 10x / 1x ratio, per stage set,
with the load average when each run ended (the figures are memory, not speed, so the
runs may share the machine). ``--factor 1`` measures one size only; ``--trace``
writes each run's RSS over time; ``--reuse-inputs`` takes inputs built before (their
sizes are in ``<workdir>/<factor>x.warc.json``).

    .venv/bin/python benchmarks/bench_memory.py --pages 4000 --factor 10 \\
        --stages heuristics,dedup --stages heuristics,dedup,quality,images
"""

from __future__ import annotations

import argparse
import contextlib
import html
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit, urlunsplit

import psutil
from PIL import Image
from warcio.archiveiterator import ArchiveIterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from imagegen import encode, photo  # noqa: E402
from warcbuild import WarcBuilder  # noqa: E402

from mmcurate.pipeline.build_models import shared_data  # noqa: E402

SHARED = shared_data().parent  # shared/ beside the checkout (or inside it), as `make models` finds it
FIXTURE_DIRS = [ROOT / "tests" / "fixtures" / "warc", SHARED / "fixtures" / "warc"]
_SRC = re.compile(rb'(src\s*=\s*["\'])([^"\']+)(["\'])', re.IGNORECASE)
_BODY_END = re.compile(rb"</body>", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]{3,12}")
_TAG = re.compile(rb"<[^>]*>")
_FIRST_P = re.compile(rb"<p[\s>]", re.IGNORECASE)
_HEAD_END = re.compile(rb"</head>", re.IGNORECASE)
SENTENCES = SHARED / "data" / "mt-wmt22" / "txt" / "sources" / "generaltest2022.en-de.src.en"


def fixture_records() -> tuple[list[tuple[str, bytes, str]], dict[str, tuple[bytes, str]]]:
    """(HTML pages as (url, payload, content type), captured images by URL)."""
    pages, images, seen = [], {}, set()
    for directory in FIXTURE_DIRS:
        for path in sorted(directory.glob("*.warc*")) if directory.is_dir() else []:
            if path.name in seen:
                continue
            seen.add(path.name)
            with open(path, "rb") as fh:
                for record in ArchiveIterator(fh):
                    if record.rec_type != "response" or not record.http_headers:
                        continue
                    if record.http_headers.get_statuscode() != "200":
                        continue
                    content_type = record.http_headers.get_header("Content-Type") or ""
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    body = record.content_stream().read()
                    if "html" in content_type:
                        pages.append((url, body, content_type))
                    elif content_type.startswith("image/"):
                        images[url] = (body, content_type)
    return pages, images


def sentences() -> list[str]:
    """Real English sentences (WMT22 news sources, shared/data), else the
    fixture pages' own words strung together."""
    path = SENTENCES
    if path.is_file():
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        return [line for line in lines if len(line.split()) >= 6]
    pages, _ = fixture_records()
    words = sorted({w.lower() for _, body, _ in pages for w in _WORD.findall(_TAG.sub(" ", body.decode("utf-8", "replace")))})
    rng = random.Random(0)
    return [" ".join(rng.choice(words) for _ in range(14)).capitalize() + "." for _ in range(2000)]


def paragraphs(rng: random.Random, pool: list[str], n: int) -> list[str]:
    out = []
    for _ in range(n):
        start = rng.randrange(len(pool))
        out.append(" ".join(pool[(start + k) % len(pool)] for k in range(rng.randint(3, 6))))
    return out


def group_image(original: bytes, content_type: str, seed: int) -> bytes:
    """A different picture of the original's size and format for each group (tests/
    imagegen.py's generated photos), so that images are distinct and do not all
    become one too-frequent cluster; the original when Pillow cannot read it."""
    try:
        with Image.open(io.BytesIO(original)) as image:
            size, fmt = image.size, image.format or "JPEG"
    except Exception:
        return original
    if min(size) < 48:
        return original  # icons: the images stage refuses them as too small anyway
    fmt = fmt if fmt in ("JPEG", "PNG", "GIF", "WEBP") else "PNG"
    return encode(photo(seed, size).convert("P") if fmt == "GIF" else photo(seed, size), fmt)


def versioned_url(absolute: str, g: int) -> str:
    """The URL of image ``absolute`` in group g: a path segment, so the extension stays last."""
    parts = urlsplit(absolute)
    head, _, name = parts.path.rpartition("/")
    return urlunsplit(parts._replace(path=f"{head}/v{g}/{name}"))


def markup(rng: random.Random, pool: list[str], size: int) -> bytes:
    """About ``size`` bytes of a page's non-content markup: half a JSON state blob of
    teaser items (titles from ``pool``), half CSS rules, drawn by ``rng``."""
    items, blob = [], 0
    while blob < size // 2:
        title = rng.choice(pool)
        item = {"id": rng.randrange(10**9), "title": title, "slug": "-".join(title.lower().split()[:6]),
                "image": {"width": rng.choice((320, 640, 1280)), "ratio": round(rng.random(), 4)}}
        items.append(item)
        blob += len(json.dumps(item)) + 1
    state = json.dumps({"props": {"pageProps": {"items": items}}, "page": "/[slug]", "buildId": f"{rng.getrandbits(48):x}"})
    rules, css = [], 0
    while css < size - size // 2:
        rule = (f".c{rng.getrandbits(24):06x}{{margin:{rng.randrange(40)}px {rng.randrange(40)}px;"
                f"color:#{rng.getrandbits(24):06x};font-size:{rng.randrange(10, 40)}px}}")
        rules.append(rule)
        css += len(rule)
    state = state.replace("</", "<\\/")  # no end tag inside the script
    css_text = "".join(rules)
    return f'<script id="__NEXT_DATA__" type="application/json">{state}</script><style>{css_text}</style>'.encode("utf-8")


def build_input(path: Path, n_pages: int, group: int, extra: int, markup_bytes: int = 0) -> tuple[int, int]:
    """Writes ``n_pages`` pages (and their groups' captured images) to ``path``;
    returns (pages, bytes of HTML written)."""
    pages, images = fixture_records()
    pool = sentences()
    html_bytes = 0
    with WarcBuilder.open(path) as warc:
        for g in range(0, (n_pages + group - 1) // group):
            for k, (url, (body, content_type)) in enumerate(images.items()):
                warc.image(versioned_url(url, g), group_image(body, content_type, g * len(images) + k), content_type)
            for i in range(g * group, min(n_pages, (g + 1) * group)):
                url, body, content_type = pages[i % len(pages)]
                # One page in ten repeats the text of the page one cycle before (same
                # fixture page): exactly, or with one paragraph changed.
                twin = i - len(pages) if i >= len(pages) and i % 10 in (3, 7) else i
                texts = paragraphs(random.Random(twin), pool, extra)
                if twin != i and i % 10 == 7:
                    texts[0] = paragraphs(random.Random(-i), pool, 1)[0]
                added = "".join(f"<p>{html.escape(t)}</p>\n" for t in texts).encode("utf-8")

                def versioned(match: re.Match, base=url, g=g) -> bytes:
                    absolute = urljoin(base, match.group(2).decode("latin-1"))
                    if absolute in images:
                        return match.group(1) + versioned_url(absolute, g).encode("latin-1") + match.group(3)
                    return match.group(0)

                page = _SRC.sub(versioned, body)
                # Inside the main content: before its first paragraph, else at the end.
                first = _FIRST_P.search(page)
                if first:
                    page = page[: first.start()] + added + page[first.start() :]
                else:
                    page = _BODY_END.sub(lambda _: added + b"</body>", page, count=1) if _BODY_END.search(page) else page + added
                if markup_bytes:
                    bulk = markup(random.Random(~i), pool, markup_bytes)
                    head = _HEAD_END.search(page)
                    page = page[: head.start()] + bulk + page[head.start() :] if head else bulk + page
                html_bytes += len(page)
                page_url = f"{url}{'&' if '?' in url else '?'}page={i}"
                warc.response(page_url, page, content_type, status=200)
    return n_pages, html_bytes


def tree_rss(proc: psutil.Process) -> tuple[int, int, int]:
    """(summed RSS of the process and its descendants, RSS of the largest one, RSS
    of the process itself: the launcher, when a phase runs in a child of its own)."""
    total = largest = own = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            rss = p.memory_info().rss
        except psutil.Error:
            continue
        total += rss
        largest = max(largest, rss)
        own = rss if p is proc else own
    return total, largest, own


def finished_phases(out: Path) -> str:
    """The phases of the run in ``out`` that have finished so far (their staging markers)."""
    return ",".join(sorted(m.parent.name for m in out.glob(".staging/*/*/_COMPLETE.json")))


def run(warc: Path, out: Path, stages: str, extra_args: list[str], trace: Path | None = None) -> dict:
    """One ``mmcurate run``, its process tree sampled every 0.2 s; with ``trace``, a
    line per second there (seconds, tree MB, largest process MB, phases finished,
    the launching process's own MB)."""
    cmd = [sys.executable, "-m", "mmcurate.pipeline.cli", "run", str(warc), "-o", str(out), "--quiet",
           "--runner-preset", "direct", "--stages", stages, *extra_args]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    watched = psutil.Process(proc.pid)
    peak_total = peak_largest = 0
    traced = 0.0
    with open(trace, "w") if trace else contextlib.nullcontext() as log:
        while proc.poll() is None:
            try:
                total, largest, own = tree_rss(watched)
            except psutil.Error:
                break
            peak_total, peak_largest = max(peak_total, total), max(peak_largest, largest)
            now = time.perf_counter() - started
            if log and now - traced >= 1.0:
                traced = now
                log.write(f"{now:.1f}\t{total >> 20}\t{largest >> 20}\t{finished_phases(out)}\t{own >> 20}\n")
                log.flush()
            time.sleep(0.2)
    proc.wait()
    wall = time.perf_counter() - started
    stderr = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "pages": manifest["totals"]["pages"],
        "kept": manifest["totals"]["kept"],
        "wall_s": round(wall, 1),
        "peak_tree_mb": round(peak_total / 2**20),
        "peak_process_mb": round(peak_largest / 2**20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4000, help="pages in the 1x input")
    parser.add_argument("--factor", type=int, default=10, help="size of the large input, in multiples of 1x")
    parser.add_argument("--stages", action="append", help="stage sets to measure (repeatable); default heuristics,dedup")
    parser.add_argument("--group", type=int, default=100, help="pages that share one set of captured images")
    parser.add_argument("--extra", type=int, default=6, help="paragraphs of varied text added to each page")
    parser.add_argument("--markup", type=int, default=0,
                        help="bytes of non-content markup (JSON state, CSS) added to each page's head")
    parser.add_argument("--workdir", type=Path, help="keep inputs and outputs here (default: a temporary directory)")
    parser.add_argument("--reuse-inputs", action="store_true", help="use the inputs already in --workdir")
    parser.add_argument("--beam-arg", action="append", default=[], help="extra flag for mmcurate run (repeatable)")
    parser.add_argument("--trace", action="store_true", help="write each run's RSS over time to <workdir>/<run>.rss.tsv")
    args = parser.parse_args()
    stage_sets = args.stages or ["heuristics,dedup"]
    factors = sorted({1, args.factor})
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        inputs = {}
        for factor in factors:
            path = work / f"{factor}x.warc.gz"
            info = path.with_suffix(".json")  # 1x.warc.json: what the input holds
            inputs[factor] = path
            if args.reuse_inputs and path.exists() and info.exists():
                built = json.loads(info.read_text())
                note = "built before"
            else:
                n, html_bytes = build_input(path, args.pages * factor, args.group, args.extra, args.markup)
                built = {"pages": n, "html_bytes": html_bytes}
                info.write_text(json.dumps(built))
                note = "built"
            print(f"input {factor}x: {built['pages']} pages, {built['html_bytes'] / 1e6:.0f} MB of HTML, "
                  f"{path.stat().st_size / 1e6:.0f} MB gzipped ({note})", flush=True)
        print(f"{'stages':<36} {'input':>5} {'pages':>7} {'kept':>6} {'wall s':>8} {'tree MB':>8} {'largest MB':>10} "
              f"{'load avg':>14}")
        for stages in stage_sets:
            results = {}
            for factor, path in inputs.items():
                name = f"out-{factor}x-{stages.replace(',', '-')}"
                trace = work / f"{name}.rss.tsv" if args.trace else None
                r = results[factor] = run(path, work / name, stages, args.beam_arg, trace)
                load = " ".join(f"{x:.1f}" for x in os.getloadavg())
                print(f"{stages:<36} {str(factor) + 'x':>5} {r['pages']:>7} {r['kept']:>6} {r['wall_s']:>8} "
                      f"{r['peak_tree_mb']:>8} {r['peak_process_mb']:>10} {load:>14}", flush=True)
            if len(results) > 1:
                one, ten = results[1], results[args.factor]
                print(f"{stages}: peak RSS {args.factor}x / 1x = {ten['peak_tree_mb'] / one['peak_tree_mb']:.2f} "
                      f"(process tree), {ten['peak_process_mb'] / one['peak_process_mb']:.2f} (largest process)",
                      flush=True)

if __name__ == "__main__":
    main()
