"""Detectors of the quality stage: held-out precision, recall, ROC AUC and docs/s.

    .venv/bin/python benchmarks/bench_quality.py [--data ../shared/data] [--no-rewrite]
        [--mt-languages en,de,...] [--site-sizes 1,5,10,20] [--skip-llm] [--skip-quality]

Machine translation is judged by how it generalises. For every target language of
the WMT txt folders (``mt-wmt22``, ``mt-wmt23``), on documents of 10 consecutive
segments, a model is trained exactly as ``pipeline/build_models.py`` trains the
shipped one, on one side of each split, and measured on the other:

- ``split``: the usual held-out 20% of line blocks (no source text shared);
- ``held-out source``: train without one source language, test on its
  translations (references and system outputs of that language pair; one row per
  source language, where a target has translations from 2+ source languages);
- ``held-out year``: train without one test-set year, test on its translations;
- ``held-out systems``: the MT systems in four folds; test on one fold's outputs for
  line blocks that no training document shares (with the human texts of those
  blocks), train on the other systems' other blocks; mean over folds.

Per row: test documents (+/-), ROC AUC, the AUC of "sites" of 5 documents (the mean
score of 5 documents of one system, or of one human reference, as a site that
publishes machine translation publishes many pages), and precision/recall at the
threshold that reaches precision 0.95 on a balanced prior (positives and negatives
weighted equally, since the test sets hold ~10 system outputs per reference), if
any. Held-out figures pool the scores of all held-out folds.

Site level (``--site-sizes``, default 1,5,10,20 documents a site; 1: single
documents), on the held-out source languages where a target has 2+ of them, else on
the four held-out-system folds: for each fold, precision (balanced), recall and
false-positive sites at the threshold that reaches precision 0.95 on the *other*
folds' sites (a threshold chosen without the fold it is measured on, as a default
would meet a new source), and at the one threshold that reaches it on all folds
pooled. A default rejection threshold needs precision 0.95 on every held-out fold.

Weak-model text: leave one generator out (train on the other four, test on the
held-out model's texts and on human texts no training text shares), per generator;
plus the usual split. docs/s: normalisation plus prediction, one thread.

Rewrites: all-MiniLM-L6-v2 cosine between two human translations of the same
10-segment block (WMT references A and B: paraphrases) against two blocks of
different passages; needs the `rewrite` extra.
"""

from __future__ import annotations

import argparse
import sys
import time
from argparse import Namespace
from collections import defaultdict
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from mmcurate.filters.quality import normalize_texts
from mmcurate.pipeline import build_models
from mmcurate.pipeline.train import evaluate, fit, model_kind, parser, predict, roc_auc
from mmcurate.pipeline.train_examples import Example, _hash, balance, load_examples, split_examples, wmt_examples, wmt_files

SITE_PAGES = 5
# Site sizes (documents per site) of the site-level precision/recall (1: single documents).
SITE_SIZES = (1, 5, 10, 20)
TARGET_PRECISION = 0.95


def _args(kind: str, extra: Sequence[str] = ()) -> Namespace:
    return parser().parse_args([kind, "--positive", "x", "--negative", "x", "--output", "x", *extra])


def mt_counts(data: Path, language: str, lines: int = 10):
    """``language``'s WMT documents of ``lines`` segments (as ``bench_mt`` makes them),
    their count matrix with the shipped MT models' features and their labels, for
    experiments that refit the shipped recipe on rows of it
    (``pipeline.train.tfidf_features``): ``(examples, counts, labels)``."""
    from mmcurate.filters.translationese import count_matrix

    settings = _args("mt", build_models.MT_ARGS)
    files = wmt_files(build_models.wmt_dirs(data), build_models.WMT_EXCLUDE)
    examples = wmt_examples(files, language, lines)
    counts = count_matrix([e.text for e in examples], tuple(settings.families.split(",")), settings.bits)
    return examples, counts, np.array([e.label for e in examples])


def _train(train: Sequence[Example], args: Namespace):
    if model_kind(args) == "fasttext" and args.balance:
        train = balance(train, args.seed)
    return fit(train, args)


def balanced_precision_threshold(labels, scores, target: float = TARGET_PRECISION):
    """The lowest threshold whose precision, with both classes weighted to equal
    totals, is at least ``target``; (threshold, precision, recall) or None."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return None
    order = np.argsort(-s, kind="mergesort")
    tp = np.cumsum(y[order]) / n_pos  # recall at each cut
    fp = np.cumsum(~y[order]) / n_neg  # false-positive rate
    precision = tp / np.maximum(tp + fp, 1e-12)
    ok = np.nonzero(precision >= target)[0]
    # the deepest cut that still holds the target, at a distinct score
    for i in ok[::-1]:
        if i + 1 == len(s) or s[order[i]] != s[order[i + 1]]:
            return float(s[order[i]]), float(precision[i]), float(tp[i])
    return None


def site_scores(examples: Sequence[Example], scores: Sequence[float], pages: int) -> tuple[list[int], list[float]]:
    """Labels and mean scores of "sites": ``pages`` consecutive documents (in line
    order) of one system, or one human reference, or the originals, of one pair."""
    by_source = defaultdict(list)
    for ex, score in zip(examples, scores):
        by_source[(ex.label, ex.system, ex.year, ex.source)].append((ex.group, score))
    labels, means = [], []
    for (label, *_), members in by_source.items():
        members.sort()
        for i in range(0, len(members) - pages + 1, pages):
            labels.append(label)
            means.append(float(np.mean([m[1] for m in members[i : i + pages]])))
    return labels, means


def site_auc(examples: Sequence[Example], scores: Sequence[float], pages: int = SITE_PAGES) -> float:
    """ROC AUC of the mean score of ``pages`` documents of one system (or one human
    reference, or the originals) of one pair, in line order."""
    return roc_auc(*site_scores(examples, scores, pages))


def precision_recall_at(labels, scores, threshold: float) -> tuple[float, float, int, int]:
    """Balanced precision (both classes weighted to equal totals), recall, and the
    counts of positives and negatives flagged, flagging scores >= ``threshold``."""
    y = np.asarray(labels, dtype=bool)
    flagged = np.asarray(scores, dtype=np.float64) >= threshold
    tp, fp = int((flagged & y).sum()), int((flagged & ~y).sum())
    recall, fpr = tp / max(int(y.sum()), 1), fp / max(int((~y).sum()), 1)
    return (recall / (recall + fpr) if recall + fpr else float("nan")), recall, tp, fp


def site_threshold_rows(folds: Sequence[tuple[str, Sequence[Example], Sequence[float]]], pages: int) -> dict:
    """Site-level precision and recall on held-out folds, for sites of ``pages``
    documents (1: single documents), at two thresholds:

    - ``cross``: for each fold, the threshold that reaches balanced precision 0.95 on
      the sites of the *other* folds, applied to this fold;
    - ``pooled``: the one threshold that reaches it on all folds' sites together (what
      a default would be; chosen on the folds it is then measured on, so the
      ``cross`` figures are the honest estimate), with each fold's figures at it.

    Returns {"pooled": (threshold, precision, recall) or None, "folds": [per fold:
    name, positive and negative sites, cross threshold, precision, recall, false
    positives, and precision, recall, false positives at the pooled threshold]}."""
    sites = [(name, *site_scores(test, scores, pages)) for name, test, scores in folds]
    all_labels = [y for _, labels, _ in sites for y in labels]
    all_means = [m for _, _, means in sites for m in means]
    pooled = balanced_precision_threshold(all_labels, all_means)
    rows = []
    for name, labels, means in sites:
        other_labels = [y for n, ls, _ in sites if n != name for y in ls]
        other_means = [m for n, _, ms in sites if n != name for m in ms]
        cross = balanced_precision_threshold(other_labels, other_means) if other_labels else None
        row = {"name": name, "pos": sum(labels), "neg": len(labels) - sum(labels), "cross": None, "pooled": None}
        if cross is not None:
            row["cross"] = (cross[0], *precision_recall_at(labels, means, cross[0]))
        if pooled is not None:
            row["pooled"] = (pooled[0], *precision_recall_at(labels, means, pooled[0]))
        rows.append(row)
    return {"pooled": pooled, "folds": rows}


def print_site_thresholds(language: str, protocol: str, folds, sizes: Sequence[int] = SITE_SIZES) -> None:
    """One block per site size: the pooled threshold, then per fold the cross-fold
    and pooled thresholds' precision (P), recall (R) and false-positive sites (FP)."""
    for pages in sizes:
        result = site_threshold_rows(folds, pages)
        pooled = result["pooled"]
        head = f"pooled threshold {pooled[0]:.3f} (P {pooled[1]:.3f} R {pooled[2]:.3f})" if pooled else "no pooled threshold reaches P 0.95"
        print(f"  {language:3s} site({pages:2d}) {protocol}: {head}", flush=True)
        for row in result["folds"]:
            def at(v):
                if not v:
                    return "none"
                precision = "  -  " if v[1] != v[1] else f"{v[1]:.3f}"  # nan: nothing flagged
                return f"t {v[0]:.3f} P {precision} R {v[2]:.3f} FP {v[4]}"
            print(f"  {language:3s}   {row['name']:28s} {row['pos']:5d}+/{row['neg']:4d}- sites  "
                  f"other folds' threshold: {at(row['cross'])}  pooled: {at(row['pooled'])}", flush=True)


def _row(name: str, test: Sequence[Example], scores: Sequence[float]) -> dict:
    labels = [e.label for e in test]
    at = balanced_precision_threshold(labels, scores)
    return {
        "name": name, "pos": sum(labels), "neg": len(labels) - sum(labels), "auc": roc_auc(labels, scores),
        "site_auc": site_auc(test, scores), "threshold": at,
    }


def _print(language: str, row: dict) -> None:
    at = row["threshold"]
    at_text = f"P {at[1]:.3f} R {at[2]:.3f} at {at[0]:.3f}" if at else "no threshold reaches P 0.95"
    print(f"  {language:3s} {row['name']:28s} {row['pos']:5d}+/{row['neg']:4d}-  AUC {row['auc']:.3f}  "
          f"site({SITE_PAGES}) AUC {row['site_auc']:.3f}  {at_text}", flush=True)


def mt_folds(examples: Sequence[Example], seed: int = 0) -> dict[str, list[tuple[list, list]]]:
    """The held-out protocols (module docstring): name -> [(train, test), ...]."""
    folds: dict[str, list[tuple[list, list]]] = {}
    sources = sorted({e.source for e in examples if e.source})
    if len(sources) > 1:
        for src in sources:
            test = [e for e in examples if e.source == src]
            train = [e for e in examples if e.source != src]
            folds[f"held-out source {src}"] = [(train, test)]
    years = sorted({e.year for e in examples})
    for year in years if len(years) > 1 else ():
        test = [e for e in examples if e.year == year and e.source]
        train = [e for e in examples if e.year != year]
        if {e.label for e in test} == {0, 1} and {e.label for e in train} == {0, 1}:
            folds[f"held-out year {year}"] = [(train, test)]
    systems = sorted({e.system for e in examples if e.label == 1})
    fold_of = {s: i % 4 for i, s in enumerate(systems)}
    runs = []
    for k in range(4):
        held = {e.group for e in examples if int(_hash(f"{seed}:{k}:{e.group}")[:8], 16) / 0xFFFFFFFF < 0.3}
        test = [e for e in examples if e.group in held and (e.label == 0 or fold_of[e.system] == k)]
        train = [e for e in examples if e.group not in held and (e.label == 0 or fold_of[e.system] != k)]
        runs.append((train, test))
    folds["held-out systems"] = runs
    return folds


def bench_mt(data: Path, languages: Sequence[str], extra: Sequence[str] = (),
             site_sizes: Sequence[int] = SITE_SIZES) -> dict[str, list[dict]]:
    files = wmt_files(build_models.wmt_dirs(data), build_models.WMT_EXCLUDE)
    args = _args("mt", [*build_models.MT_ARGS, *extra])
    results: dict[str, list[dict]] = {}
    for language in languages:
        examples = wmt_examples(files, language, 10)
        if len({e.label for e in examples}) < 2:
            print(f"  {language:3s} no WMT documents of both classes under {data}", flush=True)
            continue
        train, test = split_examples(examples, args.test_fraction, args.seed)
        model = _train(train, args)
        scores = predict(model, [e.text for e in test])
        rate, rate_with_normalising, timed = _speed(model, files, language)
        rows = [_row("split", test, scores)]
        _print(language, rows[0])
        pooled_tests, pooled_scores = [], []
        folds = mt_folds(examples, args.seed)
        site_folds, system_tests, system_scores = [], [], []
        for name, runs in folds.items():
            tests, scores = [], []
            for tr, te in runs:
                scores += predict(_train(tr, args), [e.text for e in te])
                tests += te
            if name.startswith("held-out source"):
                site_folds.append((name.removeprefix("held-out source "), tests, scores))
            elif name == "held-out systems":
                system_tests, system_scores = tests, scores
            row = _row(name, tests, scores)
            if name == "held-out systems":
                row["auc"] = float(np.mean([roc_auc([e.label for e in te], s) for te, s in _per_fold(runs, tests, scores)]))
            rows.append(row)
            _print(language, row)
            if name.startswith("held-out source"):
                pooled_tests += tests
                pooled_scores += scores
        if pooled_tests:
            rows.append(_row("held-out sources, pooled", pooled_tests, pooled_scores))
            _print(language, rows[-1])
        if site_folds:
            print_site_thresholds(language, "held-out sources", site_folds, site_sizes)
        elif "held-out systems" in folds:
            per_fold = _per_fold(folds["held-out systems"], system_tests, system_scores)
            systems = [(f"systems fold {k}", te, s) for k, (te, s) in enumerate(per_fold)]
            print_site_thresholds(language, "held-out systems", systems, site_sizes)
        print(f"  {language:3s} {rate:,.0f} docs/s scoring normalised text, {rate_with_normalising:,.0f} docs/s "
              f"with normalisation (CPU time of 1 thread, {timed:,} documents of 10 segments, batches of 64)", flush=True)
        results[language] = rows
    return results


def _speed(model, files, language: str, n: int = 2000) -> tuple[float, float, int]:
    """Documents per CPU-second: scoring normalised text (what the stage adds per
    model, normalising once for all its models), and normalising plus scoring; and
    how many documents were timed (up to ``n``: WMT23 en-de has fewer)."""
    raw = []
    for f in files:
        if f.language == language:
            lines = f.path.read_text(encoding="utf-8").splitlines()
            raw += ["\n".join(lines[i : i + 10]) for i in range(0, len(lines) - 9, 10)]
        if len(raw) >= n:
            break
    raw = raw[:n]
    started = time.process_time()
    texts = [t for i in range(0, len(raw), 64) for t in normalize_texts(raw[i : i + 64])]  # the stage's batch size
    normalising = time.process_time() - started
    started = time.process_time()
    for i in range(0, len(texts), 64):
        predict(model, texts[i : i + 64])
    scoring = time.process_time() - started
    return len(texts) / scoring, len(texts) / (scoring + normalising), len(texts)


def _per_fold(runs, tests, scores):
    i = 0
    for _, te in runs:
        yield te, scores[i : i + len(te)]
        i += len(te)


def bench_llm(data: Path) -> None:
    """Weak-model text: leave one generator out, per generator; and the usual split."""
    files = sorted((data / "llm-fast-detect-gpt").glob("*.raw_data.json"))
    generators = sorted({p.name.split("_", 1)[1].removesuffix(".raw_data.json") for p in files})
    args = _args("llm", build_models.SMALL)
    pos = {g: load_examples([f"{p}@sampled" for p in files if p.name.endswith(f"_{g}.raw_data.json")], 1, 0)
           for g in generators}
    neg = load_examples([f"{p}@original" for p in files], 0, 0)
    for generator in generators:
        held = {e.group for e in pos[generator]}
        rest = [e for g in generators if g != generator for e in pos[g] if e.group not in held]
        train = rest + [e for e in neg if e.group not in held]
        test = pos[generator] + [e for e in neg if e.group in held]
        scores = predict(_train(train, args), [e.text for e in test])
        e = evaluate([x.label for x in test], scores)
        print(f"  llm held-out generator {generator:14s} test {e['positives']:5d}+/{e['negatives']:5d}-  "
              f"P@0.5 {e['precision']:.3f} R@0.5 {e['recall']:.3f}  ROC AUC {e['roc_auc']:.3f}", flush=True)


def _bench(name: str, kind: str, pos: list[str], neg: list[str], lines: int, subset: Callable | None = None) -> None:
    args = _args(kind, build_models.SMALL)
    examples = load_examples(pos, 1, lines) + load_examples(neg, 0, lines)
    train, test = split_examples(examples, args.test_fraction, args.seed)
    model = _train(train, args)
    texts = [e.text for e in test]
    started = time.perf_counter()
    scores = predict(model, texts)
    rate = len(texts) / (time.perf_counter() - started)
    rows = [(name, test, scores)]
    if subset is not None:
        keep = [i for i, e in enumerate(test) if subset(e)]
        rows.append((name + " (same content)", [test[i] for i in keep], [scores[i] for i in keep]))
    for label, exs, sc in rows:
        labels = [e.label for e in exs]
        at5, at9 = evaluate(labels, sc, 0.5), evaluate(labels, sc, 0.9)
        print(
            f"{label:24s} test {at5['positives']:5d}+/{at5['negatives']:5d}-  "
            f"P@0.5 {at5['precision']:.3f} R@0.5 {at5['recall']:.3f}  "
            f"P@0.9 {at9['precision']:.3f} R@0.9 {at9['recall']:.3f}  ROC AUC {at5['roc_auc']:.3f}"
        )
    print(f"{'':24s} {rate:,.0f} docs/s (normalise + predict, 1 thread; train split {len(train)} docs before balancing)")


def _rewrite(data: Path, n: int) -> None:
    import torch

    from mmcurate.pipeline.train import roc_auc
    from mmcurate.stages.engines.text_classifiers import default_embedding_model
    from mmcurate.stages.quality import SentenceEmbeddingModelHandler

    torch.set_num_threads(1)
    refs = data / "mt-wmt22" / "txt" / "references"

    def blocks(path: Path) -> list[str]:
        lines = path.read_text(encoding="utf-8").splitlines()
        return ["\n".join(lines[i : i + 10]) for i in range(0, len(lines), 10)][:n]

    a, b = blocks(refs / "generaltest2022.de-en.ref.A.en"), blocks(refs / "generaltest2022.de-en.ref.B.en")
    handler = SentenceEmbeddingModelHandler(str(default_embedding_model()), batch_size=32)
    model = handler.load_model()
    started = time.perf_counter()
    ea = model.encode(a, normalize_embeddings=True, show_progress_bar=False)
    eb = model.encode(b, normalize_embeddings=True, show_progress_bar=False)
    rate = (len(a) + len(b)) / (time.perf_counter() - started)
    shift = len(a) // 2  # a different passage of the test set
    same = (ea * eb).sum(axis=1)
    other = (ea * np.roll(eb, shift, axis=0)).sum(axis=1)
    labels = [1] * len(same) + [0] * len(other)
    scores = np.concatenate([same, other]).tolist()
    for threshold in (0.8, 0.9):
        e = evaluate(labels, scores, threshold)
        print(f"{'rewrite @' + str(threshold):24s} test {len(same)} paraphrase / {len(other)} other pairs  "
              f"P {e['precision']:.3f} R {e['recall']:.3f}  ROC AUC {roc_auc(labels, scores):.3f}")
    print(f"{'':24s} {rate:,.1f} docs/s (all-MiniLM-L6-v2 embedding, 1 thread)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=build_models.shared_data())
    p.add_argument("--mt-languages", default="", help="comma-separated targets (default: every one the data has)")
    p.add_argument("--mt-train-args", default="", help="extra `mmcurate train` flags for the MT models, e.g. "
                   "'--bits 20 --c 3' (to compare against the shipped settings)")
    p.add_argument("--site-sizes", default=",".join(map(str, SITE_SIZES)),
                   help="documents per site for the site-level precision/recall (1: single documents)")
    p.add_argument("--skip-llm", action="store_true")
    p.add_argument("--skip-quality", action="store_true")
    p.add_argument("--no-rewrite", action="store_true", help="skip the embedding benchmark")
    p.add_argument("--rewrite-blocks", type=int, default=200)
    args = p.parse_args()
    languages = [x for x in args.mt_languages.split(",") if x] or build_models.mt_languages(args.data)
    if not languages:
        print(f"no WMT data under {args.data}", file=sys.stderr)
        return 2
    # fastText first, scikit-learn (the MT models) after: fastText's "Encountered
    # NaN" failures (pipeline/build_models.py) were seen first after a scikit-learn fit.
    if not args.skip_llm:
        llm_pos, llm_neg = build_models._fast_detect(args.data)
        print("== llm")
        bench_llm(args.data)
        _bench("llm", "llm", llm_pos, llm_neg, 0)
        if not args.skip_quality:
            mt_pos, mt_neg = build_models._wmt(args.data)
            _bench("quality (human vs machine)", "quality", mt_neg + llm_neg, mt_pos + llm_pos, 10)
    print("== mt (documents of 10 segments)")
    bench_mt(args.data, languages, args.mt_train_args.split(), [int(x) for x in args.site_sizes.split(",") if x])
    if not args.no_rewrite:
        _rewrite(args.data, args.rewrite_blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
