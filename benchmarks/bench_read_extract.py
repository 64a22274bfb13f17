"""Read + extract throughput on one core, and peak memory.

Builds a WARC of real HTML pages (the pages of ../shared/fixtures/warc/, repeated
under distinct URLs until --pages is reached; images and other records of those
files are carried along), then measures:

1. the read stage alone (warcio streaming, HTTP parsing, charset decoding);
2. extraction alone (trafilatura + image recovery), in-process, per page;
3. read + extract as a Beam pipeline on the DirectRunner with one worker, with
   extraction under its per-page time limit as in production: on its own thread
   (``extract.isolation: thread``, the default) and in a child process
   (``isolation: process``);
4. extraction F1 on labelled pages (tests/pagebuild.py, golden text; bag of words),
   per page kind and over all; ``--f1-only`` measures this alone.

Prints pages/s, CPU seconds per 1,000 pages and peak RSS (this process and its
children).

    .venv/bin/python benchmarks/bench_read_extract.py --pages 2000
    .venv/bin/python benchmarks/bench_read_extract.py --f1-only
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from pagebuild import labelled_pages, token_f1  # noqa: E402
from warcbuild import WarcBuilder, html_responses  # noqa: E402

from mmcurate.pipeline.config import ExtractConfig, ReadConfig  # noqa: E402
from mmcurate.runners.direct import runner_for  # noqa: E402
from mmcurate.schemas import Document, Provenance  # noqa: E402
from mmcurate.stages.extract import ExtractDocuments  # noqa: E402
from mmcurate.stages.engines.extraction.registry import load_extractor  # noqa: E402
from mmcurate.stages.read import ReadWarc  # noqa: E402

# ../shared beside the checkout, or beside the folder of worktrees.
SHARED = next(
    (p / "shared" / "fixtures" / "warc" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared" / "fixtures" / "warc").is_dir()),
    ROOT.parent / "shared" / "fixtures" / "warc",
)


def source_pages() -> list[tuple[str, bytes, str]]:
    """(url, payload, content type) of every HTML response in the shared fixtures."""
    return [(url, payload, ctype) for path in sorted(SHARED.glob("*.warc*")) for url, payload, ctype, _ in html_responses(path)]


def build_warc(path: Path, n_pages: int) -> int:
    pages = source_pages()
    total = 0
    with WarcBuilder.open(path) as warc:
        i = 0
        while i < n_pages:
            url, payload, ctype = pages[i % len(pages)]
            warc.response(f"{url}?copy={i}", payload, ctype)
            total += len(payload)
            i += 1
    return total


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, kids


def measure(label: str, n: int, fn) -> None:
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    fn()
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    print(f"{label:<44} {n / wall:>10.1f} {1000 * cpu / n:>16.2f} {wall:>9.2f}")


def read_only(path: Path) -> int:
    """The read stage's per-record work, without Beam: decode every HTML page."""
    from mmcurate.stages.read import ReadWarcFileFn

    fn = ReadWarcFileFn(ReadConfig())
    fn.setup()
    return sum(1 for _ in fn.process(str(path)))


def extract_only(pages: list[tuple[str, str]], config: ExtractConfig) -> list[float]:
    extractor = load_extractor(config.extractor)
    times = []
    for url, html in pages:
        t0 = time.perf_counter()
        extractor(html, url, config)
        times.append(time.perf_counter() - t0)
    return times


def beam_read_extract(path: Path, isolation: str) -> None:
    options = PipelineOptions(["--runner=DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory"])
    with beam.Pipeline(runner=runner_for(options), options=options) as p:
        read = p | ReadWarc([str(path)], ReadConfig())
        extracted = read.pages | ExtractDocuments(ExtractConfig(isolation=isolation))
        _ = extracted.kept | "Count" >> beam.combiners.Count.Globally()


def extraction_f1(config: ExtractConfig, n_per_kind: int = 5) -> None:
    """Bag-of-words precision, recall and F1 of the extracted text against the golden
    text of ``n_per_kind`` labelled pages of each kind, per kind and over all."""
    labelled = labelled_pages(n_per_kind)
    extractor = load_extractor(config.extractor)
    by_kind: dict[str, list[tuple[float, float, float]]] = {}
    for page in labelled:
        nodes = extractor(page.html, page.url, config).nodes
        text = Document(doc_id="f1", url=page.url, provenance=Provenance(warc_file=""), nodes=nodes).text
        by_kind.setdefault(page.kind, []).append(token_f1(text, "\n".join(page.text)))
    for kind, scores in [*by_kind.items(), ("all", [s for scores in by_kind.values() for s in scores])]:
        means = [sum(s[i] for s in scores) / len(scores) for i in range(3)]
        label = f"extraction on {len(labelled)} labelled pages" if kind == "all" else f"  {kind} ({len(scores)} pages)"
        print(f"{label}: precision {means[0]:.3f}, recall {means[1]:.3f}, F1 {means[2]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--f1-only", action="store_true", help="measure extraction F1 on the labelled pages only")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.f1_only:
        extraction_f1(ExtractConfig(timeout_seconds=0))
        return

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.warc.gz"
        html_bytes = build_warc(path, args.pages)
        print(f"input: {args.pages} pages, {html_bytes / 1e6:.1f} MB of HTML, {path.stat().st_size / 1e6:.1f} MB gzipped WARC")
        print(f"{'step':<44} {'pages/s':>10} {'CPU s/1000 pages':>16} {'wall s':>9}")
        measure("read (warcio + HTTP + charset)", args.pages, lambda: read_only(path))
        pages = [(url, payload.decode("utf-8", "replace")) for url, payload, _ in source_pages()]
        pages = [pages[i % len(pages)] for i in range(args.pages)]
        config = ExtractConfig(timeout_seconds=0)
        times: list[float] = []
        measure("extract (trafilatura + images), in-process", args.pages, lambda: times.extend(extract_only(pages, config)))
        for isolation in ("thread", "process"):
            measure(f"read + extract, DirectRunner, 1 worker, {isolation}", args.pages, lambda: beam_read_extract(path, isolation))
        q = statistics.quantiles(times, n=100)
        print(f"extract ms/page: median {1000 * q[49]:.1f}, p90 {1000 * q[89]:.1f}, p99 {1000 * q[98]:.1f}, max {1000 * max(times):.1f}")
        own, kids = peak_rss_mb()
        print(f"peak RSS: this process {own:.0f} MB, largest child {kids:.0f} MB")
        extraction_f1(config)


if __name__ == "__main__":
    main()
