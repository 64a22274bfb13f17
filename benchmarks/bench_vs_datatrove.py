"""mmcurate side by side with datatrove, on the same input, in one invocation.

1. Text path. datatrove's WarcReader -> Trafilatura(favour_precision=True) ->
   (deduplicate=False: with datatrove's default True, trafilatura drops text it has
   seen in earlier documents of the process, which empties every repeated page of
   the generated WARC -- 840 of 1000 -- and skips the filters' work on them) ->
   GopherRepetitionFilter -> GopherQualityFilter -> C4QualityFilter(FineWeb's
   setting: filter_no_terminal_punct=False) -> FineWebQualityFilter, on one
   LocalPipelineExecutor task; against ``mmcurate run --stages heuristics`` with
   extract.mode=--mode (default balanced: mmcurate's own default, and the mode whose
   extraction F1 equals datatrove's; precision mode loses MediaWiki section headings
   in trafilatura 2.3.1), the Gopher, C4 and FineWeb rule sets on (OBELICS rules,
   node cleanup and the image requirement off, language ID scored but deciding
   nothing) on the DirectRunner with one in-memory worker. Inputs: the fixture WARCs
   (tests/fixtures/warc/), a WARC of one page, and a WARC of --pages responses that
   repeats their real HTML pages under distinct URLs (tests/warcbuild.py). Printed:
   pages per CPU-second of each tool and their ratio (the goal's measure), and from
   the one-page run each tool's start-up CPU and its CPU per further page.
   Extraction F1: both extractors (datatrove's ``Trafilatura(favour_precision=True,
   deduplicate=False).extract`` and mmcurate's ``extract_trafilatura`` in precision
   and balanced mode) on --labelled pages of each kind that tests/pagebuild.py builds
   with golden text (a long encyclopedia article, a news page, a React page, a
   blog post): bag-of-words precision, recall and F1 of the extracted text against
   the golden text, so "equal F1" is measured, not assumed.
2. MinHash near-duplicate dedup. datatrove's four steps (MinhashDedupSignature,
   MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter, one task each)
   against mmcurate's ``DedupDocuments`` (near-duplicates only; URL and exact-text
   dedup off) on the same JSONL documents: --docs generated documents (Zipf words
   from a 20k vocabulary, 150-450 words) of which 10% are near copies (1% of the
   words replaced) of another. Both with 5-gram word shingles and 9 bands x 13 rows.

Each side runs in its own process (benchmarks/peers.py): wall seconds, CPU seconds
(user + system, children included: mmcurate's extraction runs in a child process),
peak RSS. datatrove is installed from PyPI into /tmp/mmcurate-bench/datatrove-venv
with the pins below; its versions and settings are printed.

    .venv/bin/python benchmarks/bench_vs_datatrove.py                 # 1000 pages, 5000 docs
    .venv/bin/python benchmarks/bench_vs_datatrove.py --pages 3000 --docs 20000
    .venv/bin/python benchmarks/bench_vs_datatrove.py --skip-text --skip-minhash   # F1 only
    .venv/bin/python benchmarks/bench_vs_datatrove.py --skip-minhash --mode balanced --pages 5000 --rounds 3

The host's speed moves between runs on a shared machine (by a fifth within half an
hour here), and each tool's run of 5,000 pages takes minutes; ``--rounds`` runs the
generated WARC several times with the tools' order alternating and prints each
round's ratio and their median.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pagebuild import KINDS, labelled_pages, token_f1  # noqa: E402
from peers import BENCH_DIR, FIXTURE_WARCS, MMCURATE_PYTHON, build_repeated_warc, ensure_venv, installed_versions, measure, table  # noqa: E402

# datatrove[processing] 0.10.1 as published does not run the text path on its own:
# its WarcReader needs faust-cchardet, python-magic and warcio, its English word
# tokenizer needs spacy, and the trafilatura it pins (<1.12) imports
# lxml.html.clean, which lxml 6 moved to lxml_html_clean (without it every page
# "times out" in datatrove's extractor sandbox and nothing is extracted); its
# JsonlReader needs orjson.
DATATROVE_REQUIREMENTS = (
    "datatrove[processing]==0.10.1",
    "warcio==1.8.1",
    "faust-cchardet==2.1.19",
    "python-magic==0.4.27",
    "spacy==3.8.18",
    "lxml_html_clean==0.4.4",
    "orjson==3.13.0",  # JsonlReader
)
DATATROVE_PACKAGES = ("datatrove", "trafilatura", "lxml", "spacy", "numpy", "xxhash")

DATATROVE_TEXT = r"""
import json, sys
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import WarcReader
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter, C4QualityFilter, FineWebQualityFilter

counts = {}
def counter(name):
    def step(data, rank=0, world_size=1):
        for doc in data:
            counts[name] = counts.get(name, 0) + 1
            yield doc
    return step

folder, logs = sys.argv[1:3]
pipeline = [
    WarcReader(folder, glob_pattern="*.warc*"), counter("read"),
    Trafilatura(favour_precision=True, deduplicate=False), counter("extracted"),
    GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(filter_no_terminal_punct=False),
    FineWebQualityFilter(), counter("kept"),
]
LocalPipelineExecutor(pipeline=pipeline, tasks=1, workers=1, logging_dir=logs).run()
print(json.dumps(counts))
"""
DATATROVE_TEXT_SETTINGS = (
    "WarcReader(glob *.warc*) -> Trafilatura(favour_precision=True, deduplicate=False, timeout=1) -> GopherRepetitionFilter() -> "
    "GopherQualityFilter() -> C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQualityFilter(); "
    "LocalPipelineExecutor(tasks=1, workers=1)"
)

DATATROVE_EXTRACT = r"""
import json, sys
from datatrove.pipeline.extractors import Trafilatura
extractor = Trafilatura(favour_precision=True, deduplicate=False)
with open(sys.argv[1]) as fh, open(sys.argv[2], "w") as out:
    for line in fh:
        page = json.loads(line)
        out.write(json.dumps({"text": extractor.extract(page["html"]) or ""}) + "\n")
"""

DATATROVE_MINHASH = r"""
import json, sys
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupSignature, MinhashDedupBuckets,
                                             MinhashDedupCluster, MinhashDedupFilter)
from datatrove.utils.hashing import HashConfig

counts = {}
def counter(name):
    def step(data, rank=0, world_size=1):
        for doc in data:
            counts[name] = counts.get(name, 0) + 1
            yield doc
    return step

folder, work = sys.argv[1:3]
config = MinhashConfig(n_grams=5, num_buckets=9, hashes_per_bucket=13, seed=1, hash_config=HashConfig(precision=64))
steps = [
    [JsonlReader(folder), MinhashDedupSignature(output_folder=f"{work}/signatures", config=config)],
    [MinhashDedupBuckets(input_folder=f"{work}/signatures", output_folder=f"{work}/buckets", config=config)],
    [MinhashDedupCluster(input_folder=f"{work}/buckets", output_folder=f"{work}/remove_ids", config=config)],
    [JsonlReader(folder), counter("read"), MinhashDedupFilter(input_folder=f"{work}/remove_ids"), counter("kept")],
]
tasks = {0: 1, 1: config.num_buckets, 2: 1, 3: 1}
for i, pipeline in enumerate(steps):
    LocalPipelineExecutor(pipeline=pipeline, tasks=tasks[i], workers=1, logging_dir=f"{work}/logs{i}").run()
print(json.dumps(counts))
"""
DATATROVE_MINHASH_SETTINGS = (
    "MinhashConfig(n_grams=5, num_buckets=9, hashes_per_bucket=13, seed=1, 64-bit hashes); "
    "Signature -> Buckets (9 tasks) -> Cluster -> Filter, LocalPipelineExecutor(workers=1)"
)

MMCURATE_TEXT_SETTINGS = [
    "heuristics.min_images=0",
    "heuristics.language.min_score=0",
    "heuristics.nodes.enabled=false",
    "heuristics.obelics.enabled=false",
    "heuristics.c4.enabled=true",
]
ONE_WORKER = ["--direct_num_workers=1", "--direct_running_mode=in_memory"]

MMCURATE_MINHASH = r"""
import json, sys
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from mmcurate.pipeline.config import DedupConfig
from mmcurate.schemas import Document, Provenance, TextNode
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.runners.direct import runner_for

def to_doc(line):
    row = json.loads(line)
    return Document(doc_id=row["id"], url=row["metadata"]["url"],
                    provenance=Provenance(warc_file="bench.jsonl", record_id=row["id"], date="2024-01-01T00:00:00Z"),
                    nodes=tuple(TextNode(text=p) for p in row["text"].split("\n\n")))

class Count(beam.DoFn):
    def __init__(self, name):
        self.counter = beam.metrics.Metrics.counter("bench", name)
    def process(self, element):
        self.counter.inc()

path = sys.argv[1]
config = DedupConfig(url=False, exact_text=False, near=True, word_ngram=5, num_perm=128, bands=9, rows=13, seed=1, verify=False)
options = PipelineOptions(["--direct_num_workers=1", "--direct_running_mode=in_memory"])
p = beam.Pipeline(runner=runner_for(options), options=options)
result = p | beam.io.ReadFromText(path) | beam.Map(to_doc) | DedupDocuments(config)
_ = result.kept | "CountKept" >> beam.ParDo(Count("kept"))
_ = result.rejected | "CountRejected" >> beam.ParDo(Count("rejected"))
res = p.run(); res.wait_until_finish()
counts = {c.key.metric.name: c.committed for c in res.metrics().query()["counters"] if c.key.metric.namespace == "bench"}
print(json.dumps(counts))
"""
MMCURATE_MINHASH_SETTINGS = (
    "DedupConfig(url=False, exact_text=False, near=True, word_ngram=5, num_perm=128, bands=9, rows=13, seed=1, "
    "shingle_hash=sha1, verify=False); DirectRunner, 1 in-memory worker"
)


def run_mmcurate_text(inputs: list[Path], out: Path, mode: str):
    cmd = [MMCURATE_PYTHON, "-m", "mmcurate.pipeline.cli", "run", *map(str, inputs), "--output", str(out), "--quiet",
           "--stages", "heuristics"]
    for setting in [f"extract.mode={mode}", *MMCURATE_TEXT_SETTINGS]:
        cmd += ["--set", setting]
    m = measure(cmd + ONE_WORKER)
    manifest = json.loads((out / "manifest.json").read_text())
    stages = manifest["stages"]
    return m, {"read": stages["extract"]["in"], "extracted": stages["extract"]["kept"], "kept": stages["heuristics"]["kept"],
               "pages": manifest["totals"]["pages"]}


def _text_runs(python: str, work: Path, folder: Path, mode: str, order: Sequence[str], name: str) -> dict[str, tuple]:
    """Each tool once on ``folder``, in the given order, into logs and output folders
    of their own (datatrove skips the tasks its logging folder records as done):
    {tool: (Measured, counts)}."""
    script = work / "datatrove_text.py"
    script.write_text(DATATROVE_TEXT)
    runs = {}
    for tool in order:
        if tool == "datatrove":
            dt = measure([python, str(script), str(folder), str(work / f"logs-{name}")])
            runs[tool] = (dt, json.loads(dt.stdout.strip().splitlines()[-1]))
        else:
            runs[tool] = run_mmcurate_text(sorted(folder.glob("*.warc*")), work / f"out-{name}", mode)
    return runs


def text_path(python: str, n_pages: int, mode: str, rounds: int = 1) -> list[list[object]]:
    """The text path on the fixtures, one page and the generated WARC. With ``rounds``
    above 1 the generated WARC is run that many times, the tools' order alternating
    (datatrove first, then mmcurate first, ...), so that a change of the host's speed
    during the benchmark falls on both tools; each round's ratio and their median are
    printed."""
    work = BENCH_DIR / "text"
    shutil.rmtree(work, ignore_errors=True)
    fixtures = work / "fixtures"
    generated = work / "generated"
    one_page = work / "one-page"
    fixtures.mkdir(parents=True)
    generated.mkdir()
    one_page.mkdir()
    build_repeated_warc(one_page / "one.warc.gz", 1)
    for path in FIXTURE_WARCS:
        shutil.copy(path, fixtures / path.name)
    html_bytes = build_repeated_warc(generated / "repeated.warc.gz", n_pages)
    print(f"generated {generated / 'repeated.warc.gz'}: {n_pages} pages, {html_bytes / 1e6:.1f} MB of HTML", flush=True)
    rows = []
    cpu: dict[tuple[str, str], float] = {}
    big = f"generated ({n_pages} pages)"
    runs = [("fixture WARCs", fixtures, 0), ("one page", one_page, 0)]
    runs += [(big if rounds == 1 else f"{big}, round {r + 1}", generated, r) for r in range(rounds)]
    ratios = []
    for label, folder, r in runs:
        order = ("datatrove", "mmcurate") if r % 2 == 0 else ("mmcurate", "datatrove")
        results = _text_runs(python, work, folder, mode, order, folder.name if rounds == 1 else f"{folder.name}-{r + 1}")
        (dt, dt_counts), (mm, mm_counts) = results["datatrove"], results["mmcurate"]
        for tool, m, c in (("datatrove", dt, dt_counts), ("mmcurate", mm, mm_counts)):
            cpu[label, tool] = m.cpu
            pages = c.get("read", 0)
            rows.append([label, tool, pages, c.get("extracted", 0), c.get("kept", 0), m.wall, pages / m.wall,
                         1000 * m.cpu / max(1, pages), m.rss_mib])
        ratio = (mm_counts["read"] / mm.wall) / (dt_counts.get("read", 0) / dt.wall) if dt_counts.get("read") else float("nan")
        cpu_ratio = (mm.cpu / max(1, mm_counts["read"])) / (dt.cpu / max(1, dt_counts.get("read", 1)))
        rows.append([label, "mmcurate / datatrove", "", "", "", mm.wall / dt.wall, ratio, cpu_ratio, mm.rss_mib / dt.rss_mib])
        if folder == generated:
            ratios.append(1 / cpu_ratio)
            cpu.setdefault((big, "datatrove"), dt.cpu)
            cpu.setdefault((big, "mmcurate"), mm.cpu)
        print(f"{label}: pages per CPU-second, mmcurate / datatrove = {1 / cpu_ratio:.2f} "
              f"({mm_counts['read'] / mm.cpu:.1f} against {dt_counts.get('read', 0) / dt.cpu:.1f}; "
              f"{' then '.join(order)}; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())})", flush=True)
    if rounds > 1:
        print(f"{big}, {rounds} rounds: pages per CPU-second, mmcurate / datatrove = "
              f"{', '.join(f'{x:.2f}' for x in ratios)}; median {statistics.median(ratios):.2f}", flush=True)
    # Start-up (the one-page run) against the cost of each further page: the ratio
    # above depends on the input's size as long as start-up is a large part of it.
    per_page = {tool: (cpu[big, tool] - cpu["one page", tool]) / max(1, n_pages - 1) for tool in ("datatrove", "mmcurate")}
    print(f"start-up CPU s (one page): datatrove {cpu['one page', 'datatrove']:.2f}, mmcurate {cpu['one page', 'mmcurate']:.2f}; "
          f"CPU ms per further page{' (first round)' if rounds > 1 else ''}: datatrove {1000 * per_page['datatrove']:.1f}, "
          f"mmcurate {1000 * per_page['mmcurate']:.1f} "
          f"(pages per CPU-second past start-up, mmcurate / datatrove = {per_page['datatrove'] / per_page['mmcurate']:.2f})", flush=True)
    return rows


def generate_documents(path: Path, n: int, seed: int = 7) -> int:
    """n JSONL documents; 10% are near copies (1% of words replaced: word 5-gram
    Jaccard about 0.9) of an earlier one."""
    rng = random.Random(seed)
    # Letters only: datatrove's text normalisation maps digits to 0, so "w1".."w9"
    # would all become one word.
    vocab = ["".join("abcdefghijklmnopqrstuvwxyz"[(i // 26**k) % 26] for k in range(4)) for i in range(20_000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    docs: list[list[str]] = []
    copies = 0
    with open(path, "w") as fh:
        for i in range(n):
            if docs and rng.random() < 0.10:
                words = list(rng.choice(docs))
                for j in rng.sample(range(len(words)), k=max(1, len(words) // 100)):
                    words[j] = rng.choice(vocab)
                copies += 1
            else:
                words = rng.choices(vocab, weights, k=rng.randint(150, 450))
                docs.append(words)
            text = "\n\n".join(" ".join(words[k : k + 60]) for k in range(0, len(words), 60))
            fh.write(json.dumps({"id": f"doc{i:07d}", "text": text, "metadata": {"url": f"https://site{i % 97}.example/{i}"}}) + "\n")
    return copies


def minhash(python: str, n_docs: int) -> list[list[object]]:
    work = BENCH_DIR / "minhash"
    shutil.rmtree(work, ignore_errors=True)
    (work / "input").mkdir(parents=True)
    data = work / "input" / "docs.jsonl"
    copies = generate_documents(data, n_docs)
    print(f"generated {data}: {n_docs} documents, {copies} near copies", flush=True)
    script = work / "datatrove_minhash.py"
    script.write_text(DATATROVE_MINHASH)
    dt = measure([python, str(script), str(work / "input"), str(work / "dt")])
    dt_counts = json.loads(dt.stdout.strip().splitlines()[-1])
    mm_script = work / "mmcurate_minhash.py"
    mm_script.write_text(MMCURATE_MINHASH)
    mm = measure([MMCURATE_PYTHON, str(mm_script), str(data)])
    mm_counts = json.loads(mm.stdout.strip().splitlines()[-1])
    rows = []
    for tool, m, removed in (
        ("datatrove", dt, dt_counts["read"] - dt_counts["kept"]),
        ("mmcurate", mm, mm_counts.get("rejected", 0)),
    ):
        rows.append([tool, n_docs, removed, m.wall, n_docs / m.wall, 1000 * m.cpu / n_docs, m.rss_mib])
    rows.append(["mmcurate / datatrove", "", "", mm.wall / dt.wall, dt.wall / mm.wall, mm.cpu / dt.cpu, mm.rss_mib / dt.rss_mib])
    return rows


def extraction_f1(python: str, n_per_kind: int) -> list[list[object]]:
    """Precision, recall, F1 per page kind for both extractors on labelled pages."""
    from mmcurate.pipeline.config import ExtractConfig
    from mmcurate.schemas import Document, Provenance
    from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura

    work = BENCH_DIR / "f1"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pages = labelled_pages(n_per_kind)
    (work / "pages.jsonl").write_text("".join(json.dumps({"url": p.url, "html": p.html}) + "\n" for p in pages))
    script = work / "datatrove_extract.py"
    script.write_text(DATATROVE_EXTRACT)
    measure([python, str(script), str(work / "pages.jsonl"), str(work / "datatrove.jsonl")])
    theirs = [json.loads(line)["text"] for line in (work / "datatrove.jsonl").read_text().splitlines()]
    outputs = [("datatrove (precision)", theirs)]
    for mode in ("precision", "balanced"):
        config = ExtractConfig(mode=mode)
        texts = []
        for page in pages:
            nodes = extract_trafilatura(page.html, page.url, config).nodes
            texts.append(Document(doc_id="f1", url=page.url, provenance=Provenance(warc_file=""), nodes=nodes).text)
        outputs.append((f"mmcurate ({mode})", texts))
    rows = []
    for kind in [*KINDS, "all"]:
        for tool, texts in outputs:
            scores = [token_f1(text, "\n".join(p.text)) for p, text in zip(pages, texts) if kind in ("all", p.kind)]
            rows.append([kind, tool, len(scores), *(sum(s[i] for s in scores) / len(scores) for i in range(3))])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000, help="pages in the generated WARC (default 1000)")
    parser.add_argument("--docs", type=int, default=5000, help="documents for the MinHash comparison (default 5000)")
    parser.add_argument("--labelled", type=int, default=5, help="labelled pages of each kind for extraction F1 (default 5)")
    parser.add_argument("--mode", default="balanced", choices=("precision", "balanced", "recall"),
                        help="mmcurate's extract.mode on the text path (default balanced: mmcurate's default, and "
                             "the mode at datatrove's extraction F1)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of the generated WARC per tool, the order of the tools alternating; prints each "
                             "round's ratio and their median (default 1)")
    parser.add_argument("--skip-text", action="store_true")
    parser.add_argument("--skip-minhash", action="store_true")
    args = parser.parse_args()

    python = ensure_venv("datatrove-venv", DATATROVE_REQUIREMENTS)
    peer = installed_versions(python, DATATROVE_PACKAGES)
    ours = installed_versions(MMCURATE_PYTHON, ("mmcurate", "apache-beam", "trafilatura", "lxml", "datasketch", "numpy"))
    print("datatrove venv: " + ", ".join(f"{k} {v}" for k, v in peer.items()))
    print("mmcurate venv:  " + ", ".join(f"{k} {v}" for k, v in ours.items()))
    print(f"python {sys.version.split()[0]}; both sides on one process/worker; peak RSS = largest process of each run\n")

    if not args.skip_text:
        print("datatrove: " + DATATROVE_TEXT_SETTINGS)
        settings = [f"extract.mode={args.mode}", *MMCURATE_TEXT_SETTINGS]
        print("mmcurate:  run --stages heuristics " + " ".join(f"--set {s}" for s in settings) + " " + " ".join(ONE_WORKER))
        print(table(
            "\n1. text path: read -> extract -> Gopher + C4 + FineWeb rules (ratio row: wall, docs/s, CPU/1k, RSS as mmcurate / datatrove)",
            ["input", "tool", "pages", "extracted", "kept", "wall s", "docs/s", "CPU s/1k pages", "peak RSS MiB"],
            text_path(python, args.pages, args.mode, args.rounds),
        ))
        print()
    print(table(
        "\nExtraction F1 on labelled pages (tests/pagebuild.py; bag-of-words against the golden text, mean over pages)",
        ["kind", "tool", "pages", "precision", "recall", "F1"],
        extraction_f1(python, args.labelled),
    ))
    print()
    if not args.skip_minhash:
        print("datatrove: " + DATATROVE_MINHASH_SETTINGS)
        print("mmcurate:  " + MMCURATE_MINHASH_SETTINGS)
        print(table(
            "\n2. MinHash near-duplicate dedup (ratio row: wall, speed-up, CPU, RSS as mmcurate / datatrove)",
            ["tool", "docs", "removed", "wall s", "docs/s", "CPU s/1k docs", "peak RSS MiB"],
            minhash(python, args.docs),
        ))


if __name__ == "__main__":
    main()
