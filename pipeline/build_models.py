"""Rebuilds the default classifiers of the ``quality`` stage (``pipeline/models/``).

    .venv/bin/python -m mmcurate.pipeline.build_models [--data ../shared/data] [--output pipeline/models]

Each model is one ``mmcurate train`` run, on the labelled text in the project's
shared data folder (``../shared/data/``, beside the checkout; its README gives the
sources):

- ``mt.bin``: ``mt-wmt22/`` (WMT22 general-task test sets, shared-task research
  data): English written by people (the references of de-en, cs-en, zh-en and the
  original English of en-de) against the same content machine-translated by the
  WMT22 systems, 10 consecutive segments a document.
- ``llm.bin``: ``llm-fast-detect-gpt/`` (fast-detect-gpt, MIT): news (XSum),
  Wikipedia paragraphs (SQuAD) and stories (WritingPrompts) written by people
  against continuations of them by GPT-2 XL, GPT-Neo 2.7B, GPT-J 6B, GPT-NeoX 20B
  and OPT 2.7B.
- ``quality.bin``: both sets at once, human text (positive) against machine output
  (negative). A stand-in: it tells fluent human prose from degraded machine text and
  knows nothing of boilerplate, spam or educational value; train your own quality
  model (README, "Quality and implicit duplicates").

Training is seeded and single-threaded, so a rebuild gives the same figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mmcurate.pipeline.train import cmd_train

HERE = Path(__file__).resolve().parent
# Small models: 16 dimensions, quantized to the 50,000 most useful words and n-grams.
SMALL = ["--dim", "16", "--bucket", "100000", "--quantize", "50000", "--seed", "0", "--threads", "1"]


def _default_data() -> Path:
    """``shared/data`` inside the checkout, else beside it."""
    repo = HERE.parent
    inside = repo / "shared" / "data"
    return inside if inside.is_dir() else repo.parent / "shared" / "data"


def _wmt(data: Path) -> tuple[list[str], list[str]]:
    txt = data / "mt-wmt22" / "txt"
    machine = sorted(str(p) for p in (txt / "system-outputs").glob("*.en"))
    human = sorted(str(p) for p in (txt / "references").glob("*.en"))
    human += sorted(str(p) for p in (txt / "sources").glob("*en-de.src.en"))
    return machine, human


def _fast_detect(data: Path) -> tuple[list[str], list[str]]:
    files = sorted((data / "llm-fast-detect-gpt").glob("*.raw_data.json"))
    return [f"{p}@sampled" for p in files], [f"{p}@original" for p in files]


def build(data: Path, output: Path) -> int:
    mt_pos, mt_neg = _wmt(data)
    llm_pos, llm_neg = _fast_detect(data)
    if not (mt_pos and mt_neg and llm_pos and llm_neg):
        print(f"build_models: no training data under {data} (expected mt-wmt22/ and llm-fast-detect-gpt/)", file=sys.stderr)
        return 2
    runs = {
        "mt": ["mt", "--positive", *mt_pos, "--negative", *mt_neg, "--lines-per-doc", "10"],
        "llm": ["llm", "--positive", *llm_pos, "--negative", *llm_neg],
        # Human text is the positive class; both machine sources are negatives. WMT
        # blocks are grouped by block index and fast-detect-gpt texts by their human
        # original, so the held-out split shares no source with training.
        "quality": ["quality", "--positive", *mt_neg, *llm_neg, "--negative", *mt_pos, *llm_pos, "--lines-per-doc", "10"],
    }
    for name, argv in runs.items():
        print(f"== {name}")
        rc = cmd_train([*argv, *SMALL, "--output", str(output / f"{name}.bin")])
        if rc:
            return rc
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="build_models", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=_default_data(), help="the shared data folder (default: %(default)s)")
    p.add_argument("--output", type=Path, default=HERE / "models", help="where the models go")
    args = p.parse_args(argv)
    return build(args.data, args.output)


if __name__ == "__main__":
    sys.exit(main())
