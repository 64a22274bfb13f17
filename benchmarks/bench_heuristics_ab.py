"""The heuristics stage of this tree against another commit's, in one process: CPU
per document of each step, old and new alternating every 50 documents, so that the
host's drift (a fifth within half an hour on a shared machine) falls on both alike.

The pages of bench_vs_datatrove's generated WARC are read and extracted once (by this
tree), then filtered by both trees' steps (bench_vs_datatrove's settings, balanced
mode). The other commit is exported with ``git archive`` into a temporary folder and
imported as the package ``mmref`` (its ``mmcurate.`` imports renamed); both share one
heliport identifier. Every document's signals, language and verdict must come out the
same from both, or the benchmark stops.

    .venv/bin/python benchmarks/bench_heuristics_ab.py --ref main --pages 500 --passes 8
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from bench_text_parts import read_pages, settings  # noqa: E402

BATCH = 50


def export(ref: str, into: Path) -> None:
    """The tree of ``ref`` as the package ``mmref`` under ``into``."""
    src = into / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    dirs = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in dirs.items():
        target = into / "mmref" / Path(*package.split(".")[1:])
        for path in (src / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.parent.relative_to(src / folder).parts[:1] != ("_root",):
                out = target / path.relative_to(src / folder)
                out.parent.mkdir(parents=True, exist_ok=True)
                data = path.read_bytes()
                if path.suffix == ".py":
                    data = re.sub(rb"\bmmcurate(?=\.|\s+import\b)", b"mmref", data)
                out.write_bytes(data)


def read_documents(n_pages: int) -> bytes:
    """The extracted documents of ``n_pages`` generated pages, pickled."""
    from mmcurate.stages.engines.extraction import trafilatura_adapter
    from mmcurate.stages.engines.extraction.page_documents import extract_document
    from mmcurate.stages.engines.extraction.result import checked

    config = settings()
    pages, _ = read_pages(n_pages, config)

    def extract(html, url):
        return checked(trafilatura_adapter.extract_trafilatura(html, url, config.extract), "trafilatura")

    return pickle.dumps([extract_document(page, config.extract, extract)[0] for page in pages])


class _AsRef(pickle.Unpickler):
    def find_class(self, module, name):
        return super().find_class(re.sub(r"^mmcurate\b", "mmref", module), name)


def timed_steps(steps, spent: collections.Counter):
    def timed(step):
        func = getattr(step, "func", step)
        name = getattr(func, "__name__", type(func).__name__)

        def call(doc):
            started = time.thread_time()
            try:
                return step(doc)
            finally:
                spent[name] += time.thread_time() - started

        return call

    return [timed(step) for step in steps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--passes", type=int, default=8, help="passes over the documents, each side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        export(args.ref, Path(tmp))
        sys.path.insert(0, tmp)
        from bench_vs_datatrove import MMCURATE_TEXT_SETTINGS
        from mmcurate.filters.language import load_identifier
        from mmcurate.stages import heuristics as new_heuristics
        from mmcurate.stages.results import apply_filters as new_apply
        from mmref.pipeline.config import load_config as ref_config
        from mmref.stages import heuristics as old_heuristics
        from mmref.stages.results import apply_filters as old_apply

        configs = {"new": settings(), "old": ref_config(None, ["extract.mode=balanced", *MMCURATE_TEXT_SETTINGS])}
        model = load_identifier(configs["new"].heuristics.language.identifier)
        raw = read_documents(args.pages)
        sides = {}
        for key, module, apply in (("old", old_heuristics, old_apply), ("new", new_heuristics, new_apply)):
            config = configs[key].heuristics
            steps = module.heuristic_steps(
                config, language_model=model, flagged_words=module.load_flagged_words(config.flagged_words)
            )
            spent: collections.Counter = collections.Counter()
            load = (lambda: _AsRef(io.BytesIO(raw)).load()) if key == "old" else (lambda: pickle.loads(raw))
            sides[key] = (apply, steps, timed_steps(steps, spent), spent, load)
        # warm-up, and the same figures from both
        old_docs, new_docs = sides["old"][4](), sides["new"][4]()
        for a, b in zip(old_docs, new_docs):
            x, vx = sides["old"][0](a, sides["old"][1])
            y, vy = sides["new"][0](b, sides["new"][1])
            if dict(x.signals) != dict(y.signals) or x.language != y.language or (vx and vx.reason) != (vy and vy.reason):
                raise SystemExit(f"{a.doc_id}: the two trees disagree")
        for _, _, _, spent, _ in sides.values():
            spent.clear()
        totals = {"old": 0.0, "new": 0.0}
        loads = [os.getloadavg()[0]]
        n = 0
        for p in range(args.passes):
            docs = {key: side[4]() for key, side in sides.items()}  # fresh documents: no shared text view
            for i in range(0, len(docs["new"]), BATCH):
                order = ("old", "new") if (i // BATCH + p) % 2 == 0 else ("new", "old")
                for key in order:
                    apply, _, steps, _, _ = sides[key]
                    started = time.thread_time()
                    for doc in docs[key][i : i + BATCH]:
                        apply(doc, steps)
                    totals[key] += time.thread_time() - started
            n += len(docs["new"])
        loads.append(os.getloadavg()[0])
    print(f"{n} documents a side ({args.pages} pages x {args.passes} passes), {args.ref} (old) and this tree (new) "
          f"alternating every {BATCH} documents; load average {loads[0]:.1f} -> {loads[1]:.1f}")
    print(f"{'CPU ms per document':28} {'old':>7} {'new':>7}")
    print(f"{'heuristics, in all':28} {1000 * totals['old'] / n:7.3f} {1000 * totals['new'] / n:7.3f}")
    for name, seconds in sides["old"][3].most_common():
        print(f"{name:28} {1000 * seconds / n:7.3f} {1000 * sides['new'][3][name] / n:7.3f}")


if __name__ == "__main__":
    main()
