"""Source rebalancing: does `mmcurate plan` raise the share of pages read that become
interleaved image-text documents?

1. Simulated crawl. A columnar-index extract of ``--domains`` registered domains
   (default 4,000), 5-600 pages each (log-normal sizes), 1-3 hosts per domain.
   Each domain has a true yield, the chance that one of its pages becomes a kept
   document with >= 1 image: text-only domains (the majority, 75%) draw it from
   Beta(0.2, 20) (mean 1%), multimodal ones from Beta(2.5, 2.5) (mean 50%). Domains
   have a language (en 55%, de 15%, ja 10%, fr 10%, es 10%) and a matching TLD, and
   URL paths whose words lean towards the domain's kind (gallery, recipes, travel
   ... vs news, forum, docs ...; 70-80% of the time), so features say something, not
   everything, about unseen hosts. A page's fate is fixed: it succeeds when a
   seeded hash of its pointer falls below its domain's yield, whoever reads it.
   Round 1 reads a uniform sample of ``--budget`` pages; each later round runs the
   real `plan` (Beam, DirectRunner) over all earlier rounds' run directories, and
   the pages it chose are "read" (their run tables are written as a run writes
   them). Uniform sampling at the same budget is the baseline: an independent
   uniform sample of unread pages each round.
2. Real archived pages. The WARC fixtures in ../shared/fixtures/warc and, with
   ``--news DIR`` (the ``tests/data`` folder of the newspaper4k 0.9.6 sdist:
   ``pip download --no-deps --no-binary :all: newspaper4k==0.9.6``), its 19 real
   news pages with their URLs, written into a WARC. A census run over everything
   gives each page's true outcome; the loop then reads by `run --index` for real:
   round 1 a uniform sample, later rounds what `plan` chose.

Prints per round: pages read, the share that became documents with >= 1 image,
the uniform baseline (simulated: the share of an independent uniform sample of the
same size; real pages: the population's share, the expectation of a uniform sample),
their ratio, the cumulative ratio over rounds 1..n, the most pointers any domain got
(vs the cap), each language quota, the exploration share and the plan's wall time.

    .venv/bin/python benchmarks/bench_plan.py                         # simulated, 4k domains
    .venv/bin/python benchmarks/bench_plan.py --news /tmp/np4k/newspaper4k-0.9.6/tests/data
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mmcurate.filters.sources import host_of, key_hash, pointer_key, unit_hash
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.plan import plan_sources
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, to_table

ROOT = Path(__file__).resolve().parent.parent
# ../shared beside the checkout (or beside the folder of worktrees)
FIXTURES = next(
    (p / "shared" / "fixtures" / "warc" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared" / "fixtures").is_dir()),
    ROOT.parent / "shared" / "fixtures" / "warc",
)

LANGUAGES = (("en", 0.55, ("com", "org", "net", "co.uk")), ("de", 0.15, ("de", "at")), ("ja", 0.10, ("jp",)),
             ("fr", 0.10, ("fr",)), ("es", 0.10, ("es",)))
ISO3 = {"en": "eng", "de": "deu", "ja": "jpn", "fr": "fra", "es": "spa"}
VISUAL = ("gallery", "recipes", "travel", "photos", "diy", "fashion", "review", "garden")
TEXTUAL = ("news", "forum", "docs", "politics", "legal", "wiki", "finance", "thread")
SIM_SEED = 20240501


# -- 1. simulated crawl -------------------------------------------------------------------


def simulated_index(n_domains: int, seed: int) -> tuple[pa.Table, dict[int, float]]:
    """The index and each row's true yield (by pointer hash)."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {k: [] for k in (
        "url", "url_host_name", "url_host_registered_domain", "url_host_tld", "url_path", "content_mime_detected",
        "content_languages", "fetch_status", "warc_filename", "warc_record_offset", "warc_record_length")}
    truth: dict[int, float] = {}
    offsets: dict[str, int] = {}
    langs = [lang for lang, _, _ in LANGUAGES]
    weights = [w for _, w, _ in LANGUAGES]
    for d in range(n_domains):
        visual = rng.random() < 0.25
        yield_ = rng.beta(2.5, 2.5) if visual else rng.beta(0.2, 20.0)
        li = rng.choice(len(langs), p=weights)
        lang, tlds = langs[li], LANGUAGES[li][2]
        tld = tlds[rng.integers(len(tlds))]
        domain = f"site{d}.{tld}"
        hosts = ["www." + domain] + [f"{h}.{domain}" for h in ("blog", "shop")[: rng.integers(0, 3)]]
        n = int(np.clip(rng.lognormal(3.0, 1.0), 5, 600))
        topics = [VISUAL[rng.integers(len(VISUAL))] if (rng.random() < 0.7) == visual or rng.random() < 0.2 else
                  TEXTUAL[rng.integers(len(TEXTUAL))] for _ in range(2)]
        if not visual and rng.random() < 0.8:
            topics = [TEXTUAL[rng.integers(len(TEXTUAL))] for _ in range(2)]
        warc = f"crawl-data/SIM/segments/{d % 64}/warc/SIM-{d % 64:05d}.warc.gz"
        for i in range(n):
            host = hosts[i % len(hosts)]
            path = f"/{topics[i % 2]}/{i}-page-{rng.integers(1_000_000)}"
            offset = offsets.get(warc, 0)
            length = int(rng.integers(5_000, 60_000))
            offsets[warc] = offset + length
            for k, v in (("url", f"https://{host}{path}"), ("url_host_name", host), ("url_host_registered_domain", domain),
                         ("url_host_tld", tld.rsplit(".", 1)[-1]), ("url_path", path),
                         ("content_mime_detected", "text/html"), ("content_languages", ISO3[lang]),
                         ("fetch_status", 200), ("warc_filename", warc), ("warc_record_offset", offset),
                         ("warc_record_length", length)):
                rows[k].append(v)
            truth[key_hash(pointer_key(warc, offset))] = float(yield_)
    return pa.table(rows), truth


def succeeds(pointer: int, yield_: float) -> bool:
    return unit_hash(SIM_SEED, "page", str(pointer)) < yield_


def write_simulated_run(run_dir: Path, chosen: list[dict], truth: dict[int, float], lang_of: dict[str, str]) -> int:
    """Run tables for the pages ``chosen`` (index rows), as `mmcurate run` writes them;
    returns how many succeeded."""
    docs, decisions = [], []
    for row in chosen:
        pointer = key_hash(pointer_key(row["warc_filename"], row["warc_record_offset"]))
        prov = {"warc_file": "s3://commoncrawl/" + row["warc_filename"], "warc_record_id": f"<urn:{pointer}>",
                "warc_date": "2024-05-01T00:00:00Z", "warc_offset": row["warc_record_offset"],
                "warc_length": row["warc_record_length"]}
        doc_id = f"{pointer & 0xFFFFFFFFFFFF:012x}"
        if succeeds(pointer, truth[pointer]):
            images = 1 + pointer % 7
            docs.append({"doc_id": doc_id, "url": row["url"], "language": lang_of.get(row["url"], ""),
                         "texts": ["text"] + [None] * images, "images": [None] + ["https://img/x.jpg"] * images,
                         "num_texts": 1, "num_images": images, **prov})
        else:
            decisions.append({"doc_id": doc_id, "url": row["url"], "subject": "page", "stage": "heuristics",
                              "kind": "rejected", "reason": "content.too_few_images", **prov})
    for table, rows in ((DOCUMENTS, docs), (DECISIONS, decisions)):
        (run_dir / table).mkdir(parents=True, exist_ok=True)
        pq.write_table(to_table(rows, table), run_dir / table / "part-00000.parquet")
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": run_dir.name, "simulated": True}))
    return len(docs)


def simulate(args, work: Path) -> list[dict]:
    index, truth = simulated_index(args.domains, args.seed)
    index_path = work / "index.parquet"
    pq.write_table(index, index_path)
    rows = index.to_pylist()
    lang_of = {r["url"]: {v: k for k, v in ISO3.items()}[r["content_languages"]] for r in rows}
    population = float(np.mean([truth[key_hash(pointer_key(r["warc_filename"], r["warc_record_offset"]))] for r in rows]))
    print(f"simulated index: {len(rows)} rows, {args.domains} domains, mean true yield {population:.4f}")
    rng = random.Random(args.seed)
    order = list(range(len(rows)))
    rng.shuffle(order)
    uniform_order = list(range(len(rows)))
    random.Random(args.seed + 1).shuffle(uniform_order)
    overrides = [f"plan.languages={args.languages}"] if args.languages else []
    overrides += [f"plan.max_domain_share={args.cap_share}", *args.plan_set]
    config = load_config(None, overrides).plan
    runs: list[str] = []
    results = []
    for rnd in range(1, args.rounds + 1):
        run_dir = work / f"sim-run{rnd}"
        wall, summary = 0.0, None
        if rnd == 1:
            chosen = [rows[i] for i in order[: args.budget]]
        else:
            out = work / f"plan{rnd}.parquet"
            started = time.perf_counter()
            cfg = config.model_copy(update={"seed": args.seed + rnd})
            summary = plan_sources(runs, str(index_path), args.budget, str(out), cfg, ["--runner=DirectRunner"])
            wall = time.perf_counter() - started
            chosen = pq.read_table(out).to_pylist()
        successes = write_simulated_run(run_dir, chosen, truth, lang_of)
        runs.append(str(run_dir))
        uniform = [rows[i] for i in uniform_order[(rnd - 1) * args.budget : rnd * args.budget]]
        uniform_ok = sum(succeeds(p, truth[p]) for p in (key_hash(pointer_key(r["warc_filename"], r["warc_record_offset"])) for r in uniform))
        per_domain: dict[str, int] = {}
        for r in chosen:
            per_domain[r["url_host_registered_domain"]] = per_domain.get(r["url_host_registered_domain"], 0) + 1
        results.append({
            "round": rnd, "read": len(chosen), "share": successes / len(chosen), "uniform": uniform_ok / len(uniform),
            "max_per_domain": max(per_domain.values()), "cap": summary["domain_cap"] if summary else None,
            "languages": summary["languages"] if summary else {}, "exploration": summary["exploration_share"] if summary else None,
            "wall_s": wall,
        })
    return results


# -- 2. real archived pages -------------------------------------------------------------


def news_warc(news_dir: Path, path: Path) -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    from warcbuild import WarcBuilder

    n = 0
    with WarcBuilder.open(path) as warc:
        for meta in sorted(news_dir.glob("metadata/*.json")):
            url = json.loads(meta.read_text()).get("url")
            page = news_dir / "html" / (meta.stem + ".html")
            if isinstance(url, str) and url.startswith("http") and page.exists():
                warc.html(url, page.read_bytes().decode("utf-8", "replace"))
                n += 1
    return n


def _cli(args: list[str]) -> None:
    import contextlib
    import io

    from mmcurate.pipeline.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    if code != 0:
        raise SystemExit(f"mmcurate {' '.join(args)} -> exit {code}")


def _pages(run_dir: Path) -> list[dict]:
    cols = ["url", "warc_file", "warc_offset", "warc_length"]
    docs = pq.read_table(run_dir / "documents", columns=cols + ["num_images"]).to_pylist()
    rest = [r for r in pq.read_table(run_dir / "decisions", columns=cols + ["subject"]).to_pylist() if r["subject"] == "page"]
    return [dict(r, success=(r.get("num_images") or 0) >= 1) for r in docs] + [dict(r, success=False) for r in rest]


def real_pages(args, work: Path) -> list[dict]:
    warcs = sorted(glob.glob(str(FIXTURES / "*.warc*")))
    print(f"real WARC fixtures: {len(warcs)} files in {FIXTURES}")
    if args.news:
        n = news_warc(Path(args.news), work / "news.warc.gz")
        warcs.append(str(work / "news.warc.gz"))
        print(f"news pages written to a WARC: {n}")
    census = work / "census"
    _cli(["run", *warcs, "-o", str(census), "--runner-preset", "direct", "--quiet"])
    pages = [p for p in _pages(census) if p["url"] and p["warc_offset"] is not None and p["warc_offset"] >= 0]
    outcome = {(p["warc_file"], p["warc_offset"]): p["success"] for p in pages}
    index = pa.table({
        "url": [p["url"] for p in pages],
        "url_host_name": [host_of(p["url"]) for p in pages],
        "warc_filename": [p["warc_file"] for p in pages],
        "warc_record_offset": [p["warc_offset"] for p in pages],
        "warc_record_length": [p["warc_length"] for p in pages],
    })
    index_path = work / "real-index.parquet"
    pq.write_table(index, index_path)
    population = sum(outcome.values()) / len(outcome)
    print(f"real pages: {len(pages)} in {len(set(index.column('url_host_name').to_pylist()))} hosts, "
          f"{sum(outcome.values())} become documents with >= 1 image (uniform yield {population:.3f})")
    budget = args.real_budget
    rng = random.Random(args.seed)
    first = rng.sample(range(len(pages)), budget)
    runs: list[str] = []
    results = []
    read: set = set()
    for rnd in range(1, args.rounds + 1):
        pointers = work / f"real-pointers{rnd}.parquet"
        wall, summary = 0.0, None
        if rnd == 1:
            pq.write_table(index.take(first), pointers)
        else:
            started = time.perf_counter()
            _cli(["plan", *runs, "--index", str(index_path), "--budget", str(budget), "--output", str(pointers),
                  "--set", f"plan.max_per_domain={args.real_cap}", "--set", f"plan.seed={args.seed + rnd}", "--quiet",
                  "--runner-preset", "direct"])
            wall = time.perf_counter() - started
            summary = json.loads(pointers.with_suffix(".summary.json").read_text())
        chosen = pq.read_table(pointers).to_pylist()
        if not chosen:
            print(f"round {rnd}: nothing left to read")
            break
        run_dir = work / f"real-run{rnd}"
        _cli(["run", "--index", str(pointers), "-o", str(run_dir), "--runner-preset", "direct", "--quiet"])
        got = _pages(run_dir)
        again = sum((p["warc_file"], p["warc_offset"]) in read for p in got)
        read |= {(p["warc_file"], p["warc_offset"]) for p in got}
        runs.append(str(run_dir))
        unread = [k for k in outcome if k not in read]
        per_domain: dict[str, int] = {}
        for r in chosen:
            d = r.get("url_host_registered_domain") or host_of(r["url"])
            per_domain[d] = per_domain.get(d, 0) + 1
        results.append({
            "round": rnd, "read": len(got), "share": sum(p["success"] for p in got) / len(got),
            "uniform": population, "max_per_domain": max(per_domain.values()),
            "cap": summary["domain_cap"] if summary else None, "languages": {},
            "exploration": summary["exploration_share"] if summary else None, "wall_s": wall, "reread": again,
            "unread_left": len(unread),
        })
    return results


def print_rounds(title: str, results: list[dict]) -> None:
    print(f"\n{title}")
    print(f"{'round':>5} {'read':>6} {'share':>7} {'uniform':>8} {'ratio':>6} {'cum.ratio':>9} {'max/dom':>8} {'cap':>4} "
          f"{'explore':>8} {'plan s':>7}  languages")
    read = found = expected = 0.0
    for r in results:
        ratio = r["share"] / r["uniform"] if r["uniform"] else float("nan")
        read += r["read"]
        found += r["share"] * r["read"]
        expected += r["uniform"] * r["read"]
        cumulative = found / expected if expected else float("nan")
        langs = ", ".join(f"{k} {v['selected']}/{v['wanted']}{'' if v['met'] else ' NOT MET'}" for k, v in r["languages"].items())
        print(f"{r['round']:>5} {r['read']:>6} {r['share']:>7.3f} {r['uniform']:>8.3f} {ratio:>6.2f} {cumulative:>9.2f} "
              f"{r['max_per_domain']:>8} {r['cap'] if r['cap'] is not None else '-':>4} "
              f"{r['exploration'] if r['exploration'] is not None else '-':>8} {r['wall_s']:>7.1f}  {langs}"
              + (f"  re-read {r['reread']}" if r.get("reread") else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domains", type=int, default=4000)
    parser.add_argument("--budget", type=int, default=2000, help="pages per round (simulated)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cap-share", type=float, default=0.02, help="plan.max_domain_share")
    parser.add_argument("--languages", default="ja:0.1,de:0.15", help="plan.languages for the simulated rounds")
    parser.add_argument("--plan-set", action="append", default=[], metavar="plan.KEY=VALUE",
                        help="a plan config override for the simulated rounds, e.g. plan.probe_pages=0")
    parser.add_argument("--news", help="newspaper4k 0.9.6 tests/data folder (real news pages)")
    parser.add_argument("--real-budget", type=int, default=8)
    parser.add_argument("--real-cap", type=int, default=3)
    parser.add_argument("--skip-sim", action="store_true")
    parser.add_argument("--skip-real", action="store_true")
    parser.add_argument("--keep", help="keep the work files in this folder")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-plan-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if not args.skip_sim:
            print_rounds(f"simulated: {args.domains} domains, {args.budget} pages a round, quotas {args.languages}",
                         simulate(args, work))
        if not args.skip_real:
            print_rounds(f"real archived pages: {args.real_budget} pages a round, cap {args.real_cap} per domain",
                         real_pages(args, work))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work files: {os.path.abspath(work)}")


if __name__ == "__main__":
    main()
