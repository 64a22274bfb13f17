"""``mmcurate train KIND``: a text classifier for the ``quality`` stage.

KIND is ``quality`` (positive: good text), ``mt`` (positive: machine-translated
text) or ``llm`` (positive: text written by a model). ``--model`` chooses the
classifier: ``fasttext`` (a fastText supervised model, ``.bin``; the default for
quality and llm) or ``linear`` (tf-idf logistic regression over hashed word and
word-pair features, ``.npz``; the default for mt). Every text passes through
``filters.quality.normalize_text``, the function the stage scores with.

What it reads, and how it holds out by source: ``pipeline.train_examples``. At the
end the held-out precision, recall (at 0.5) and ROC AUC are printed.
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from mmcurate.filters.quality import LABEL_NEGATIVE, LABEL_POSITIVE, probabilities
from mmcurate.filters.translationese import LinearTextModel, count_matrix
from mmcurate.pipeline import train_examples
from mmcurate.pipeline.train_examples import Example, balance, load_examples, split_examples, wmt_examples, wmt_files

log = logging.getLogger(__name__)

KINDS = {
    "quality": "good text (positive) vs. the rest",
    "mt": "machine-translated text (positive) vs. text written or translated by people",
    "llm": "text written by a language model (positive) vs. text written by people",
}


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (ties counted half); NaN when a class is missing."""
    from sklearn.metrics import roc_auc_score

    if len(set(labels)) < 2:
        return float("nan")
    return float(roc_auc_score(labels, scores))


def evaluate(labels: Sequence[int], scores: Sequence[float], threshold: float = 0.5) -> dict[str, float]:
    """Precision, recall (positive class, at ``threshold``), ROC AUC and counts."""
    y = np.asarray(labels, dtype=bool)
    pred = np.asarray(scores) >= threshold
    tp = int((pred & y).sum())
    fp = int((pred & ~y).sum())
    fn = int((~pred & y).sum())
    return {
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "roc_auc": roc_auc(labels, scores),
        "positives": int(y.sum()),
        "negatives": int((~y).sum()),
    }


def train_fasttext(examples: Sequence[Example], args: argparse.Namespace, output: Path | None = None):
    """A fastText supervised model over ``examples`` (shuffled with the seed); with
    ``output``, its file is also copied there.

    Training runs in a fresh "spawn" child process and the parent loads the saved
    model: in a long-lived process that has already run other native code, the
    fastText wheel's training was seen to diverge ("Encountered NaN") or give other
    weights for the same seed, while a fresh process is repeatable.

    ``output`` gets the file the child saved, byte for byte, never a second save of
    the loaded model: a quantized model saved again after loading holds the same
    weights but other bytes. fastText writes its pruned n-gram index (a
    ``std::unordered_map``) in hash-table order, which depends on the order the
    entries went in, and loading inserts them in the order they were saved, so every
    load and save reorders them. Written once, a seeded single-threaded rebuild
    repeats the file exactly (``make models``, pipeline/build_models.py).
    """
    import multiprocessing

    import fasttext

    rows = list(examples)
    random.Random(args.seed).shuffle(rows)
    with tempfile.TemporaryDirectory(prefix="mmcurate-train-") as tmp:
        train_path = str(Path(tmp) / "train.txt")
        model_path = str(Path(tmp) / "model.bin")
        with open(train_path, "w", encoding="utf-8") as fh:
            for ex in rows:
                fh.write(f"{LABEL_POSITIVE if ex.label else LABEL_NEGATIVE} {ex.text}\n")
        settings = {name: getattr(args, name) for name in _FASTTEXT_SETTINGS}
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            pool.apply(_train_and_save, (train_path, model_path, settings))
        if output is not None:
            output.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(model_path, output)
        return fasttext.load_model(model_path)


# The parsed arguments the child process needs (an argparse.Namespace travels as a dict).
_FASTTEXT_SETTINGS = ("lr", "epoch", "dim", "word_ngrams", "min_count", "minn", "maxn", "bucket", "threads", "seed",
                      "quantize")


def _train_and_save(train_path: str, model_path: str, settings: dict) -> None:
    """In the child process: train (halving the learning rate on divergence), save."""
    import fasttext

    args = argparse.Namespace(**settings)
    lr = args.lr
    for attempt in range(4):
        try:
            model = _train_supervised(fasttext, train_path, args, lr)
            break
        except RuntimeError as exc:
            # fastText diverges ("Encountered NaN") when the learning rate is too
            # high for the data (small or repetitive training sets): retry with it
            # halved (ours; the run stays seeded and deterministic).
            if "NaN" not in str(exc) or attempt == 3:
                raise
            lr /= 2
            log.warning("fastText diverged at lr %.3g; retrying at %.3g", lr * 2, lr)
    if args.quantize:
        model.quantize(input=train_path, qnorm=True, retrain=False, cutoff=args.quantize)
    model.save_model(model_path)


def _train_supervised(fasttext, train_path: str, args: argparse.Namespace, lr: float):
    return fasttext.train_supervised(
        input=train_path,
        lr=lr,
        epoch=args.epoch,
        dim=args.dim,
        wordNgrams=args.word_ngrams,
        minCount=args.min_count,
        minn=args.minn,
        maxn=args.maxn,
        bucket=args.bucket,
        loss="softmax",
        thread=args.threads,
        seed=args.seed,
        verbose=0,
    )


def train_linear(examples: Sequence[Example], args: argparse.Namespace) -> LinearTextModel:
    """A logistic regression over sublinear tf-idf bucket features
    (``filters.translationese``): scikit-learn fits it, ``LinearTextModel`` scores it.
    The buckets seen in at least ``--min-count`` texts are kept (the ``--max-features``
    most frequent of them, if set). Classes are weighted to balance, so no text is
    thrown away."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    families = tuple(args.families.split(","))
    if not 8 <= args.bits <= 30:
        raise ValueError(f"--bits {args.bits}: give 8 to 30")
    counts = count_matrix([e.text for e in examples], families, args.bits)
    buckets, tfidf, matrix = tfidf_features(counts, args.min_count, args.max_features)
    classifier = LogisticRegression(C=args.c, class_weight="balanced", max_iter=5000, random_state=args.seed)
    # One BLAS thread: OpenBLAS sums in another order with each thread count, which
    # moves the fit in its last bits (the intercept by up to 2e-10), so a model trained on
    # a machine with more cores would not be the same file.
    with threadpool_limits(limits=1, user_api="blas"):
        classifier.fit(matrix, [e.label for e in examples])
    return LinearTextModel(buckets, tfidf.idf_, classifier.coef_[0], float(classifier.intercept_[0]), families,
                           args.bits)


def tfidf_features(counts, min_count: int, max_features: int = 0):
    """What ``train_linear`` fits on a ``count_matrix`` of its texts: the buckets seen
    in at least ``min_count`` rows (the ``max_features`` most frequent of them, if
    set), the sublinear tf-idf fitted on those columns, and the rows' features:
    ``(buckets, tfidf, matrix)``. Texts outside training get the same features with
    ``tfidf.transform(their_counts[:, buckets])``."""
    from sklearn.feature_extraction.text import TfidfTransformer

    df = np.bincount(counts.indices, minlength=counts.shape[1])
    buckets = np.flatnonzero(df >= min_count)
    if max_features and len(buckets) > max_features:
        # most frequent first, ties by bucket: the same choice on every run
        buckets = np.sort(buckets[np.lexsort((buckets, -df[buckets]))[:max_features]])
    tfidf = TfidfTransformer(sublinear_tf=True)
    return buckets, tfidf, tfidf.fit_transform(counts[:, buckets])


def save_linear(model: LinearTextModel, output: Path) -> None:
    """A linear model as ``.npz`` (a fastText model's file is written by
    ``train_fasttext``)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("wb") as fh:  # savez would append .npz to any other suffix
        np.savez_compressed(fh, **model.to_arrays())


def predict(model, texts: Sequence[str]) -> list[float]:
    """P(positive) of normalised texts, from either kind of model."""
    return probabilities(model, texts)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mmcurate train",
        description="Train a text classifier for the quality stage: fastText (.bin) or, with --model linear "
        "(the default for mt), tf-idf logistic regression over hashed features (.npz).",
        epilog="kinds:\n"
        + "\n".join(f"  {k:8s} {v}" for k, v in KINDS.items())
        + "\n\n"
        + train_examples.__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kind", choices=sorted(KINDS), help="what the positive class is")
    p.add_argument("--positive", nargs="+", default=[], metavar="FILE", help="texts of the positive class")
    p.add_argument("--negative", nargs="+", default=[], metavar="FILE", help="texts of the negative class")
    p.add_argument("--wmt", nargs="+", default=[], metavar="DIR",
                   help="kind mt: WMT test-set folders (txt/ layout, any year); needs --language")
    p.add_argument("--language", metavar="L", help="with --wmt: the language to detect machine translation in (en, de, zh, ...)")
    p.add_argument("--wmt-exclude", nargs="+", default=[], metavar="GLOB",
                   help="with --wmt: leave out files whose name matches (e.g. a reference post-edited from a system)")
    p.add_argument("--output", "-o", required=True, metavar="MODEL",
                   help="where to write the model (.bin for fasttext, .npz for linear)")
    p.add_argument("--lines-per-doc", type=int, default=None, metavar="N",
                   help="plain text: N consecutive lines make a document (default 0: blank-line separated; "
                        "10 for --wmt)")
    p.add_argument("--test-fraction", type=float, default=0.2, help="held-out share of source groups (default 0.2)")
    p.add_argument("--no-balance", dest="balance", action="store_false",
                   help="train on the classes as they come (default: downsample the larger class)")
    p.add_argument("--seed", type=int, default=0, help="split, shuffle and fastText seed (default 0)")
    # fastText hyper-parameters. Word bigrams and a softmax over two labels, as DCLM's
    # fastText quality classifier (Li et al. 2024); epoch and lr chosen on the held-out
    # split of the shipped models' data (fastText's own 5 epochs at lr 0.1 underfit it:
    # ROC AUC 0.71 against 0.99 for the weak-model classifier).
    p.add_argument("--epoch", type=int, default=20)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--word-ngrams", type=int, default=2)
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--minn", type=int, default=0, help="shortest character n-gram (0: none)")
    p.add_argument("--maxn", type=int, default=0, help="longest character n-gram (0: none)")
    p.add_argument("--bucket", type=int, default=100_000, help="hash buckets for n-grams")
    p.add_argument("--quantize", type=int, default=0, metavar="CUTOFF",
                   help="quantize the model, keeping the CUTOFF most important words and n-grams (0: no)")
    p.add_argument("--threads", type=int, default=1, help="training threads (default 1: deterministic)")
    p.add_argument("--model", choices=("fasttext", "linear"), default=None,
                   help="fasttext (.bin) or linear: tf-idf logistic regression (.npz); default linear for mt, "
                        "fasttext otherwise")
    # Linear model (--model linear). C, families, bits and the feature cap chosen on
    # held-out source languages of the WMT22+23 into-English data (docs/stages.md,
    # benchmarks/bench_quality.py).
    p.add_argument("--families", default="w,b", help="linear: feature families, of w (words) and b (word bigrams) "
                                                    "(default w,b)")
    p.add_argument("--c", type=float, default=10.0, help="linear: inverse L2 regularisation strength (default 10)")
    p.add_argument("--bits", type=int, default=18,
                   help="linear: features are hashed into 2**BITS buckets (default 18: 262,144)")
    p.add_argument("--max-features", type=int, default=0,
                   help="linear: keep only the most frequent buckets (default 0: every one seen in --min-count texts)")
    return p


def gather_examples(args: argparse.Namespace) -> list[Example]:
    """The labelled examples the command line names (files and WMT folders)."""
    if args.wmt and args.kind != "mt":
        raise ValueError("--wmt is for kind mt")
    if args.wmt and not args.language:
        raise ValueError("--wmt needs --language (the language whose machine translation to detect)")
    if not args.wmt and not (args.positive and args.negative):
        raise ValueError("give --positive and --negative files, or --wmt folders")
    lines = args.lines_per_doc
    examples = load_examples(args.positive, 1, lines or 0) + load_examples(args.negative, 0, lines or 0)
    if args.wmt:
        files = wmt_files(args.wmt, args.wmt_exclude)
        found = wmt_examples(files, args.language, lines or 10)
        if not found:
            raise ValueError(f"no WMT files into or in {args.language!r} under {' '.join(args.wmt)}")
        examples += found
    return examples


def model_kind(args: argparse.Namespace) -> str:
    return args.model or ("linear" if args.kind == "mt" else "fasttext")


def fit(train: Sequence[Example], args: argparse.Namespace, output: Path | None = None):
    """The model ``args`` asks for, fitted on ``train``; with ``output``, saved there
    (``.npz`` for linear, ``.bin`` for fastText)."""
    if model_kind(args) == "fasttext":
        return train_fasttext(train, args, output)
    model = train_linear(train, args)
    if output is not None:
        save_linear(model, output)
    return model


def run_training(args: argparse.Namespace) -> dict[str, float]:
    """Train, save, evaluate on the held-out split; returns the held-out figures."""
    examples = gather_examples(args)
    train, test = split_examples(examples, args.test_fraction, args.seed)
    if args.balance and model_kind(args) == "fasttext":
        train = balance(train, args.seed)
    for name, rows in (("train", train), ("test", test)):
        if not any(e.label for e in rows) or all(e.label for e in rows):
            raise ValueError(f"the {name} split needs both classes: give more positive and negative texts")
    output = Path(args.output)
    model = fit(train, args, output)
    scores = predict(model, [e.text for e in test])
    figures = evaluate([e.label for e in test], scores)
    figures.update(train_docs=len(train), test_docs=len(test), bytes=output.stat().st_size)
    return figures


def cmd_train(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        figures = run_training(args)
    except (OSError, ValueError) as exc:
        print(f"mmcurate train: {exc}", file=sys.stderr)
        return 2
    print(f"model: {args.output} ({figures['bytes'] / 1e6:.2f} MB), kind {args.kind}")
    print(f"train: {figures['train_docs']} documents; held out: {figures['test_docs']} "
          f"({figures['positives']} positive, {figures['negatives']} negative), no source shared with train")
    print(f"held-out precision {figures['precision']:.3f}  recall {figures['recall']:.3f}  "
          f"ROC AUC {figures['roc_auc']:.3f}  (positive = {args.kind}, threshold 0.5)")
    return 0
