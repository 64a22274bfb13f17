"""English MT detection on held-out source languages: label-noise cleaning,
weighting and document length (issue 13; docs/stages.md, "Machine translation: how
well it generalises").

    nice -n 10 .venv/bin/python benchmarks/bench_mt_noise.py [--data ../shared/data]
        [--parts base,noise,weights,length,diag,sources,systems] [--oof block|source]
        [--variants shipped,units,refsys,units+refsys]

Every variant is the shipped model (``pipeline/train.py`` ``train_linear``: sublinear
tf-idf over hashed words+bigrams, 2^18 buckets, every bucket seen in 2+ training
documents, logistic regression C=10, classes balanced) fitted on the training side
of ``bench_quality.mt_folds`` and measured on its test side, with one change:

- ``noise``: out-of-fold scores inside the training side (``--oof block``: 4 folds
  by line block; ``--oof source``: one fold per training source language; the
  held-out source is never scored nor used to choose), then training documents
  or whole units (a human reference or an MT system of one year and pair) on the
  wrong side are dropped or down-weighted, and the model is refitted;
- ``weights``: ``sample_weight`` giving each human reference, each MT system and/or
  each year the same total weight within its class;
- ``length``: documents of 5, 10, 20 and 40 consecutive segments, trained on 10 or
  on the tested length (a report of how AUC grows with length, not a claim on the
  10-segment target);
- ``sources`` / ``systems``: the ``--variants`` named in ``named_variant`` on the
  held-out sources, and on the held-out systems (mean of 4 folds) and the split;
- ``diag``: the shipped model's held-out-source AUC with the machine-like
  references and/or the near-human online system left out of the test side only
  (they were picked by looking at every source: a diagnostic, not a model).

``noise`` prints each training unit's mean out-of-fold score, then one row per
variant; every threshold is fixed in advance or computed from the training side.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import sparse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_quality import _args, mt_counts, mt_folds  # noqa: E402

from mmcurate.pipeline import build_models  # noqa: E402
from mmcurate.pipeline.train import roc_auc, tfidf_features  # noqa: E402
from mmcurate.pipeline.train_examples import _hash, split_examples  # noqa: E402

SHIPPED = _args("mt", build_models.MT_ARGS)  # the shipped MT fit's settings
SOURCES = ("cs", "de", "he", "zh")


def fit_predict(counts, train_idx, test_idx, labels, weights=None):
    """train_linear on rows ``train_idx`` (buckets seen in 2+ of them, sublinear
    tf-idf, LR C=10 balanced; optional per-document weights), P(MT) of ``test_idx``."""
    from sklearn.linear_model import LogisticRegression

    buckets, tfidf, x = tfidf_features(counts[train_idx], SHIPPED.min_count, SHIPPED.max_features)
    clf = LogisticRegression(C=SHIPPED.c, class_weight="balanced", max_iter=5000, random_state=SHIPPED.seed)
    clf.fit(x, labels[train_idx], sample_weight=weights)
    return clf.predict_proba(tfidf.transform(counts[test_idx][:, buckets]))[:, 1]


def unit(e) -> tuple:
    """One translator or system: year, pair and system name (a reference file, a
    system's output file, or the original English of one pair)."""
    pair = e.group.split(".")[1]
    return (e.year, pair, e.system)


def oof_scores(examples, counts, labels, idx, by="block", folds=4):
    """Out-of-fold P(MT) of the rows ``idx``: 4 folds by line block, or (``by``
    "source") one fold per training source language, original English spread over
    them by line block, so a reference is scored by a model that never saw its
    translator."""
    if by == "source":
        sources = sorted({examples[i].source for i in idx} - {""})
        folds = len(sources)
        fold = np.array([sources.index(examples[i].source) if examples[i].source else
                         int(_hash(f"oof:{examples[i].group}")[:8], 16) % folds for i in idx])
    else:
        fold = np.array([int(_hash(f"oof:{examples[i].group}")[:8], 16) % folds for i in idx])
    out = np.zeros(len(idx))
    for k in range(folds):
        out[fold == k] = fit_predict(counts, idx[fold != k], idx[fold == k], labels)
    return out


def noise_variants(examples, idx, labels, p):
    """name -> (kept rows, weights or None) from out-of-fold scores ``p`` of ``idx``."""
    y = labels[idx]
    neg, pos = y == 0, y == 1
    out = {}
    for t in (0.9, 0.8, 0.7, 0.5):
        out[f"drop human scored > {t}"] = (~(neg & (p > t)), None)
    for t in (0.1, 0.2, 0.3, 0.5):
        out[f"drop MT scored < {t}"] = (~(pos & (p < t)), None)
    for t in (0.9, 0.8, 0.7):
        out[f"drop both, human > {t} and MT < {1 - t:.1f}"] = (~((neg & (p > t)) | (pos & (p < 1 - t))), None)
    # Confident learning (Northcutt et al. 2021): per-class thresholds are the mean
    # self-confidence of each class; a document labelled i whose P(other class)
    # reaches the other class's threshold is off the diagonal of the confident joint.
    t1, t0 = p[pos].mean(), (1 - p[neg]).mean()
    cl_neg, cl_pos = neg & (p >= t1), pos & ((1 - p) >= t0)
    print(f"    confident learning thresholds: human >= {t1:.2f}, MT <= {1 - t0:.2f}", flush=True)
    out["confident learning: drop human >= mean P(MT) of MT"] = (~cl_neg, None)
    out["confident learning: drop MT <= mean P(MT) of human"] = (~cl_pos, None)
    out["confident learning: drop both"] = (~(cl_neg | cl_pos), None)
    # Soft: weight = out-of-fold probability of the given label.
    keep = np.ones(len(idx), bool)
    out["weight = P(given label), both classes"] = (keep, np.where(pos, p, 1 - p))
    out["weight = P(human), human only"] = (keep, np.where(pos, 1.0, 1 - p))
    out["weight = P(MT), MT only"] = (keep, np.where(pos, p, 1.0))
    # Whole units.
    units = [unit(examples[i]) for i in idx]
    sums = defaultdict(list)
    for u, s in zip(units, p):
        sums[u].append(s)
    mean = {u: float(np.mean(v)) for u, v in sums.items()}
    um = np.array([mean[u] for u in units])
    mid = (p[pos].mean() + p[neg].mean()) / 2
    print(f"    class midpoint {mid:.2f}", flush=True)
    for name, t_neg, t_pos in (("0.5", 0.5, 0.5), ("the class midpoint", mid, mid)):
        drop_neg, drop_pos = neg & (um > t_neg), pos & (um < t_pos)
        out[f"drop references with mean > {name}"] = (~drop_neg, None)
        out[f"drop systems with mean < {name}"] = (~drop_pos, None)
        out[f"drop both units, {name}"] = (~(drop_neg | drop_pos), None)
    out["weight = unit's mean P(given label), both classes"] = (keep, np.where(pos, um, 1 - um))
    return out, mean


def weight_variants(examples, idx, labels):
    """name -> per-document weights: each unit / year the same total within its class."""
    y = labels[idx]
    ex = [examples[i] for i in idx]

    def equal(keys):
        keys = [(y[j], k) for j, k in enumerate(keys)]
        n = defaultdict(int)
        for k in keys:
            n[k] += 1
        per_class = defaultdict(set)
        for k in n:
            per_class[k[0]].add(k)
        w = np.array([1.0 / n[k] / len(per_class[k[0]]) for k in keys])
        # rescale so each class keeps its document count (class_weight balances them)
        for c in (0, 1):
            w[y == c] *= (y == c).sum() / w[y == c].sum()
        return w

    by_unit = [unit(e) for e in ex]
    by_ref_sys = [unit(e) if e.label == 0 else (e.year, e.system) for e in ex]
    by_year = [e.year for e in ex]
    return {
        "each (year, pair, reference or system) equal within its class": equal(by_unit),
        "each human reference (year, pair) equal; each MT system (year, name) equal": equal(by_ref_sys),
        "each year equal within its class": equal(by_year),
        "each (year, pair, reference or system) equal, and each year": equal([(u[0], u) for u in by_unit]) *
        equal(by_year),
    }


NAMED_VARIANTS = ("shipped", "units", "refsys", "units+refsys")


def named_variant(name, examples, counts, labels, tr):
    """The rows and weights a named variant trains on, from the training rows ``tr``
    alone: shipped; units (drop every human reference and MT system whose mean
    out-of-fold score by line block is past the class midpoint); refsys (each human
    reference and each MT system the same weight within its class); both."""
    if name not in NAMED_VARIANTS:
        raise SystemExit(f"unknown variant {name!r}: one of {', '.join(NAMED_VARIANTS)}")
    keep, w = np.ones(len(tr), bool), None
    if name in ("units", "units+refsys"):
        p = oof_scores(examples, counts, labels, tr)
        keep = noise_variants(examples, tr, labels, p)[0]["drop both units, the class midpoint"][0]
    if name in ("refsys", "units+refsys"):
        w = weight_variants(examples, tr[keep], labels)[
            "each human reference (year, pair) equal; each MT system (year, name) equal"]
    return tr[keep], w


def report(name, per_source):
    """One table row: AUC per held-out source, mean, pooled."""
    labels = np.concatenate([l for l, _ in per_source.values()])
    scores = np.concatenate([s for _, s in per_source.values()])
    aucs = [roc_auc(per_source[s][0], per_source[s][1]) for s in SOURCES]
    cells = [*(f"{a:.3f}" for a in aucs), f"{np.mean(aucs):.3f}", f"{roc_auc(labels, scores):.3f}"]
    line = f"| {name} | " + " | ".join(cells) + " |"
    print(line, flush=True)
    return line


def source_folds(examples):
    """held-out source -> (train rows, test rows), as mt_folds makes them."""
    pos = {id(e): i for i, e in enumerate(examples)}
    folds = mt_folds(examples)
    return {s: (np.array([pos[id(e)] for e in folds[f"held-out source {s}"][0][0]]),
                np.array([pos[id(e)] for e in folds[f"held-out source {s}"][0][1]])) for s in SOURCES}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=build_models._default_data())
    ap.add_argument("--parts", default="base,noise,weights,length",
                    help="comma-separated: base, noise, weights, length, diag, sources, systems")
    ap.add_argument("--oof", choices=("block", "source"), default="block",
                    help="noise: out-of-fold scores by line block or by training source language")
    ap.add_argument("--variants", default="",
                    help=f"sources and systems parts: the variants to run ({', '.join(NAMED_VARIANTS)})")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    unknown = [v for v in filter(None, args.variants.split(",")) if v not in NAMED_VARIANTS]
    if unknown:
        ap.error(f"unknown variants {', '.join(unknown)}: one of {', '.join(NAMED_VARIANTS)}")
    started = time.time()
    examples, counts, labels = mt_counts(args.data, "en", 10)
    folds = source_folds(examples)
    print(f"{len(examples)} documents, {labels.sum()} MT; load {time.time() - started:.0f} s", flush=True)

    if "base" in parts:
        report("shipped (reproduced)", {s: (labels[te], fit_predict(counts, tr, te, labels)) for s, (tr, te) in
                                        folds.items()})

    if "noise" in parts:
        rows = defaultdict(dict)
        for s, (tr, te) in folds.items():
            p = oof_scores(examples, counts, labels, tr, args.oof)
            print(f"  {s}: out-of-fold AUC inside training {roc_auc(labels[tr], p):.3f} "
                  f"({time.time() - started:.0f} s)",
                  flush=True)
            variants, means = noise_variants(examples, tr, labels, p)
            for u in sorted(means, key=means.get):
                n = sum(1 for i in tr if unit(examples[i]) == u)
                lab = labels[next(i for i in tr if unit(examples[i]) == u)]
                print(f"    {s} unit {u} label {lab} docs {n} mean oof {means[u]:.3f}", flush=True)
            for name, (keep, w) in variants.items():
                sel = tr[keep]
                dropped = (~keep).sum()
                print(f"    {s} {name}: dropped {dropped} ({(~keep & (labels[tr] == 0)).sum()} human)", flush=True)
                rows[name][s] = (labels[te], fit_predict(counts, sel, te, labels, None if w is None else w[keep]))
        for name, per_source in rows.items():
            report(f"{name} (out-of-fold by {args.oof})", per_source)

    if "weights" in parts:
        rows = defaultdict(dict)
        for s, (tr, te) in folds.items():
            for name, w in weight_variants(examples, tr, labels).items():
                rows[name][s] = (labels[te], fit_predict(counts, tr, te, labels, w))
        for name, per_source in rows.items():
            report(name, per_source)

    for name in filter(None, args.variants.split(",")):
        if "sources" in parts:
            per = {}
            for s, (tr, te) in folds.items():
                sel, w = named_variant(name, examples, counts, labels, tr)
                per[s] = (labels[te], fit_predict(counts, sel, te, labels, w))
            report(f"{name}, held-out sources", per)
        if "systems" in parts:
            pos = {id(e): i for i, e in enumerate(examples)}
            aucs = []
            for tr_e, te_e in mt_folds(examples)["held-out systems"]:
                tr, te = np.array([pos[id(e)] for e in tr_e]), np.array([pos[id(e)] for e in te_e])
                sel, w = named_variant(name, examples, counts, labels, tr)
                aucs.append(roc_auc(labels[te], fit_predict(counts, sel, te, labels, w)))
            tr_e, te_e = split_examples(examples, 0.2, 0)
            tr, te = np.array([pos[id(e)] for e in tr_e]), np.array([pos[id(e)] for e in te_e])
            sel, w = named_variant(name, examples, counts, labels, tr)
            split = roc_auc(labels[te], fit_predict(counts, sel, te, labels, w))
            print(f"| {name} | held-out systems {np.mean(aucs):.3f} ({' '.join(f'{a:.3f}' for a in aucs)}) | "
                  f"split {split:.3f} |", flush=True)

    if "diag" in parts:
        # Test-side diagnostic (no model change): the shipped model's held-out-source
        # AUC with the references that look machine-like, or the near-human online
        # system, left out of the test side only.
        scores = {s: fit_predict(counts, tr, te, labels) for s, (tr, te) in folds.items()}
        suspect = {(2023, "de-en", "refA"), (2023, "he-en", "refB"), (2022, "cs-en", "B"), (2023, "zh-en", "refA")}
        for title, out in (("all test documents", lambda e: False),
                           ("test without the 4 machine-like references", lambda e: unit(e) in suspect),
                           ("test without Online-Y/ONLINE-Y", lambda e: e.system.lower() == "online-y"),
                           ("test without both", lambda e: unit(e) in suspect or e.system.lower() == "online-y")):
            per = {}
            for s, (tr, te) in folds.items():
                m = np.array([not out(examples[i]) for i in te])
                per[s] = (labels[te][m], scores[s][m])
            report(f"diagnostic, shipped model: {title}", per)

    if "length" in parts:
        for n in (5, 10, 20, 40):
            ex_n, counts_n, labels_n = (examples, counts, labels) if n == 10 else mt_counts(args.data, "en", n)
            folds_n = source_folds(ex_n)
            # train on 10-segment documents of the other sources, test on n-segment ones
            both = sparse.vstack([counts, counts_n]).tocsr() if n != 10 else counts
            lab_both = np.concatenate([labels, labels_n]) if n != 10 else labels
            off = len(examples) if n != 10 else 0
            per10 = {s: (labels_n[te], fit_predict(both, folds[s][0], te + off, lab_both))
                     for s, (_, te) in folds_n.items()}
            report(f"train 10, test {n} ({len(ex_n)} documents)", per10)
            if n != 10:
                same = {s: (labels_n[te], fit_predict(counts_n, tr, te, labels_n)) for s, (tr, te) in folds_n.items()}
                report(f"train {n}, test {n}", same)
    print(f"done in {time.time() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
