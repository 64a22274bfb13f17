"""Content-controlled and source-invariant training of the English MT detector (issue 13).

    nice -n 10 .venv/bin/python benchmarks/bench_mt_invariant.py [--data ../shared/data]
        [--variants "baseline;pairwise:C=0.3;sum:a=10"] [--protocols sources,systems,systems-tr,split]
    nice -n 10 .venv/bin/python benchmarks/bench_mt_invariant.py --nested

Every variant but ``min`` is one weight vector (and intercept) over the shipped
model's features (sublinear tf-idf of hashed words and word bigrams, 2^18 buckets,
every bucket seen in 2+ training documents), so it would score exactly as
``LinearTextModel`` does; only how the weights are fitted changes. Documents and
folds are those of ``bench_quality`` (``wmt_examples(files, "en", 10)``,
``mt_folds``): ``sources`` prints the AUC of each held-out source language (cs, de,
he, zh), their mean and the pooled AUC (the probabilities of the four folds' models
together, as bench_quality pools them); ``systems`` the mean AUC of the four
held-out-system folds, ``systems-tr`` the same with original English left out of
the test side, ``split`` the held-out 20% of line blocks.

Every line block has several system outputs and one or two human translations of
the same source text, so what differs between them is how the text was made, not
what it says. Variants (``name:key=value,...``; C is the inverse L2 strength, 10
unless given):

- ``baseline``: the shipped fit (logistic regression, C=10, classes balanced).
- ``pairwise``: logistic regression without intercept on x_output - x_reference
  over every (system output, human translation) pair of a block, both signs.
- ``pairwise+point``: the same pairs and the documents themselves (original English,
  which has no pair, takes part only here); the pairs weigh ``pw`` times the
  documents' total.
- ``demeaned``: the documents minus their block's centre (fixed effects; the centre
  is the mean of the block's two class means, so ten outputs do not drown one
  reference); blocks of one class (original English) drop out. ``lam`` < 1 takes
  off ``lam`` times the centre and keeps the one-class blocks as they are.
- ``sum``: the shipped fit plus ``a`` times ``demeaned`` (at ``C2``, default 0.3):
  the weights add, so it is still one vector.
- ``avg``, ``signs``, ``min``: one model per training source language (its
  translations plus original English); their weights averaged; the buckets whose
  weight has one sign in every one of them, refitted; the minimum of their
  log-odds (several vectors: not the shipped scoring path).
- ``vrex``, ``dro``: environments = training source languages, each risk class
  balanced; their mean plus ``lam`` times their variance (V-REx, Krueger et al.
  2021) or their soft maximum at temperature ``lam`` (group DRO, Sagawa et al.
  2020); original English adds its own risk to the mean.
- ``inlp``: iterative nullspace projection (Ravfogel et al. 2020), ``rounds``
  rounds of one-against-the-rest source-language classifiers removed.

Variants fitted without an intercept get the one a class-balanced fit of their
fixed training scores gives (the pooled AUC compares probabilities across folds).
``--nested`` chooses ``sum``'s ``a`` without the held-out source (leave one source
out inside the training side).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize, sparse
from sklearn.linear_model import LogisticRegression

from mmcurate.pipeline import build_models
from mmcurate.pipeline.train import roc_auc, tfidf_features
from mmcurate.pipeline.train_examples import split_examples

sys.path.insert(0, str(Path(__file__).parent))
from bench_quality import _args, mt_counts, mt_folds  # noqa: E402

SHIPPED = _args("mt", build_models.MT_ARGS)  # the shipped MT fit's settings


def features(counts, train, test):
    """Training and test rows as ``train_linear`` builds them (buckets and idf from
    the training side only)."""
    buckets, tfidf, matrix = tfidf_features(counts[train], SHIPPED.min_count, SHIPPED.max_features)
    return matrix.tocsr(), tfidf.transform(counts[test][:, buckets]).tocsr()


def balanced_weights(y):
    n = len(y)
    pos = y.sum()
    return np.where(y == 1, n / (2 * pos), n / (2 * (n - pos)))


def sk_logreg(X, y, c, sample_weight=None, intercept=True):
    clf = LogisticRegression(C=c, fit_intercept=intercept, max_iter=5000, random_state=SHIPPED.seed,
                             class_weight=None if sample_weight is not None else "balanced")
    clf.fit(X, y, sample_weight=sample_weight)
    return clf.coef_[0], float(clf.intercept_[0]) if intercept else 0.0


def pair_matrix(meta, rows):
    """Sparse (pairs x rows) matrix of +1 (system output) / -1 (human translation)
    per (output, reference) pair of one line block."""
    by_group: dict[str, tuple[list, list]] = {}
    for j, i in enumerate(rows):
        m, h = by_group.setdefault(meta["group"][i], ([], []))
        (m if meta["label"][i] else h).append(j)
    r, c, v = [], [], []
    k = 0
    for m, h in by_group.values():
        for a in m:
            for b in h:
                r += [k, k]
                c += [a, b]
                v += [1.0, -1.0]
                k += 1
    return sparse.csr_matrix((v, (r, c)), shape=(k, len(rows)))


def fit_pairwise(X, meta, rows, c, point=False, pair_weight=1.0):
    P = pair_matrix(meta, rows)
    D = (P @ X).tocsr()
    n = D.shape[0]
    if not point:
        Z = sparse.vstack([D, -D]).tocsr()
        y = np.r_[np.ones(n), np.zeros(n)]
        # the pairs weigh as much in all as the documents would (C keeps its scale)
        w, _ = sk_logreg(Z, y, c, sample_weight=np.ones(2 * n) * (X.shape[0] / (2 * n)), intercept=False)
        return w, 0.0
    # a constant column carries the pointwise intercept (it cancels in differences)
    ones = sparse.csr_matrix(np.ones((X.shape[0], 1)))
    zeros = sparse.csr_matrix((n, 1))
    Z = sparse.vstack([sparse.hstack([D, zeros]), sparse.hstack([-D, zeros]), sparse.hstack([X, ones])]).tocsr()
    yl = meta["label"][rows]
    y = np.r_[np.ones(n), np.zeros(n), yl]
    # pairs carry ``pair_weight`` times the documents' total weight (their count)
    sw = np.r_[np.ones(2 * n) * (pair_weight * X.shape[0] / (2 * n)), balanced_weights(yl)]
    w, _ = sk_logreg(Z, y, c, sample_weight=sw, intercept=False)
    return w[:-1], w[-1]


def fit_demeaned(X, meta, rows, c, lam=1.0):
    """Pointwise on x minus its block's centre (the mean of the block's two class
    means); blocks of one class (original English) drop out. With ``lam`` < 1, x
    minus ``lam`` times the centre (partial pooling, as random effects do), and
    blocks of one class stay in, as they are."""
    groups = [meta["group"][i] for i in rows]
    y = meta["label"][rows]
    index: dict[tuple[str, int], list[int]] = {}
    for j, (g, lab) in enumerate(zip(groups, y)):
        index.setdefault((g, int(lab)), []).append(j)
    r, cc, v, keep = [], [], [], []
    for j, (g, lab) in enumerate(zip(groups, y)):
        if (g, 0) not in index or (g, 1) not in index:
            if lam < 1:
                keep.append(j)
            continue
        keep.append(j)
        for cls in (0, 1):
            members = index[(g, cls)]
            for m in members:
                r.append(j)
                cc.append(m)
                v.append(0.5 * lam / len(members))
    n = len(rows)
    B = sparse.csr_matrix((v, (r, cc)), shape=(n, n))
    Xd = (X - B @ X).tocsr()[keep]
    w, _ = sk_logreg(Xd, y[keep], c, intercept=lam < 1, sample_weight=balanced_weights(y[keep]))
    return w, 0.0


def fit_per_source(X, meta, rows, c):
    """One model per training source language: its translations plus original English."""
    src = meta["source"][rows]
    models = {}
    for s in sorted(set(src) - {""}):
        sel = np.flatnonzero((src == s) | (src == ""))
        models[s] = sk_logreg(X[sel], meta["label"][rows][sel], c)
    return models


def fit_env_risk(X, meta, rows, c, mode, lam):
    """Mean of the training sources' class-balanced logistic risks plus a variance
    penalty (``vrex``) or their soft maximum (``dro``, temperature ``lam``); original
    English adds its own (negative-only) risk to the mean term; L2 as scikit-learn's."""
    y = meta["label"][rows].astype(float)
    src = meta["source"][rows]
    envs = [np.flatnonzero(src == s) for s in sorted(set(src) - {""})]
    orig = np.flatnonzero(src == "")
    n = X.shape[0]
    ys = 2 * y - 1
    # per-row weights inside each environment: each class half of the environment
    ew = []
    for e in envs:
        pos = y[e].sum()
        ew.append(np.where(y[e] == 1, 0.5 / pos, 0.5 / (len(e) - pos)))
    Xt = X.T.tocsr()

    def objective(theta):
        w, b = theta[:-1], theta[-1]
        s = X @ w + b
        z = -ys * s
        loss = np.logaddexp(0, z)
        dloss = -ys / (1 + np.exp(-z))  # d loss / d s
        risks = np.array([loss[e] @ wt for e, wt in zip(envs, ew)])
        k = len(envs)
        if mode == "vrex":
            mean = risks.mean()
            total = mean + lam * ((risks - mean) ** 2).mean()
            coef = 1 / k + lam * 2 * (risks - mean) / k
        else:  # dro: (1/lam) log mean exp(lam R)
            a = lam * risks
            m = a.max()
            p = np.exp(a - m)
            total = (m + np.log(p.mean())) / lam
            coef = p / p.sum()
        g_s = np.zeros(n)
        for e, wt, cf in zip(envs, ew, coef):
            g_s[e] += cf * wt * dloss[e]
        if len(orig):
            # original English: a fourth share of the mean term
            total = total * k / (k + 1) + loss[orig].mean() / (k + 1)
            g_s *= k / (k + 1)
            g_s[orig] += dloss[orig] / len(orig) / (k + 1)
        f = c * n * total + 0.5 * w @ w
        grad = np.r_[c * n * (Xt @ g_s) + w, c * n * g_s.sum()]
        return f, grad

    res = optimize.minimize(objective, np.zeros(X.shape[1] + 1), jac=True, method="L-BFGS-B",
                            options={"maxiter": 5000, "maxfun": 10000})
    return res.x[:-1], res.x[-1]


def fit_projected(X, y, sw, c, U):
    """Weighted logistic regression whose weights are kept orthogonal to the
    orthonormal columns of ``U`` (w = P v, P = I - U U^T); L2 as scikit-learn's."""
    n, d = X.shape
    Xt = X.T.tocsr()
    ys = 2 * y - 1

    def project(v):
        return v - U @ (U.T @ v) if U.shape[1] else v

    def objective(theta):
        w, b = project(theta[:-1]), theta[-1]
        z = -ys * (X @ w + b)
        g_s = sw * (-ys / (1 + np.exp(-z)))
        f = c * (sw @ np.logaddexp(0, z)) + 0.5 * w @ w
        return f, np.r_[project(c * (Xt @ g_s) + w), c * g_s.sum()]

    res = optimize.minimize(objective, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                            options={"maxiter": 5000, "maxfun": 10000})
    return project(res.x[:-1]), res.x[-1]


def fit_inlp(X, meta, rows, c, rounds):
    """Iterative nullspace projection (Ravfogel et al. 2020): ``rounds`` times, a
    classifier of each training source language (one against the rest, over the
    translations) in the space left so far, its direction removed; then the MT
    classifier in what remains."""
    src = meta["source"][rows]
    tr = np.flatnonzero(src != "")
    U = np.zeros((X.shape[1], 0))
    for _ in range(rounds):
        for s in sorted(set(src[tr])):
            ys = (src[tr] == s).astype(float)
            w, _ = fit_projected(X[tr], ys, balanced_weights(ys), 1.0, U)
            w = w - U @ (U.T @ w)
            U = np.c_[U, w / np.linalg.norm(w)]
    y = meta["label"][rows].astype(float)
    return fit_projected(X, y, balanced_weights(y), c, U)


# variant -> the options it reads (``name:key=value,...``); anything else is a typo,
# which would otherwise run the variant's defaults under the name asked for.
VARIANT_OPTIONS = {
    "baseline": {"C"}, "pairwise": {"C"}, "pairwise+point": {"C", "pw"}, "demeaned": {"C", "lam"},
    "avg": {"C"}, "signs": {"C"}, "min": {"C"}, "sum": {"C", "C2", "a"}, "inlp": {"C", "rounds"},
    "vrex": {"C", "lam"}, "dro": {"C", "lam"},
}


def parse_variant(name):
    base, _, rest = name.partition(":")
    if base not in VARIANT_OPTIONS:
        raise SystemExit(f"unknown variant {base!r}: one of {', '.join(VARIANT_OPTIONS)}")
    opts = dict(kv.split("=", 1) for kv in rest.split(",") if kv)
    unknown = set(opts) - VARIANT_OPTIONS[base]
    if unknown:
        raise SystemExit(f"variant {base!r} takes {', '.join(sorted(VARIANT_OPTIONS[base]))}, not {', '.join(sorted(unknown))}")
    return base, {k: float(v) for k, v in opts.items()}


def score(variant, X, meta, rows, Xte):
    base, opts = parse_variant(variant)
    c = opts.get("C", SHIPPED.c)
    y = meta["label"][rows]
    if base == "baseline":
        w, b = sk_logreg(X, y, c)
    elif base == "pairwise":
        w, b = fit_pairwise(X, meta, rows, c)
    elif base == "pairwise+point":
        w, b = fit_pairwise(X, meta, rows, c, point=True, pair_weight=opts.get("pw", 1.0))
    elif base == "demeaned":
        w, b = fit_demeaned(X, meta, rows, c, opts.get("lam", 1.0))
    elif base in ("avg", "signs", "min"):
        models = fit_per_source(X, meta, rows, c)
        W = np.array([m[0] for m in models.values()])
        if base == "avg":
            w, b = W.mean(0), float(np.mean([m[1] for m in models.values()]))
        elif base == "min":
            return np.min([Xte @ m[0] + m[1] for m in models.values()], axis=0)
        else:
            agree = (W > 0).all(0) | (W < 0).all(0)
            w1, b = sk_logreg(X[:, np.flatnonzero(agree)], y, c)
            w = np.zeros(X.shape[1])
            w[agree] = w1
            print(f"      signs: {int(agree.sum()):,} of {X.shape[1]:,} buckets agree", flush=True)
    elif base == "sum":
        # the shipped fit plus a content-controlled one: still one weight vector
        w1, _ = sk_logreg(X, y, c)
        w2, _ = fit_demeaned(X, meta, rows, opts.get("C2", 0.3))
        a = opts.get("a", 1.0)
        w = w1 + a * w2
        b = intercept_for(X @ w, y)
    elif base == "inlp":
        w, b = fit_inlp(X, meta, rows, c, int(opts.get("rounds", 2)))
    elif base in ("vrex", "dro"):
        w, b = fit_env_risk(X, meta, rows, c, base, opts.get("lam", 1.0))
    else:
        raise ValueError(variant)
    if base in ("pairwise", "demeaned"):
        b = intercept_for(X @ w, y)
    return Xte @ w + b


def intercept_for(s, y):
    """The intercept a class-balanced logistic fit gives fixed scores ``s`` on the
    training documents: pairs fix only the direction, and the pooled AUC compares
    probabilities across folds."""
    sw = balanced_weights(y)
    ys = 2 * y - 1

    def f(b):
        return sw @ np.logaddexp(0, -ys * (s + b))

    return optimize.minimize_scalar(f, bounds=(-50, 50), method="bounded").x


GRID = (0.0, 1.0, 3.0, 10.0, 30.0)


def sum_scores(counts, meta, train, test):
    """Held-out log-odds of ``sum`` at every weight of GRID (a=0: the shipped fit)."""
    X, Xte = features(counts, train, test)
    y = meta["label"][train]
    w1, _ = sk_logreg(X, y, SHIPPED.c)
    w2, _ = fit_demeaned(X, meta, np.asarray(train), 0.3)
    out = {}
    for a in GRID:
        w = w1 + a * w2
        out[a] = Xte @ w + intercept_for(X @ w, y)
    return out


def nested(examples, counts, meta):
    """``sum``'s weight chosen without the held-out source: for each held-out source,
    leave-one-source-out inside the training side picks the weight (by the pooled
    AUC of the inner folds), then the whole training side is fitted with it."""
    src = meta["source"]
    sources = ("cs", "de", "he", "zh")
    all_y, all_s, aucs = [], [], []
    for outer in sources:
        inner_y, inner_s = [], {a: [] for a in GRID}
        for inner in sources:
            if inner == outer:
                continue
            train = np.flatnonzero((src != outer) & (src != inner))
            test = np.flatnonzero(src == inner)
            for a, s in sum_scores(counts, meta, train, test).items():
                inner_s[a] += list(s)
            inner_y += list(meta["label"][test])
        inner_auc = {a: roc_auc(inner_y, 1 / (1 + np.exp(-np.asarray(s)))) for a, s in inner_s.items()}
        best = max(GRID, key=lambda a: inner_auc[a])
        train, test = np.flatnonzero(src != outer), np.flatnonzero(src == outer)
        s = sum_scores(counts, meta, train, test)[best]
        aucs.append(roc_auc(meta["label"][test], s))
        all_y += list(meta["label"][test])
        all_s += list(s)
        print(f"    nested {outer}: inner pooled AUC " + " ".join(f"a={a:g} {v:.3f}" for a, v in inner_auc.items())
              + f" -> a={best:g}, held-out {aucs[-1]:.3f}", flush=True)
    pooled = roc_auc(all_y, 1 / (1 + np.exp(-np.asarray(all_s))))
    print("| sum, a chosen by inner leave-one-source-out | " + " | ".join(f"{v:.3f}" for v in aucs)
          + f" | {np.mean(aucs):.3f} | {pooled:.3f} |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(build_models.shared_data()))
    p.add_argument("--variants", default="baseline")
    p.add_argument("--protocols", default="sources")
    p.add_argument("--nested", action="store_true", help="only the nested choice of sum's weight")
    args = p.parse_args(argv)
    t = time.process_time()
    examples, counts, labels = mt_counts(Path(args.data), "en", 10)
    print(f"{len(examples):,} documents, read and counted in {time.process_time() - t:.1f} CPU s", flush=True)
    pos = {id(e): i for i, e in enumerate(examples)}
    meta = {
        "label": labels,
        "group": [e.group for e in examples],
        "source": np.array([e.source for e in examples]),
    }
    folds = mt_folds(examples, 0)
    if args.nested:
        nested(examples, counts, meta)
        return
    protocols = args.protocols.split(",")
    for variant in args.variants.split(";"):
        t = time.process_time()
        out = []
        if "sources" in protocols:
            all_y, all_s = [], []
            for src in ("cs", "de", "he", "zh"):
                (tr, te), = folds[f"held-out source {src}"]
                train, test = [pos[id(e)] for e in tr], [pos[id(e)] for e in te]
                X, Xte = features(counts, train, test)
                s = score(variant, X, meta, np.array(train), Xte)
                yt = meta["label"][test]
                out.append(roc_auc(yt, s))
                all_y += list(yt)
                all_s += list(s)
                print(f"    {variant} {src} {out[-1]:.3f}", flush=True)
            mean = float(np.mean(out))
            # pooled as bench_quality pools: the probabilities (monotone in the log-odds per fold)
            pooled = roc_auc(all_y, 1 / (1 + np.exp(-np.asarray(all_s))))
            out += [mean, pooled]
        if "systems" in protocols:
            aucs = []
            for tr, te in folds["held-out systems"]:
                train, test = [pos[id(e)] for e in tr], [pos[id(e)] for e in te]
                X, Xte = features(counts, train, test)
                aucs.append(roc_auc(meta["label"][test], score(variant, X, meta, np.array(train), Xte)))
            out.append(float(np.mean(aucs)))
        if "systems-tr" in protocols:
            # the same folds, original English left out of the test side: machine
            # against human translation only, as on a held-out source
            aucs = []
            for tr, te in folds["held-out systems"]:
                te = [e for e in te if e.source]
                train, test = [pos[id(e)] for e in tr], [pos[id(e)] for e in te]
                X, Xte = features(counts, train, test)
                aucs.append(roc_auc(meta["label"][test], score(variant, X, meta, np.array(train), Xte)))
            out.append(float(np.mean(aucs)))
        if "split" in protocols:
            tr, te = split_examples(examples, 0.2, 0)
            train, test = [pos[id(e)] for e in tr], [pos[id(e)] for e in te]
            X, Xte = features(counts, train, test)
            out.append(roc_auc(meta["label"][test], score(variant, X, meta, np.array(train), Xte)))
        print(f"| {variant} | " + " | ".join(f"{v:.3f}" for v in out) + f" |  ({time.process_time() - t:.0f} CPU s)",
              flush=True)


if __name__ == "__main__":
    main()
