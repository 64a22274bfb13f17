"""Cost of the safety steps: the adult URL lists' lookup and memory, and the safety
steps per document against the text path they ride on.

**Lookup** (``--lookup`` runs this part only):

1. In a fresh process, the default ``safety.urls`` lists (the shipped UT1 adult list:
   4.6 million domains and 19,586 URL prefixes) are loaded as a worker loads them
   (``stages.safety.load_blocklist``); the process's resident memory before and
   after is the memory the loaded lists cost (the goal: at most 150 MB).
2. 100,000 raw URLs, seeded, twice: as stage extract looks them up (a page's URL,
   then, unless it is refused, its image URLs: 0 to 16 on its own host, a subdomain
   of it or an image CDN; 2.5% of the pages on listed domains, 0.5% under listed
   URL prefixes, a share chosen here), and a stress mix of URLs drawn on their own
   (5% on listed domains, 1% under listed URL prefixes). Listed domains are every
   911th of the shipped list under a random subdomain or ``www.``; the other hosts
   are made up under common suffixes (``.com``, ``.co.uk``, ``.com.br``, ...), with
   paths, queries and some ports and user names.
3. Each URL is looked up from the raw string (``unsafe_urls.page_url``: host
   parsed, every list consulted, the verdict made) and timed on its own
   (``time.perf_counter_ns``, whose own cost is printed and included); prints the
   median and p99 (the goal: under 2 us each) of one pass and of each URL's
   fastest of three passes, the mean over a plain loop, and the times by outcome.

**Per document** (the default, after the lookup): reads the pages of the given
WARCs (Beam DirectRunner, in-process) and times, per page, the text path --
extraction (the configured extractor, in-process) and the heuristics stage's steps
without the safety block -- and the safety steps on the same page and document:
the page URL and every image URL against the default lists, the flagged-word
document and node rules (language as the heuristics stage sets it), and
personal-data redaction. Prints CPU microseconds per document for each, and the
safety steps' share of the text path (the goal: under 5%).

    .venv/bin/python benchmarks/bench_safety.py --lookup
    .venv/bin/python benchmarks/bench_safety.py
    .venv/bin/python benchmarks/bench_safety.py --repeat 5 tests/fixtures/warc/demo.warc.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from mmcurate.filters import flagged_words, unsafe_urls
from mmcurate.filters.language import load_language_model
from mmcurate.filters.pii import redact_document
from mmcurate.runners.direct import runner_for
from mmcurate.pipeline.config import load_config
from mmcurate.schemas import Document
from mmcurate.stages.engines.extraction.page_documents import page_metadata
from mmcurate.stages.engines.extraction.registry import load_extractor
from mmcurate.stages.heuristics import heuristic_steps, load_flagged_words
from mmcurate.stages.read import ReadWarc
from mmcurate.stages.safety import load_blocklist, redactor

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WARCS = [
    ROOT / "tests/fixtures/warc/clueweb-quirk.warc.gz",
    ROOT / "tests/fixtures/warc/demo.warc.gz",
    ROOT / "tests/fixtures/warc/books.toscrape.warc",
]
LOOKUP_URLS = 100_000


def read_pages(warcs: list[Path]) -> list:
    config = load_config()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = str(Path(tmp) / "pages")
        with beam.Pipeline(runner=runner_for(PipelineOptions(["--runner=DirectRunner"]))) as p:
            read = p | ReadWarc([str(w) for w in warcs], config.read)
            _ = read.pages | beam.Map(lambda pg: pickle.dumps(pg).hex()) | beam.io.WriteToText(prefix, shard_name_template="")
        return [pickle.loads(bytes.fromhex(line)) for line in Path(prefix).read_text().split()]


def blocklist() -> unsafe_urls.UrlBlocklist:
    """The default ``safety.urls`` lists, as a worker loads them."""
    return load_blocklist(load_config().safety.urls)


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def list_memory() -> dict:
    """Resident memory of a fresh process before and after it loads the default lists
    (the modules the loading imports are imported before the first reading)."""
    out = subprocess.run([sys.executable, __file__, "--child-memory"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child_memory() -> None:
    import dawg  # noqa: F401  (imported before the first reading, as the worker has it)

    config = load_config()
    before = _rss_mb()
    started = time.perf_counter()
    lists = load_blocklist(config.safety.urls)
    seconds = time.perf_counter() - started
    after = _rss_mb()
    assert lists.match("https://www.0-porno.com/") is not None
    print(json.dumps({"before_mb": before, "after_mb": after, "load_s": seconds}))


_WORDS = (
    "news sport weather city garden river market school music travel photo museum recipe kitchen world data "
    "health science library family studio house design energy forest island ocean mountain bakery vintage "
    "auto bike coffee books paper local daily online shop store digital cloud media press review journal "
    "blog forum wiki archive gallery event ticket hotel village county state national public open free best"
).split()
_SUFFIXES = ["com"] * 12 + ["org"] * 3 + ["net"] * 2 + [
    "de", "fr", "co.uk", "it", "nl", "es", "pl", "ru", "jp", "com.br", "com.au", "ca", "in", "info", "io", "edu", "gov",
    "cn", "com.cn", "co.jp", "ac.uk", "ch", "se", "no", "be", "at", "cz", "eu", "us", "org.uk",
]


def _path(rng: random.Random) -> str:
    segments = [rng.choice(_WORDS) + (str(rng.randrange(1000)) if rng.random() < 0.3 else "") for _ in range(rng.randint(0, 5))]
    path = "/" + "/".join(segments)
    if rng.random() < 0.3:
        path += rng.choice([".html", ".jpg", ".png", ".php", "/"])
    if rng.random() < 0.2:
        path += f"?id={rng.randrange(10**6)}&{rng.choice(_WORDS)}={rng.choice(_WORDS)}"
    return path


# Hosts of image CDNs that pages of many sites load images from.
_CDNS = [
    "i0.wp.com", "upload.wikimedia.org", "images.squarespace-cdn.com", "cdn.shopify.com", "pbs.twimg.com",
    "lh3.googleusercontent.com", "s3.amazonaws.com", "media.giphy.com", "i.imgur.com", "static.wixstatic.com",
    "cdn.pixabay.com", "images.unsplash.com", "d1e00ek4ebabms.cloudfront.net", "img.youtube.com",
]


def _made_up_host(rng: random.Random) -> str:
    labels = [rng.choice(_WORDS) + rng.choice(["", "", str(rng.randrange(100)), "-" + rng.choice(_WORDS)])]
    if rng.random() < 0.5:
        labels.insert(0, rng.choice(["www", "www", "en", "news", "cdn", "img", "static", "blog", "m", "shop"]))
    return ".".join(labels) + "." + rng.choice(_SUFFIXES)


def _listed_samples(lists: unsafe_urls.UrlBlocklist) -> tuple[list[str], list[str]]:
    """Every 911th domain of the shipped list (spread over it), and its URL prefixes."""
    listed = [domain for i, domain in enumerate(lists.domain_indexes[0].domains()) if i % 911 == 0]
    with gzip.open(unsafe_urls.shipped_list_dir() / unsafe_urls.SHIPPED_URLS, "rt", encoding="utf-8") as fh:
        prefixes = [line.strip() for line in fh if line.strip()]
    return listed, prefixes


def _listed_url(rng: random.Random, scheme: str, listed: list[str]) -> str:
    return f"{scheme}{rng.choice(['', 'www.', 'cdn.', 'img.', 'm.', 'live.'])}{rng.choice(listed)}{_path(rng)}"


def _prefix_url(rng: random.Random, scheme: str, prefixes: list[str]) -> str:
    return f"{scheme}{rng.choice(prefixes)}{rng.choice(['', '/x', '?p=2', 'index.html'])}"


def _unlisted_url(rng: random.Random, scheme: str, host: str = "") -> str:
    host = host or _made_up_host(rng)
    if rng.random() < 0.02:
        host = rng.choice(["user@", "User:pw@"]) + host.upper()
    if rng.random() < 0.02:
        host += f":{rng.choice([8080, 443, 8443])}"
    return f"{scheme}{host}{_path(rng)}"


def stress_urls(n: int, lists: unsafe_urls.UrlBlocklist, seed: int = 0) -> list[str]:
    """``n`` raw URLs, each drawn on its own: 5% on listed domains (under a random
    subdomain or ``www.``, with a path), 1% under listed URL prefixes, the rest on
    made-up hosts under common suffixes."""
    rng = random.Random(seed)
    listed, prefixes = _listed_samples(lists)
    out = []
    for _ in range(n):
        draw = rng.random()
        scheme = rng.choice(["https://", "https://", "http://"])
        if draw < 0.05:
            out.append(_listed_url(rng, scheme, listed))
        elif draw < 0.06:
            out.append(_prefix_url(rng, scheme, prefixes))
        else:
            out.append(_unlisted_url(rng, scheme))
    return out


def stream_urls(n: int, lists: unsafe_urls.UrlBlocklist, seed: int = 0) -> list[str]:
    """``n`` raw URLs in the order stage extract looks them up: a page's URL, then,
    when the page is not refused, the URLs of its images (0 to 16, on its own host,
    a subdomain of it or an image CDN). 2.5% of the pages are on listed domains and
    0.5% under listed URL prefixes (a share chosen here, not measured on a crawl)."""
    rng = random.Random(seed)
    listed, prefixes = _listed_samples(lists)
    out: list[str] = []
    while len(out) < n:
        draw = rng.random()
        scheme = rng.choice(["https://", "https://", "http://"])
        if draw < 0.025:
            out.append(_listed_url(rng, scheme, listed))
            continue
        if draw < 0.03:
            out.append(_prefix_url(rng, scheme, prefixes))
            continue
        host = _made_up_host(rng)
        out.append(_unlisted_url(rng, scheme, host))
        for _ in range(rng.randint(0, 16)):
            where = rng.random()
            image_host = host if where < 0.5 else (f"{rng.choice(['cdn', 'img', 'static'])}.{host.removeprefix('www.')}" if where < 0.8 else rng.choice(_CDNS))
            out.append(f"https://{image_host}{_path(rng)}")
    return out[:n]


def time_lookups(urls: list[str], lists: unsafe_urls.UrlBlocklist, passes: int, label: str) -> None:
    check = unsafe_urls.page_url
    for url in urls[:1000]:  # warm-up
        check(url, blocklist=lists)
    clock = time.perf_counter_ns
    rounds = []
    for _ in range(passes):
        times = []
        for url in urls:
            t0 = clock()
            check(url, blocklist=lists)
            times.append(clock() - t0)
        rounds.append(times)
    started = time.perf_counter()
    for url in urls:
        check(url, blocklist=lists)
    mean_us = (time.perf_counter() - started) / len(urls) * 1e6

    def quantiles(times: list[int]) -> str:
        times = sorted(times)
        return f"median {times[len(times) // 2] / 1000:.2f} us, p99 {times[int(len(times) * 0.99)] / 1000:.2f} us"

    single = sorted(rounds, key=lambda times: sorted(times)[len(times) // 2])[len(rounds) // 2]
    fastest = [min(per_url) for per_url in zip(*rounds)]
    by_outcome: dict[str, list[int]] = {}
    for url, fast in zip(urls, fastest):
        verdict = check(url, blocklist=lists)
        by_outcome.setdefault("not listed" if verdict.keep else verdict.reason, []).append(fast)
    refused = len(urls) - len(by_outcome.get("not listed", ()))
    print(f"  {label}: {len(urls):,} raw URLs, {refused:,} ({100 * refused / len(urls):.2f}%) refused; each URL timed on its own")
    print(f"    one pass (median pass of {passes}): {quantiles(single)}; plain loop mean {mean_us:.2f} us")
    print(f"    each URL's fastest of {passes} passes (other processes' share of the CPU left out): {quantiles(fastest)}")
    for outcome, times in sorted(by_outcome.items()):
        print(f"      {outcome:<24} {len(times):>7,} URLs: {quantiles(times)}")


def lookup(n: int = LOOKUP_URLS, passes: int = 3) -> None:
    memory = list_memory()
    lists = blocklist()
    clock = time.perf_counter_ns
    overhead = []
    for _ in range(10_000):
        t0 = clock()
        overhead.append(clock() - t0)
    print("adult URL lists (default safety.urls: the shipped UT1 list), looked up by unsafe_urls.page_url:")
    print(
        f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs;"
        f" the timer's own cost, included in every figure: {sorted(overhead)[5000] / 1000:.2f} us"
    )
    time_lookups(stream_urls(n, lists), lists, passes, "pages and their images, as stage extract looks them up")
    time_lookups(stress_urls(n, lists), lists, passes, "stress mix, 6% listed")
    print(
        f"  memory of the loaded lists (fresh process, RSS): {memory['after_mb'] - memory['before_mb']:.1f} MB"
        f" ({memory['before_mb']:.0f} -> {memory['after_mb']:.0f} MB), loaded in {memory['load_s']:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("warcs", nargs="*", type=Path, default=DEFAULT_WARCS)
    parser.add_argument("--repeat", type=int, default=3, help="passes over the pages (the median pass is reported)")
    parser.add_argument("--lookup", action="store_true", help="the URL lookup and memory figures only")
    parser.add_argument("--urls", type=int, default=LOOKUP_URLS, help="URLs looked up")
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the URLs")
    parser.add_argument("--child-memory", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_memory:
        _child_memory()
        return
    lookup(args.urls, args.passes)
    if args.lookup:
        return

    config = load_config()
    pages = read_pages(args.warcs)
    extractor = load_extractor(config.extract.extractor)
    model = load_language_model(config.heuristics.language.model_path)
    # Without flagged_words= the steps leave the safety block out: the text path alone.
    text_steps = heuristic_steps(config.heuristics, language_model=model)
    words = load_flagged_words(config.heuristics.flagged_words)
    fw = config.heuristics.flagged_words
    node_rule = flagged_words.FlaggedNodeCleanup(words, fw.max_node_ratio)
    lists = blocklist()
    pii = redactor(config.safety.pii)
    clock = time.process_time  # CPU time of this process: robust to other work on a shared machine

    def one_pass() -> tuple[float, float, float, float, int, int]:
        text = urls = fwords = redact = 0.0
        docs = images = 0
        for page in pages:
            t0 = clock()
            extraction = extractor(page.html, page.url, config.extract)
            doc = Document(
                doc_id=page.doc_id, url=page.url, provenance=page.provenance, nodes=tuple(extraction.nodes),
                title=extraction.title, metadata=page_metadata(page, config.extract),
            )
            for step in text_steps:
                result = step(doc)
                if isinstance(result, Document):
                    doc = result
            text += clock() - t0
            t1 = clock()
            unsafe_urls.page_url(page.url, blocklist=lists)
            for node in doc.image_nodes:
                unsafe_urls.image_url(node.src, blocklist=lists)
            t2 = clock()
            flagged_words.document_ratio(doc, words=words, max_ratio=fw.max_document_ratio, max_ratio_by_language={})
            node_rule(doc)
            t3 = clock()
            redact_document(doc, pii, default_region=config.safety.pii.phone_region)
            t4 = clock()
            urls += t2 - t1
            fwords += t3 - t2
            redact += t4 - t3
            docs += 1
            images += len(doc.image_nodes)
        return text, urls, fwords, redact, docs, images

    passes = [one_pass() for _ in range(args.repeat)]
    text, urls, fwords, redact, docs, images = sorted(passes, key=lambda p: p[0])[len(passes) // 2]
    per = lambda seconds: 1e6 * seconds / max(1, docs)  # noqa: E731
    safety = urls + fwords + redact
    print(f"pages: {docs} from {len(args.warcs)} WARC(s), {images} image nodes; median of {args.repeat} passes, CPU time of one process")
    print(f"{'step':<42} {'us/doc':>10} {'share of text path':>19}")
    for name, seconds in [
        ("text path: extraction + heuristics", text),
        ("adult URL lists (page + every image)", urls),
        ("flagged words (document + node rules)", fwords),
        ("personal-data redaction", redact),
        ("safety steps together", safety),
    ]:
        print(f"{name:<42} {per(seconds):>10.1f} {100 * seconds / text:>18.2f}%")
    print(f"per-pass spread of the text path: {statistics.pstdev([p[0] for p in passes]) / max(1e-9, text) * 100:.1f}%")


if __name__ == "__main__":
    main()
