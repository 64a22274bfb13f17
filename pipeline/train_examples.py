"""The labelled examples ``mmcurate train`` (``pipeline.train``) learns from and
holds out: what it reads from its input files and how it splits them.

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

import fnmatch
import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from mmcurate.filters.quality import normalize_text, normalize_texts


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
        starts = range(0, len(lines) - lines_per_doc + 1, lines_per_doc)
        texts = normalize_texts(["\n".join(lines[start : start + lines_per_doc]) for start in starts])
        for block, normalized in enumerate(texts):
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
