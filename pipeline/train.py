"""``mmcurate train KIND``: a fastText classifier for the ``quality`` stage.

KIND is ``quality`` (positive: good text), ``mt`` (positive: machine-translated
text) or ``llm`` (positive: text written by a model). Every text passes through
``filters.quality.normalize_text``, the function the stage scores with.

Inputs (``--positive`` / ``--negative``, each one or more files):

- ``*.jsonl``: one JSON object a line; the text is the field ``text``, or the one
  named after ``@``: ``docs.jsonl@content``.
- ``*.raw_data.json`` (the fast-detect-gpt layout ``{"original": [...],
  "sampled": [...]}``): name the list after ``@``: ``xsum_gpt2-xl.raw_data.json@sampled``.
  Item *i* of both lists shares a source (the machine text continues the human
  text's opening), so both are grouped by the human text ``original[i]``.
- a WMT ``txt/`` folder (``--wmt DIR``, kind ``mt``): the general-task test sets
  as the WMT news/general systems repositories publish them, any year, into and out
  of English: ``sources/generaltestYYYY.L1-L2.src.L1``, ``references/...ref.NAME.L2``,
  ``system-outputs/...hyp.SYSTEM.L2``. For ``--language L``, the system outputs into
  L are the positives; the human references into L and the original text written in
  L (the sources of L-xx pairs) are the negatives; every ``--lines-per-doc`` (default
  10) consecutive segments make a document, grouped by year, pair and line block.
- any other file is plain text: documents separated by blank lines; with
  ``--lines-per-doc N``, every N consecutive lines make a document instead (for
  sentence-aligned files such as the WMT test sets, where line *i* of every file is
  the same segment).

The held-out split is by source, never by file: each document belongs to a group
(the human text it shares a source with; the line block of sentence-aligned files,
so the same block of every aligned file lands on the same side; otherwise its own
normalised text, which also merges exact repeats) and a hash of the group and the
seed decides the side. At the end the held-out precision, recall (at 0.5) and ROC
AUC are printed.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import logging
import random
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np

from mmcurate.filters.quality import LABEL_NEGATIVE, LABEL_POSITIVE, normalize_text, probabilities
from mmcurate.filters.translationese import LinearTextModel, features, most_frequent_words

log = logging.getLogger(__name__)

KINDS = {
    "quality": "good text (positive) vs. the rest",
    "mt": "machine-translated text (positive) vs. text written or translated by people",
    "llm": "text written by a language model (positive) vs. text written by people",
}


@dataclass(frozen=True)
class Example:
    text: str  # normalised
    label: int  # 1 positive, 0 negative
    group: str  # texts of one group are never split between train and test
    # WMT documents: the language the text was translated from ("" for text written
    # in its own language), the test set's year and the system ("ref", "src" for
    # people); the benchmark holds out by these.
    source: str = ""
    year: int = 0
    system: str = ""


# generaltest2023.en-de.hyp.GPT4-5shot.de, generaltest2022.de-en.ref.A.en,
# generaltest2023.zh-en.src.zh, newstest2021.de-en.ref.A.en
_WMT_NAME = re.compile(r"^[a-z]+(\d{4})\.([a-z]{2,3})-([a-z]{2,3})\.(src|ref|hyp)\.(?:(.+)\.)?([a-z]{2,3})$")


@dataclass(frozen=True)
class WmtFile:
    path: Path
    year: int
    pair: str  # "de-en"
    kind: str  # src, ref or hyp
    name: str  # the system or reference name ("" for a source)
    language: str  # the language the file is written in

    @property
    def source(self) -> str:
        """The language the text was translated from; "" for original text."""
        return "" if self.kind == "src" else self.pair.split("-")[0]


def wmt_files(roots: Iterable[str | Path], exclude: Sequence[str] = ()) -> list[WmtFile]:
    """The WMT test-set files under ``roots`` (searched recursively), sorted by path;
    files whose name matches a glob in ``exclude`` are left out."""
    found = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: no such folder")
        for path in sorted(root.rglob("*")):
            match = _WMT_NAME.match(path.name)
            if not match or not path.is_file() or any(fnmatch.fnmatch(path.name, g) for g in exclude):
                continue
            year, l1, l2, kind, name, language = match.groups()
            if language not in (l1, l2):
                continue
            found.append(WmtFile(path, int(year), f"{l1}-{l2}", kind, name or "", language))
    return found


def wmt_examples(files: Sequence[WmtFile], language: str, lines_per_doc: int = 10) -> list[Example]:
    """Labelled documents in ``language`` from WMT test sets: system outputs into it
    (positive) against human references into it and original text written in it
    (negative). Documents are ``lines_per_doc`` consecutive segments (a shorter tail
    is dropped); the group is the year, pair and line block, so the same block of
    every aligned file is on one side of the split. A text repeated across files
    (the English source of several en-xx pairs) counts once."""
    examples, seen = [], set()
    for f in files:
        if f.language != language:
            continue
        label = 1 if f.kind == "hyp" else 0
        lines = f.path.read_text(encoding="utf-8").splitlines()
        for block, start in enumerate(range(0, len(lines) - lines_per_doc + 1, lines_per_doc)):
            normalized = normalize_text("\n".join(lines[start : start + lines_per_doc]))
            if not normalized or normalized in seen:
                continue
            seen.add(normalized)
            examples.append(Example(
                normalized, label, f"wmt:{f.year}.{f.pair}.{block}",
                source=f.source, year=f.year, system=f.name or f.kind,
            ))
    return examples


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _split_spec(spec: str) -> tuple[Path, Optional[str]]:
    path, sep, field = spec.rpartition("@")
    if sep and field.isidentifier() and not Path(spec).exists():
        return Path(path), field
    return Path(spec), None


def read_texts(spec: str, lines_per_doc: int = 0) -> Iterator[tuple[str, str]]:
    """(text, group) pairs from one input file (see the module docstring)."""
    path, field = _split_spec(spec)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    name = path.name
    if name.endswith(".raw_data.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if field not in data:
            raise ValueError(f"{spec}: name the list to read after @ ({' or '.join(sorted(data))})")
        originals = data.get("original", data[field])
        for i, text in enumerate(data[field]):
            yield text, "src:" + _hash(normalize_text(originals[i]))
    elif name.endswith(".jsonl"):
        key = field or "text"
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                if key not in record:
                    raise ValueError(f"{path}:{n}: no field {key!r}")
                yield record[key], "txt:" + _hash(normalize_text(record[key]))
    elif lines_per_doc > 0:
        lines = path.read_text(encoding="utf-8").splitlines()
        for block, start in enumerate(range(0, len(lines), lines_per_doc)):
            yield "\n".join(lines[start : start + lines_per_doc]), f"block:{block}"
    else:
        text = path.read_text(encoding="utf-8")
        for para in text.split("\n\n"):
            if para.strip():
                yield para, "txt:" + _hash(normalize_text(para))


def load_examples(specs: Iterable[str], label: int, lines_per_doc: int) -> list[Example]:
    """Labelled, normalised examples; a text that repeats (the same human text in
    several model files) counts once."""
    examples, seen = [], set()
    for spec in specs:
        for text, group in read_texts(spec, lines_per_doc):
            normalized = normalize_text(text)
            if normalized and normalized not in seen:
                seen.add(normalized)
                examples.append(Example(normalized, label, group))
    return examples


def split_examples(examples: Sequence[Example], test_fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """Train and test sets, split by group: a group is wholly on one side."""
    train, test = [], []
    for ex in examples:
        bucket = int(_hash(f"{seed}:{ex.group}")[:8], 16) / 0xFFFFFFFF
        (test if bucket < test_fraction else train).append(ex)
    return train, test


def balance(examples: Sequence[Example], seed: int) -> list[Example]:
    """Downsample the larger class to the size of the smaller one."""
    pos = [e for e in examples if e.label == 1]
    neg = [e for e in examples if e.label == 0]
    rng = random.Random(seed)
    n = min(len(pos), len(neg))
    return rng.sample(pos, n) + rng.sample(neg, n)


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (Mann-Whitney U, ties counted half)."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


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


def train_fasttext(examples: Sequence[Example], args: argparse.Namespace):
    """A fastText supervised model over ``examples`` (shuffled with the seed).

    Training runs in a fresh "spawn" child process and the parent loads the saved
    model: in a long-lived process that has already run other native code, the
    fastText wheel's training was seen to diverge ("Encountered NaN") or give other
    weights for the same seed, while a fresh process is repeatable.
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
    """A logistic regression over sublinear tf-idf features (``filters.translationese``):
    scikit-learn fits it, ``LinearTextModel`` scores it. Classes are weighted to
    balance, so no text is thrown away."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    families = tuple(args.families.split(","))
    texts = [e.text for e in examples]
    words = most_frequent_words(texts, args.function_words) if "f" in families else frozenset()
    vectorizer = TfidfVectorizer(
        analyzer=lambda text: list(features(text, families, words).elements()),
        min_df=args.min_count, sublinear_tf=True, max_features=args.max_features or None, dtype=np.float64,
    )
    matrix = vectorizer.fit_transform(texts)
    classifier = LogisticRegression(C=args.c, class_weight="balanced", max_iter=5000, random_state=args.seed)
    classifier.fit(matrix, [e.label for e in examples])
    terms = vectorizer.get_feature_names_out()
    return LinearTextModel(terms, vectorizer.idf_, classifier.coef_[0], float(classifier.intercept_[0]), families, words)


def save_model(model, output: Path) -> None:
    """A fastText model as ``.bin``; a linear model as ``.npz``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(model, LinearTextModel):
        with output.open("wb") as fh:  # savez would append .npz to any other suffix
            np.savez_compressed(fh, **model.to_arrays())
    else:
        model.save_model(str(output))


def predict(model, texts: Sequence[str]) -> list[float]:
    """P(positive) of normalised texts, from either kind of model."""
    return probabilities(model, texts)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mmcurate train",
        description="Train a fastText classifier for the quality stage.",
        epilog="kinds:\n" + "\n".join(f"  {k:8s} {v}" for k, v in KINDS.items()) + "\n\n" + __doc__.split("\n\n", 2)[2],
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
    p.add_argument("--output", "-o", required=True, metavar="MODEL.bin", help="where to write the model")
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
    # Linear model (--model linear). C, families and sizes chosen on held-out source
    # languages of the WMT22+23 into-English data (docs/stages.md, benchmarks/bench_quality.py).
    p.add_argument("--families", default="w,b", help="linear: feature families, of w (words), b (word bigrams), "
                                                    "f (function-word trigrams) (default w,b)")
    p.add_argument("--c", type=float, default=10.0, help="linear: inverse L2 regularisation strength (default 10)")
    p.add_argument("--max-features", type=int, default=100_000,
                   help="linear: keep the most frequent features (default 100000; 0: all)")
    p.add_argument("--function-words", type=int, default=200,
                   help="linear, family f: how many of the most frequent words count as function words")
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


def fit(train: Sequence[Example], args: argparse.Namespace):
    """The model ``args`` asks for, fitted on ``train``."""
    return train_linear(train, args) if model_kind(args) == "linear" else train_fasttext(train, args)


def run_training(args: argparse.Namespace) -> dict[str, float]:
    """Train, save, evaluate on the held-out split; returns the held-out figures."""
    examples = gather_examples(args)
    train, test = split_examples(examples, args.test_fraction, args.seed)
    if args.balance and model_kind(args) == "fasttext":
        train = balance(train, args.seed)
    for name, rows in (("train", train), ("test", test)):
        if not any(e.label for e in rows) or all(e.label for e in rows):
            raise ValueError(f"the {name} split needs both classes: give more positive and negative texts")
    model = fit(train, args)
    output = Path(args.output)
    save_model(model, output)
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
