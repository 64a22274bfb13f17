"""Where one process's CPU goes on the text path, per page, and whether it grows with
the number of pages.

1. Parts (default): --pages pages of the generated WARC of bench_vs_datatrove.py
   (the fixtures' real pages repeated under distinct URLs), read, then extracted
   and filtered in this process as ``mmcurate run --stages heuristics`` does with
   bench_vs_datatrove's settings (balanced mode, Gopher, C4 and FineWeb rules),
   without Beam. Each part of extraction and each heuristics step is timed with
   ``time.thread_time`` (CPU of this thread); printed as CPU ms per page.
2. --windows: the same command as bench_vs_datatrove's mmcurate side, run in this
   process (one in-memory DirectRunner worker), with the CPU of the process sampled
   every 2 s against the pages extracted so far: CPU ms per page over each window
   of about --window pages, and the time the garbage collector took per generation.
   A cost that grows with the number of pages shows as rising windows.

    .venv/bin/python benchmarks/bench_text_parts.py --pages 300
    .venv/bin/python benchmarks/bench_text_parts.py --windows --pages 5000 --window 500
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import importlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_vs_datatrove import MMCURATE_TEXT_SETTINGS, ONE_WORKER  # noqa: E402
from peers import BENCH_DIR, build_repeated_warc  # noqa: E402

SPENT: collections.Counter = collections.Counter()
ADAPTER = "mmcurate.stages.engines.extraction.trafilatura_adapter"
PAGE_DOCUMENTS = "mmcurate.stages.engines.extraction.page_documents"
ADAPTER_PARTS = ("parse_html", "document_base", "index_page", "lead_hints", "page_title", "_trafilatura_document",
                 "locate_text", "place_images", "merge_nodes", "hreflang_links")


def _timing(func, label: str):
    """``func`` adding its thread CPU to ``SPENT[label]``; a call made inside another
    of the same wrapper (recursion) is counted with the outermost one."""
    depth = threading.local()

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if getattr(depth, "n", 0):
            return func(*args, **kwargs)
        depth.n = 1
        started = time.thread_time()
        try:
            return func(*args, **kwargs)
        finally:
            SPENT[label] += time.thread_time() - started
            depth.n = 0

    return wrapper


def timed(module: str, name: str, label: str) -> None:
    """Replaces ``module.name`` by a wrapper that adds its thread CPU to ``SPENT[label]``."""
    mod = importlib.import_module(module)
    setattr(mod, name, _timing(getattr(mod, name), label))


def timed_step(step):
    func = getattr(step, "func", step)
    return _timing(step, "heuristics: " + getattr(func, "__name__", type(func).__name__))


def warc_of(pages: int) -> Path:
    path = BENCH_DIR / "text-parts" / f"repeated-{pages}.warc.gz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        build_repeated_warc(path, pages)
    return path


def settings():
    from mmcurate.pipeline.config import load_config

    return load_config(None, ["extract.mode=balanced", *MMCURATE_TEXT_SETTINGS])


def read_pages(n_pages: int, config) -> tuple[list, float]:
    """The Pages of the generated WARC of ``n_pages`` (warc_of), read as the read stage
    does, and the CPU seconds of this thread the reading took (the reader's set-up apart)."""
    from mmcurate.schemas import Page
    from mmcurate.stages.read import ReadWarcFileFn

    reader = ReadWarcFileFn(config.read)
    reader.setup()
    path = str(warc_of(n_pages))
    started = time.thread_time()
    with open(path, "rb") as raw:
        pages = [x for batch in reader.read_stream(path, raw) for x in batch if isinstance(x, Page)]
    return pages, time.thread_time() - started


def parts(n_pages: int) -> None:
    for name in ADAPTER_PARTS:
        timed(ADAPTER, name, f"extract: {name.lstrip('_')}")
    timed(PAGE_DOCUMENTS, "page_markers", "extract: page_markers (MT markers of the raw HTML)")
    timed(PAGE_DOCUMENTS, "with_canonical_urls", "extract: with_canonical_urls")
    from mmcurate.stages.engines.extraction import trafilatura_adapter
    from mmcurate.stages.engines.extraction.page_documents import extract_document
    from mmcurate.stages.engines.extraction.result import checked
    from mmcurate.stages.heuristics import build_steps
    from mmcurate.stages.results import apply_filters

    builder = trafilatura_adapter.NodeBuilder
    builder.block = _timing(builder.block, "extract: nodes from trafilatura's tree")
    config = settings()
    pages, read_seconds = read_pages(n_pages, config)
    read_ms = 1000 * read_seconds / len(pages)
    steps = [timed_step(step) for step in build_steps(config.heuristics)]

    def extract(html, url):
        return checked(trafilatura_adapter.extract_trafilatura(html, url, config.extract), "trafilatura")

    for page in pages[:20]:  # trafilatura's imports and first-use set-up are start-up, not per page
        apply_filters(extract_document(page, config.extract, extract)[0], steps)
    SPENT.clear()
    started = time.thread_time()
    for page in pages:
        doc, _ = extract_document(page, config.extract, extract)
        apply_filters(doc, steps)
    total = time.thread_time() - started
    n = len(pages)
    rows = [("read (warcio, HTTP, charset), measured apart", read_ms)]
    rows += sorted(((label, 1000 * spent / n) for label, spent in SPENT.items()), key=lambda r: -r[1])
    print(f"{n} pages, CPU ms per page (load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}):")
    print(f"{1000 * total / n:8.2f}  extract + heuristics, in all")
    for label, ms in rows:
        print(f"{ms:8.2f}  {label}")


def windows(n_pages: int, window: int) -> None:
    import mmcurate.stages.extract as extract_stage
    from mmcurate.pipeline import cli

    seen = [0]
    process = extract_stage.ExtractDocumentsFn.process

    def counted(self, page):
        seen[0] += 1
        return process(self, page)

    extract_stage.ExtractDocumentsFn.process = counted
    samples: list[tuple[int, float, float]] = []
    gc_spent = [0.0, 0.0, 0.0]
    gc_runs = [0, 0, 0]
    gc_started: dict[int, float] = {}

    def on_gc(phase, info):
        generation = info["generation"]
        if phase == "start":
            gc_started[generation] = time.process_time()
        else:
            gc_runs[generation] += 1
            gc_spent[generation] += time.process_time() - gc_started.pop(generation, time.process_time())

    def sample():
        while True:
            samples.append((seen[0], time.process_time() - base, os.getloadavg()[0]))
            time.sleep(2)

    path = warc_of(n_pages)
    gc.callbacks.append(on_gc)
    base = time.process_time()
    threading.Thread(target=sample, daemon=True).start()
    with tempfile.TemporaryDirectory() as out:
        args = ["run", str(path), "--output", out, "--quiet", "--stages", "heuristics"]
        for setting in ["extract.mode=balanced", *MMCURATE_TEXT_SETTINGS]:
            args += ["--set", setting]
        if cli.main(args + ONE_WORKER):
            raise SystemExit("mmcurate run failed")
    cpu = time.process_time() - base
    first = next(((n, c) for n, c, _ in samples if n > 0), (0, cpu))
    print(f"{n_pages} pages, one process: {cpu:.1f} CPU s, {first[1]:.2f} of them before the first page was extracted")
    last = first
    for n, c, load in samples:
        if n - last[0] >= window:
            print(f"  pages {last[0]:>6}-{n:<6} {1000 * (c - last[1]) / (n - last[0]):6.1f} CPU ms per page (load average {load:.1f})")
            last = (n, c)
    print(f"  from page {last[0]} to the end of the run: {cpu - last[1]:.1f} CPU s")
    print("garbage collector, runs and CPU s per generation: "
          + ", ".join(f"gen {g}: {gc_runs[g]} runs, {gc_spent[g]:.2f} s" for g in range(3)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--windows", action="store_true", help="run mmcurate and print CPU per page over windows of pages")
    parser.add_argument("--window", type=int, default=500)
    args = parser.parse_args()
    if args.windows:
        windows(args.pages, args.window)
    else:
        parts(args.pages)


if __name__ == "__main__":
    main()
