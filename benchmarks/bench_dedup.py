"""Dedup: throughput and memory on one core, and near-duplicate precision/recall.

1. Throughput. Generated documents (Zipf-distributed words from a 20k vocabulary,
   150-450 words each; 5% exact copies, 5% recaptures of a URL, 10% edited
   near-copies) are fingerprinted three ways per document -- datasketch
   ``MinHash.update_batch`` (sha1), the numpy path with sha1 (bit-identical), the
   numpy path with crc32 -- and then run through the whole ``dedup`` stage
   (URL + exact + MinHash-LSH + components) on the DirectRunner with one worker,
   in-process. Prints docs/s and the peak RSS of this process after each size.
   Generation runs inside the pipeline (no 100k-element ``Create``); its own cost is
   measured separately and printed.

2. Quality on real text. Each "original" paragraph of
   ../shared/data/llm-fast-detect-gpt/*.raw_data.json (distinct, >= 80 words) is paired
   with one edited copy: word deletions, insertions (words of other paragraphs) or
   adjacent swaps, at a rate from 1% to 40% (kind and rate cycle over the
   paragraphs). A pair is a true near duplicate when the exact Jaccard of its
   word-5-gram sets is >= 0.8. The stage runs over all paragraphs and copies; a pair
   is flagged when one of the two is dropped naming the other. Prints precision
   and recall against the exact Jaccard, per rate and overall, with verification
   off and on, and any drop that names a survivor from another pair.

3. Translations are not duplicates. ../shared/data/mt-wmt22/: for each language
   pair, two MT systems' English outputs of the same source, cut into
   pseudo-documents of 10 consecutive lines. Prints how many of the pairs the
   stage flags (should be none) and the largest exact Jaccard among them.

    .venv/bin/python benchmarks/bench_dedup.py              # 10k throughput + quality
    .venv/bin/python benchmarks/bench_dedup.py --large      # adds the 100k run (slow)
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import random
import resource
import sys
import time
from pathlib import Path

import apache_beam as beam
import numpy as np
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from datasketch import MinHash

from mmcurate.filters import minhash
from mmcurate.pipeline.config import DedupConfig
from mmcurate.runners.direct import runner_for
from mmcurate.schemas import Document, Provenance, TextNode
from mmcurate.stages.dedup import DedupDocuments
from mmcurate.stages.engines.dedup_fingerprints import describe_lsh

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
ONE_WORKER = ["--direct_num_workers=1", "--direct_running_mode=in_memory"]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _doc(doc_id: str, text: str, url: str = "", date: str = "2024-05-01T00:00:00Z") -> Document:
    return Document(
        doc_id=doc_id,
        url=url or f"https://example.org/{doc_id}",
        provenance=Provenance(warc_file="bench.warc.gz", record_id=doc_id, date=date),
        nodes=tuple(TextNode(text=p) for p in text.split("\n\n")),
    )


# -- 1. throughput ----------------------------------------------------------------------

VOCAB = [f"w{i}" for i in range(20000)]
_WEIGHTS = 1.0 / np.arange(1, len(VOCAB) + 1)
_CDF = np.cumsum(_WEIGHTS) / _WEIGHTS.sum()


def generate_shard(shard: int, per_shard: int) -> list[Document]:
    """``per_shard`` documents; deterministic per shard; duplicates within the shard."""
    rng = np.random.default_rng(shard)
    docs: list[Document] = []
    for i in range(per_shard):
        doc_id = f"s{shard:05d}-{i:05d}"
        roll = rng.random()
        if docs and roll < 0.05:  # exact copy of an earlier document
            src = docs[int(rng.integers(len(docs)))]
            docs.append(_doc(doc_id, src.text))
        elif docs and roll < 0.10:  # a later capture of an earlier URL
            src = docs[int(rng.integers(len(docs)))]
            docs.append(_doc(doc_id, src.text + " updated", url=src.url, date="2024-09-01T00:00:00Z"))
        elif docs and roll < 0.20:  # near copy: 3% of the words replaced
            words = docs[int(rng.integers(len(docs)))].text.split()
            for j in rng.choice(len(words), size=max(1, len(words) // 33), replace=False):
                words[j] = VOCAB[int(rng.integers(len(VOCAB)))]
            docs.append(_doc(doc_id, " ".join(words)))
        else:
            n = int(rng.integers(150, 450))
            words = [VOCAB[k] for k in np.searchsorted(_CDF, rng.random(n))]
            docs.append(_doc(doc_id, " ".join(words)))
    return docs


def bench_signatures(docs: list[Document], config: DedupConfig) -> None:
    texts = [d.text for d in docs]
    t = time.perf_counter()
    all_shingles = [minhash.shingles(x, config.word_ngram, config.char_ngram, config.unspaced_cutoff) for x in texts]
    shingle_s = time.perf_counter() - t
    perms = MinHash(config.num_perm, seed=config.seed).permutations
    t = time.perf_counter()
    for s in all_shingles:
        m = MinHash(config.num_perm, seed=config.seed, permutations=perms, scheme="affine32")
        m.update_batch([x.encode("utf-8") for x in s])
    ds_s = time.perf_counter() - t
    hasher = minhash.MinHasher(config.num_perm, config.seed)
    timings = {}
    for name in ("sha1", "crc32"):
        t = time.perf_counter()
        for s in all_shingles:
            hasher.signature(minhash.shingle_hashes(s, name))
        timings[name] = time.perf_counter() - t
    n = len(docs)
    print(f"  shingling (fold + units + 5-grams): {n / shingle_s:9.0f} docs/s")
    print(f"  signature, datasketch MinHash:      {n / ds_s:9.0f} docs/s (after shingling)")
    print(f"  signature, numpy + sha1 (identical):{n / timings['sha1']:9.0f} docs/s")
    print(f"  signature, numpy + crc32:           {n / timings['crc32']:9.0f} docs/s")
    total = shingle_s + timings[config.shingle_hash]
    print(f"  shingles + signature as configured ({config.shingle_hash}): {n / total:9.0f} docs/s")


def bench_stage(n_docs: int, config: DedupConfig) -> None:
    per_shard = 1000
    shards = max(1, n_docs // per_shard)
    t = time.perf_counter()
    for s in range(shards):
        generate_shard(s, per_shard)
    gen_s = time.perf_counter() - t
    p = beam.Pipeline(runner=runner_for(PipelineOptions(ONE_WORKER)), options=PipelineOptions(ONE_WORKER))
    result = (
        p
        | "Shards" >> beam.Create(list(range(shards)))
        | "Generate" >> beam.FlatMap(generate_shard, per_shard)
        | "Dedup" >> DedupDocuments(config)
    )
    _ = result.rejected | "CountRejected" >> beam.combiners.Count.Globally()
    t = time.perf_counter()
    run = p.run()
    run.wait_until_finish()
    wall = time.perf_counter() - t
    counters = {
        c.key.metric.name: c.committed
        for c in run.metrics().query(MetricsFilter().with_namespace("dedup"))["counters"]
    }
    kept = counters.get("kept", 0)
    rejected = {k.removeprefix("rejected."): v for k, v in counters.items() if k.startswith("rejected.")}
    n = shards * per_shard
    print(
        f"  {n} docs: whole stage {wall:.1f} s incl. generating them ({gen_s:.1f} s alone) -> "
        f"{n / wall:.0f} docs/s, {n / max(wall - gen_s, 1e-9):.0f} docs/s without generation; "
        f"kept {kept}, rejected {rejected}; peak RSS {peak_rss_mib():.0f} MiB"
    )


# -- 2. precision / recall on real text -----------------------------------------------


def load_paragraphs(min_words: int = 80) -> list[str]:
    """Distinct passages: the files hold the same passage cut at different lengths
    (one copy per scoring model), so passages are keyed by their first 10 words and
    the longest cut is kept."""
    longest: dict[str, str] = {}
    for path in sorted(glob.glob(str(DATA / "llm-fast-detect-gpt" / "*.raw_data.json"))):
        for text in json.loads(Path(path).read_text(encoding="utf-8"))["original"]:
            text = " ".join(text.split())
            key = " ".join(text.split()[:10])
            if len(text.split()) >= min_words and len(text) > len(longest.get(key, "")):
                longest[key] = text
    return [longest[k] for k in sorted(longest)]


def edit(words: list[str], kind: str, rate: float, rng: random.Random, donor: list[str]) -> list[str]:
    words = list(words)
    k = max(1, round(rate * len(words)))
    if kind == "delete":
        drop = set(rng.sample(range(len(words)), k))
        return [w for i, w in enumerate(words) if i not in drop]
    if kind == "insert":
        for _ in range(k):
            words.insert(rng.randrange(len(words) + 1), rng.choice(donor))
        return words
    for _ in range(k):  # swap adjacent words
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    return words


def true_jaccard(a: str, b: str, config: DedupConfig) -> float:
    sa, sb = (set(minhash.shingles(x, config.word_ngram, config.char_ngram, config.unspaced_cutoff)) for x in (a, b))
    return len(sa & sb) / len(sa | sb)


def run_stage(docs: list[Document], config: DedupConfig) -> list[tuple[str, str]]:
    """(dropped doc_id, survivor doc_id) of every near-duplicate row."""
    out_path = Path("/tmp") / f"bench_dedup_rows_{time.time_ns()}.json"
    p = beam.Pipeline(runner=runner_for(PipelineOptions(ONE_WORKER)), options=PipelineOptions(ONE_WORKER))
    rows = (
        p
        | beam.Create(docs)
        | DedupDocuments(config)
    ).rejected | beam.Map(lambda r: (r.doc_id, r.detail.split(" ")[0].removeprefix("survivor=")))
    _ = rows | beam.combiners.ToList() | beam.Map(lambda rs: out_path.write_text(json.dumps(rs)))
    p.run().wait_until_finish()
    result = [tuple(r) for r in json.loads(out_path.read_text())]
    out_path.unlink()
    return result


def bench_quality(config: DedupConfig) -> None:
    paragraphs = load_paragraphs()
    rng = random.Random(0)
    rates = (0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
    kinds = ("delete", "insert", "swap")
    docs, pairs = [], []
    donor = " ".join(paragraphs).split()
    for i, text in enumerate(paragraphs):
        kind, rate = kinds[i % 3], rates[(i // 3) % len(rates)]
        copy = " ".join(edit(text.split(), kind, rate, rng, donor))
        a, b = f"p{i:04d}", f"p{i:04d}-edit"
        docs += [_doc(a, text, date="2024-01-01T00:00:00Z"), _doc(b, copy, date="2024-02-01T00:00:00Z")]
        pairs.append((a, b, kind, rate, true_jaccard(text, copy, config)))
    print(f"  {len(pairs)} pairs from {len(paragraphs)} distinct passages (>= 80 words)")
    for verify in (False, True):
        cfg = config.model_copy(update={"verify": verify})
        rows = run_stage(docs, cfg)
        survivor = dict(rows)
        cross = [r for r in rows if r[0].split("-")[0] != r[1].split("-")[0]]
        tp = fp = fn = 0
        by_rate: dict[float, list[int]] = {}
        for a, b, kind, rate, j in pairs:
            # Flagged: the two end in one cluster (one names the other as survivor,
            # or both name the same third document).
            hit = survivor.get(a, a) == survivor.get(b, b)
            truth = j >= 0.8
            tp += hit and truth
            fp += hit and not truth
            fn += truth and not hit
            stats = by_rate.setdefault(rate, [0, 0, 0])
            stats[0] += 1
            stats[1] += truth
            stats[2] += hit
        precision = tp / (tp + fp) if tp + fp else float("nan")
        recall = tp / (tp + fn) if tp + fn else float("nan")
        label = f"verify at true J >= {cfg.verify_threshold}" if verify else "LSH candidates, no verification"
        print(f"  {label}: precision {precision:.3f}, recall {recall:.3f} (tp {tp}, fp {fp}, fn {fn}); "
              f"drops naming another pair's document: {len(cross)}")
        for rate in rates:
            n, truth, hit = by_rate[rate]
            mean_j = np.mean([p[4] for p in pairs if p[3] == rate])
            print(f"    edit rate {rate:4.0%}: {n:4d} pairs, mean exact J {mean_j:.3f}, "
                  f"J >= 0.8: {truth:4d}, flagged: {hit:4d}")


def bench_translations(config: DedupConfig, lines_per_doc: int = 10) -> None:
    base = DATA / "mt-wmt22" / "txt" / "system-outputs"
    docs, pairs, max_j = [], [], 0.0
    for lp in ("cs-en", "de-en", "zh-en"):
        systems = sorted(glob.glob(str(base / f"generaltest2022.{lp}.hyp.*.en")))
        chosen = [s for s in systems if s.endswith(("Online-A.en", "Online-B.en"))] or systems[:2]
        outs = [Path(s).read_text(encoding="utf-8").splitlines() for s in chosen[:2]]
        n = min(len(o) for o in outs)
        for start in range(0, n - lines_per_doc + 1, lines_per_doc):
            a, b = (" ".join(o[start : start + lines_per_doc]) for o in outs)
            ia, ib = f"{lp}-{start}-A", f"{lp}-{start}-B"
            docs += [_doc(ia, a), _doc(ib, b)]
            pairs.append((ia, ib))
            max_j = max(max_j, true_jaccard(a, b, config))
    rows = run_stage(docs, config)
    survivor = dict(rows)
    hits = sum(survivor.get(a, a) == survivor.get(b, b) for a, b in pairs)
    print(f"  {len(pairs)} translation pairs (2 systems x cs/de/zh->en, {lines_per_doc} lines each): "
          f"flagged {hits}; largest exact 5-gram Jaccard {max_j:.3f}; all rows {len(rows)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="also run the whole stage on 100k documents")
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    config = DedupConfig()
    print(f"config: {describe_lsh(config)}")
    print("1. signatures, one core (10k generated documents):")
    bench_signatures([d for s in range(10) for d in generate_shard(s, 1000)], config)
    print("   whole dedup stage, DirectRunner, one worker:")
    bench_stage(10_000, config)
    if args.large:
        bench_stage(100_000, config)
    if not args.skip_quality:
        print("2. near-duplicate decisions against exact Jaccard (real paragraphs, controlled edits):")
        bench_quality(config)
        print("3. translations of one source by two MT systems:")
        bench_translations(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
