"""Rebuilds the default classifiers of the ``quality`` stage (``stages/quality_models/``).

    .venv/bin/python -m mmcurate.pipeline.build_models [--data ../shared/data] [--output stages/quality_models]

Each model is one ``mmcurate train`` run, on the labelled text in the project's
shared data folder (``../shared/data/``, beside the checkout; its README gives the
sources):

- ``mt/LANG.npz``, one per language the WMT folders translate into: ``mt-wmt22/``
  and ``mt-wmt23/`` (WMT22 and WMT23 general-task test sets, shared-task research
  data; ``mmcurate train mt --wmt ... --language LANG``): text in LANG written or
  translated by people (references into LANG, original LANG sources) against the
  same content machine-translated into LANG by every WMT system, 10 consecutive
  segments a document; a tf-idf logistic regression over word unigrams and bigrams
  hashed into 2**18 buckets (``filters/translationese.py``). WMT23's en-he reference A is left out: its
  providers warn it may be post-edited from a system's output.
- ``llm.bin``: ``llm-fast-detect-gpt/`` (fast-detect-gpt, MIT): news (XSum),
  Wikipedia paragraphs (SQuAD) and stories (WritingPrompts) written by people
  against continuations of them by GPT-2 XL, GPT-Neo 2.7B, GPT-J 6B, GPT-NeoX 20B
  and OPT 2.7B.
- ``quality.bin``: both sets at once, human text (positive) against machine output
  (negative). A stand-in: it tells fluent human prose from degraded machine text and
  knows nothing of boilerplate, spam or educational value; train your own quality
  model (docs/stages.md, "Quality and implicit duplicates").

A rebuild repeats the shipped files byte for byte (``tests/pipeline/test_build_models.py``,
marked slow, checks ``llm.bin``, ``quality.bin`` and ``mt/de.npz`` against the data).
The MT models are scikit-learn fits, deterministic. The fastText models are trained
seeded and single-threaded in a fresh process (``pipeline/train.py``), so the same
data gives the same weights, and the file is the one that process saved, copied as
it is: a quantized fastText model saved a second time after loading holds the same
weights but other bytes (fastText writes its pruned n-gram index, an
``unordered_map``, in hash-table order, which follows the order the entries were
inserted, and loading inserts them in the saved order).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from mmcurate.pipeline.train_examples import wmt_examples, wmt_files

HERE = Path(__file__).resolve().parent
# Small models: 16 dimensions, quantized to the 50,000 most useful words and n-grams.
SMALL = ["--dim", "16", "--bucket", "100000", "--quantize", "50000", "--seed", "0", "--threads", "1"]
# The MT models: the linear model's defaults (pipeline/train.py), 10 segments a document.
MT_ARGS = ["--model", "linear", "--lines-per-doc", "10", "--seed", "0"]
# WMT23 en-he reference A "may be post-edited from one system's output" (the data's README).
WMT_EXCLUDE = ["generaltest2023.en-he.ref.refA.he"]
# A language needs this many documents of each class to get a model.
MIN_DOCS = 100


def shared_data() -> Path:
    """``shared/data`` inside the checkout, else beside it, else beside the folder
    that holds it (a worktree under ``wt/``)."""
    repo = HERE.parent
    candidates = [repo / "shared" / "data", repo.parent / "shared" / "data", repo.parent.parent / "shared" / "data"]
    return next((c for c in candidates if c.is_dir()), candidates[1])


def _wmt(data: Path) -> tuple[list[str], list[str]]:
    txt = data / "mt-wmt22" / "txt"
    machine = sorted(str(p) for p in (txt / "system-outputs").glob("*.en"))
    human = sorted(str(p) for p in (txt / "references").glob("*.en"))
    human += sorted(str(p) for p in (txt / "sources").glob("*en-de.src.en"))
    return machine, human


def wmt_dirs(data: Path) -> list[Path]:
    """The WMT txt folders under ``data`` (mt-wmt22/txt, mt-wmt23/txt, ...)."""
    return sorted(p for p in data.glob("mt-wmt*/txt") if p.is_dir())


def mt_languages(data: Path) -> list[str]:
    """Target languages of the WMT folders with at least MIN_DOCS documents of each class."""
    dirs = wmt_dirs(data)
    if not dirs:
        return []
    files = wmt_files(dirs, WMT_EXCLUDE)
    out = []
    for language in sorted({f.language for f in files}):
        examples = wmt_examples(files, language, 10)
        positives = sum(e.label for e in examples)
        if min(positives, len(examples) - positives) >= MIN_DOCS:
            out.append(language)
    return out


def _fast_detect(data: Path) -> tuple[list[str], list[str]]:
    files = sorted((data / "llm-fast-detect-gpt").glob("*.raw_data.json"))
    return [f"{p}@sampled" for p in files], [f"{p}@original" for p in files]


def training_runs(data: Path) -> dict[str, list[str]]:
    """The ``mmcurate train`` arguments (no ``--output``) of each shipped model, by
    its name under the output folder (``mt/de.npz``, ``llm.bin``); empty when the
    data is missing."""
    mt_pos, mt_neg = _wmt(data)
    llm_pos, llm_neg = _fast_detect(data)
    languages = mt_languages(data)
    if not (mt_pos and mt_neg and llm_pos and llm_neg and languages):
        return {}
    wmt = [str(d) for d in wmt_dirs(data)]
    return {
        **{f"mt/{language}.npz": ["mt", "--wmt", *wmt, "--wmt-exclude", *WMT_EXCLUDE, "--language", language, *MT_ARGS]
           for language in languages},
        "llm.bin": ["llm", "--positive", *llm_pos, "--negative", *llm_neg, *SMALL],
        # Human text is the positive class; both machine sources are negatives. WMT
        # blocks are grouped by block index and fast-detect-gpt texts by their human
        # original, so the held-out split shares no source with training.
        "quality.bin": ["quality", "--positive", *mt_neg, *llm_neg, "--negative", *mt_pos, *llm_pos, "--lines-per-doc",
                        "10", *SMALL],
    }


def train_command(argv: list[str], output: Path) -> list[str]:
    """One model's training, in a process of its own (as ``mmcurate train`` runs)."""
    return [sys.executable, "-m", "mmcurate.pipeline.cli", "train", *argv, "--output", str(output)]


def build(data: Path, output: Path) -> int:
    runs = training_runs(data)
    if not runs:
        print(f"build_models: no training data under {data} (expected mt-wmt22/, mt-wmt23/ and llm-fast-detect-gpt/)",
              file=sys.stderr)
        return 2
    stale = sorted((output / "mt").glob("*.npz")) if (output / "mt").is_dir() else []
    for path in stale:  # a language the data no longer covers must not keep an old model
        if f"mt/{path.name}" not in runs:
            path.unlink()
    for name, argv in runs.items():
        print(f"== {name}")
        # fastText 0.9.2 training here has failed with "Encountered NaN", seeded and
        # single-threaded: first seen after scikit-learn fits in the same process,
        # later also in fresh processes on a heavily loaded machine (cause not
        # found; `mmcurate train` retries with a halved learning rate and warns).
        # A retried model is another model: rerun `make models` if that warning shows.
        rc = subprocess.run(train_command(argv, output / name), check=False).returncode
        if rc:
            return rc
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="build_models", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=shared_data(), help="the shared data folder (default: %(default)s)")
    p.add_argument("--output", type=Path, default=HERE.parent / "stages" / "quality_models", help="where the models go")
    args = p.parse_args(argv)
    return build(args.data, args.output)


if __name__ == "__main__":
    sys.exit(main())
