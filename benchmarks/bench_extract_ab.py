"""The extraction of this tree against another commit's, in one process: CPU per page of
``extract_document`` (trafilatura's call apart from mmcurate's own work around it),
old and new alternating every 50 pages, so that the host's drift falls on both alike.

The pages of bench_vs_datatrove's generated WARC are read once (by this tree) and
extracted by both trees with bench_vs_datatrove's settings (balanced mode). The other
commit is exported as the package ``mmref`` (bench_heuristics_ab.export). Every
document's nodes, title, ``hreflang``, signals (timing aside) and metadata must come out
the same from both, or the benchmark stops.

    .venv/bin/python benchmarks/bench_extract_ab.py --ref main --pages 500 --passes 3
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from bench_heuristics_ab import BATCH, export  # noqa: E402
from bench_text_parts import read_pages, settings  # noqa: E402


def side(adapter, page_documents, result, extract_config, spent: collections.Counter, key: str):
    """``page -> Document`` by one tree, with the CPU of trafilatura's call added to ``spent[key]``."""
    trafilatura_call = adapter._trafilatura_document

    def timed_call(*args):
        started = time.thread_time()
        try:
            return trafilatura_call(*args)
        finally:
            spent[key] += time.thread_time() - started

    adapter._trafilatura_document = timed_call

    def extract(html, url):
        return result.checked(adapter.extract_trafilatura(html, url, extract_config), "trafilatura")

    return lambda page: page_documents.extract_document(page, extract_config, extract)[0]


def screening_of(package: str):
    """A function that makes trafilatura's XPath expressions those ``package``'s tree
    screens (stages/engines/extraction/xpath_screen), or the plain ones if it has none.
    Both trees share one trafilatura: without this, both would run with whichever
    screening was installed first. Called before each side's pages."""

    def use() -> None:
        for name, module in list(sys.modules.items()):
            if module is None or not (name == "trafilatura" or name.startswith("trafilatura.")):
                continue
            for attr, value in list(vars(module).items()):
                if type(value).__name__ == "ScreenedXPath":
                    setattr(module, attr, value.plain)
                elif isinstance(value, list):
                    value[:] = [item.plain if type(item).__name__ == "ScreenedXPath" else item for item in value]
        screen = sys.modules.get(f"{package}.stages.engines.extraction.xpath_screen")
        if screen is not None:
            screen.install("trafilatura")

    return use


def outcome(doc) -> tuple:
    signals = sorted((k, v) for k, v in doc.signals.items() if k != "extract.seconds")
    return doc.doc_id, repr(doc.nodes), doc.title, tuple(doc.hreflang), signals, sorted(doc.metadata.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--passes", type=int, default=3, help="passes over the pages, each side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        export(args.ref, Path(tmp))
        sys.path.insert(0, tmp)
        from bench_vs_datatrove import MMCURATE_TEXT_SETTINGS
        from mmcurate.stages.engines.extraction import page_documents as new_documents
        from mmcurate.stages.engines.extraction import result as new_result
        from mmcurate.stages.engines.extraction import trafilatura_adapter as new_adapter
        from mmref.pipeline.config import load_config as ref_config
        from mmref.stages.engines.extraction import page_documents as old_documents
        from mmref.stages.engines.extraction import result as old_result
        from mmref.stages.engines.extraction import trafilatura_adapter as old_adapter

        new_config = settings()
        old_config = ref_config(None, ["extract.mode=balanced", *MMCURATE_TEXT_SETTINGS])
        pages, _ = read_pages(args.pages, new_config)
        spent: collections.Counter = collections.Counter()
        sides = {
            "old": side(old_adapter, old_documents, old_result, old_config.extract, spent, "old"),
            "new": side(new_adapter, new_documents, new_result, new_config.extract, spent, "new"),
        }
        for adapter in (old_adapter, new_adapter):  # each tree's once-per-process set-up, before either runs
            getattr(adapter, "_prepare_trafilatura", lambda: None)()
        use = {"old": screening_of("mmref"), "new": screening_of("mmcurate")}
        for page in pages:  # warm-up, and the same documents from both
            use["old"]()
            old = outcome(sides["old"](page))
            use["new"]()
            if old != outcome(sides["new"](page)):
                raise SystemExit(f"{page.doc_id}: the two trees disagree")
        spent.clear()
        collecting = collections.Counter()  # the garbage collector's CPU, by side
        running = {"side": "", "since": 0.0}

        def on_gc(phase, info):
            if phase == "start":
                running["since"] = time.thread_time()
            else:
                collecting[running["side"]] += time.thread_time() - running["since"]

        gc.callbacks.append(on_gc)
        totals = {"old": 0.0, "new": 0.0}
        loads = [os.getloadavg()[0]]
        for p in range(args.passes):
            for i in range(0, len(pages), BATCH):
                for key in ("old", "new") if (i // BATCH + p) % 2 == 0 else ("new", "old"):
                    extract = sides[key]
                    use[key]()
                    running["side"] = key
                    started = time.thread_time()
                    for page in pages[i : i + BATCH]:
                        extract(page)
                    totals[key] += time.thread_time() - started
        loads.append(os.getloadavg()[0])
        gc.callbacks.remove(on_gc)
    n = len(pages) * args.passes
    print(f"{n} pages a side ({len(pages)} pages x {args.passes} passes), {args.ref} (old) and this tree (new) "
          f"alternating every {BATCH} pages; load average {loads[0]:.1f} -> {loads[1]:.1f}")
    print(f"{'CPU ms per page':36} {'old':>7} {'new':>7}")
    print(f"{'extract_document, in all':36} {1000 * totals['old'] / n:7.3f} {1000 * totals['new'] / n:7.3f}")
    print(f"{'  trafilatura (bare_extraction call)':36} {1000 * spent['old'] / n:7.3f} {1000 * spent['new'] / n:7.3f}")
    mine = {key: totals[key] - spent[key] for key in totals}
    print(f"{'  the rest (mmcurate own work)':36} {1000 * mine['old'] / n:7.3f} {1000 * mine['new'] / n:7.3f}")
    print(f"{'garbage collection, within the above':36} {1000 * collecting['old'] / n:7.3f} {1000 * collecting['new'] / n:7.3f}")


if __name__ == "__main__":
    main()
