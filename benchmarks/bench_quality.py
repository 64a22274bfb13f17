"""Detectors of the quality stage: precision, recall, ROC AUC and docs/s on one core.

    .venv/bin/python benchmarks/bench_quality.py [--data ../shared/data] [--no-rewrite]

Each classifier is trained exactly as ``pipeline/build_models.py`` trains the
shipped one, on the train side of a split by source (WMT: the block of 10 aligned
segments, the same in every file; fast-detect-gpt: the human text a machine text
continues), and measured on the other side, which shares no source text with it.
Precision and recall are for the positive class at 0.5 and at the config's
``max_score``-style threshold 0.9. docs/s: normalisation plus fastText prediction,
one thread.

MT also reports "same content": only the de-en, cs-en and zh-en references against
the systems' outputs for the same source segments (the en-de original English has no
machine twin, so a model could tell it apart by topic).

Rewrites: all-MiniLM-L6-v2 cosine between two human translations of the same
10-segment block (WMT references A and B: paraphrases) against two blocks of
different passages; needs the `rewrite` extra.
"""

from __future__ import annotations

import argparse
import sys
import time
from argparse import Namespace
from pathlib import Path

import numpy as np

from mmcurate.filters.quality import positive_probabilities
from mmcurate.pipeline import build_models
from mmcurate.pipeline.train import balance, evaluate, load_examples, parser, split_examples, train_fasttext


def _args(kind: str) -> Namespace:
    return parser().parse_args([kind, "--positive", "x", "--negative", "x", "--output", "x", *build_models.SMALL])


def _bench(name: str, kind: str, pos: list[str], neg: list[str], lines: int, subset=None) -> None:
    args = _args(kind)
    examples = load_examples(pos, 1, lines) + load_examples(neg, 0, lines)
    train, test = split_examples(examples, args.test_fraction, args.seed)
    model = train_fasttext(balance(train, args.seed), args)
    texts = [e.text for e in test]
    started = time.perf_counter()
    scores = positive_probabilities(model, texts)
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
    from mmcurate.stages.quality import SentenceEmbeddingModelHandler, default_embedding_model

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
    p.add_argument("--data", type=Path, default=build_models._default_data())
    p.add_argument("--no-rewrite", action="store_true", help="skip the embedding benchmark")
    p.add_argument("--rewrite-blocks", type=int, default=200)
    args = p.parse_args()
    mt_pos, mt_neg = build_models._wmt(args.data)
    llm_pos, llm_neg = build_models._fast_detect(args.data)
    if not (mt_pos and llm_pos):
        print(f"no data under {args.data}", file=sys.stderr)
        return 2
    originals = {e.text for e in load_examples([f for f in mt_neg if ".src." in f], 0, 10)}
    _bench("mt", "mt", mt_pos, mt_neg, 10, subset=lambda e: e.text not in originals)
    _bench("llm", "llm", llm_pos, llm_neg, 0)
    _bench("quality (human vs machine)", "quality", mt_neg + llm_neg, mt_pos + llm_pos, 10)
    if not args.no_rewrite:
        _rewrite(args.data, args.rewrite_blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
