"""Throughput of the `heuristics` stage alone on one core, and its funnel by reason code.

1. Reads and extracts the pages of the given WARCs once (Beam DirectRunner,
   in-process), keeping the extracted documents.
2. Times the stage's steps (URL rules, node cleanup, language ID, Gopher, OBELICS,
   FineWeb, C4, Gopher repetition), exactly as the stage runs them (``stages.heuristics.build_steps``), over
   the documents repeated until --docs is reached, in this one process: documents/s
   and microseconds per document (median, p90, p99), per step family as well.
3. Runs the CLI, ``mmcurate run WARC --stages heuristics``, on each WARC and prints
   the funnel from its manifest: pages, kept, rejected and errors per stage, and the
   heuristics rejections by reason code.

    .venv/bin/python benchmarks/bench_heuristics.py
    .venv/bin/python benchmarks/bench_heuristics.py --docs 5000 tests/fixtures/warc/demo.warc.gz
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from mmcurate.filters.language import load_identifier
from mmcurate.pipeline.config import load_config
from mmcurate.runners.direct import runner_for
from mmcurate.schemas import Document
from mmcurate.stages.extract import ExtractDocuments
from mmcurate.stages.heuristics import heuristic_steps
from mmcurate.stages.read import ReadWarc

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WARCS = [ROOT / "tests/fixtures/warc/clueweb-quirk.warc.gz", ROOT / "tests/fixtures/warc/demo.warc.gz"]


def extracted_documents(warcs: list[Path]) -> list[Document]:
    """Documents the extract stage keeps (pickled to a temporary file and read back)."""
    config = load_config()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = str(Path(tmp) / "docs")
        with beam.Pipeline(runner=runner_for(PipelineOptions(["--runner=DirectRunner"]))) as p:
            read = p | ReadWarc([str(w) for w in warcs], config.read)
            docs = read.pages | ExtractDocuments(config.extract)
            _ = (
                docs.kept
                | beam.Map(lambda d: pickle.dumps(d).hex())
                | beam.io.WriteToText(prefix, shard_name_template="")
            )
        return [pickle.loads(bytes.fromhex(line)) for line in Path(prefix).read_text().split()]


def _family(step) -> str:
    func = getattr(step, "func", step)
    return f"{func.__module__.rsplit('.', 1)[-1]}.{getattr(func, '__name__', type(func).__name__)}"


def time_steps(docs: list[Document], n: int, overrides: list[str]) -> None:
    config = load_config(overrides=overrides).heuristics
    steps = heuristic_steps(config, language_model=load_identifier(config.language.identifier, config.language.model_path))
    per_doc: list[float] = []
    per_step: dict[str, float] = defaultdict(float)
    outcomes: Counter = Counter()
    clock = time.perf_counter
    started = clock()
    for i in range(n):
        doc = docs[i % len(docs)]
        t0 = clock()
        reason = "kept"
        for step in steps:
            s0 = clock()
            result = step(doc)
            per_step[_family(step)] += clock() - s0
            if isinstance(result, Document):
                doc = result
                continue
            doc = doc.with_signals(result.signals)
            if not result.keep:
                reason = result.reason
                break
        per_doc.append(clock() - t0)
        outcomes[reason] += 1
    wall = clock() - started
    q = statistics.quantiles(per_doc, n=100)
    print(f"heuristics stage alone, one core, {n} documents ({len(docs)} distinct, extracted from the WARCs)")
    print(f"  {n / wall:,.0f} docs/s; per doc: mean {1e6 * wall / n:,.0f} us, median {1e6 * q[49]:,.0f} us, "
          f"p90 {1e6 * q[89]:,.0f} us, p99 {1e6 * q[98]:,.0f} us, max {1e6 * max(per_doc):,.0f} us")
    print("  time by step (share of the stage):")
    total = sum(per_step.values())
    for name, secs in sorted(per_step.items(), key=lambda kv: -kv[1]):
        print(f"    {name:<32} {100 * secs / total:5.1f}%  {1e6 * secs / n:8.1f} us/doc")


def cli_funnel(warc: Path, overrides: list[str]) -> None:
    with tempfile.TemporaryDirectory() as out:
        cmd = [str(Path(sys.executable).parent / "mmcurate"), "run", str(warc), "--output", out, "--stages", "heuristics", "--quiet"]
        for o in overrides:
            cmd += ["--set", o]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        print(f"\n$ mmcurate run {warc.relative_to(ROOT) if warc.is_relative_to(ROOT) else warc} --stages heuristics"
              + "".join(f" --set {o}" for o in overrides))
        if proc.returncode != 0:
            print(f"  CLI failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}")
            return
        manifest = json.loads((Path(out) / "manifest.json").read_text())
    print(f"  totals: {manifest['totals']}")
    for stage in ("read", "extract", "heuristics"):
        s = manifest["stages"][stage]
        print(f"  {stage:<10} in {s['in']:>4}  kept {s['kept']:>4}  rejected {s['rejected']:>4}  errors {s['errors']:>3}  {s.get('seconds', 0):.3f} s")
    for reason, count in sorted(manifest["stages"]["heuristics"]["rejected_by_reason"].items(), key=lambda kv: -kv[1]):
        print(f"    {reason:<36} {count:>4}")
    if manifest.get("counter_mismatches"):
        print(f"  counter/row mismatches: {manifest['counter_mismatches']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("warcs", nargs="*", type=Path, default=DEFAULT_WARCS)
    parser.add_argument("--docs", type=int, default=3000, help="documents to time (the extracted ones, repeated)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="config override, as the CLI's --set")
    args = parser.parse_args()
    docs = extracted_documents(args.warcs)
    if not docs:
        sys.exit("no documents extracted")
    time_steps(docs, args.docs, args.overrides)
    for warc in args.warcs:
        cli_funnel(warc, args.overrides)


if __name__ == "__main__":
    main()
