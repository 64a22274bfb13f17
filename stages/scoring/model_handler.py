"""open_clip through Beam's ``RunInference``: ``ClipModelHandler`` loads the CLIP
encoder (``engines.clip_encoder``) once per worker, wrapped in the NSFW scorer
(``engines.nsfw_scorer``) when ``scoring.nsfw`` is on, and embeds tagged elements:
documents' images and texts (stage scoring) and recycled pairs (stage recycle).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import ModelHandler, RunInference

from mmcurate.stages.config import ScoringConfig
from mmcurate.stages.engines.clip_encoder import ClipEncoder, check_checkpoint, load_clip
from mmcurate.stages.engines.nsfw_scorer import NsfwClipEncoder, check_nsfw, nsfw_scores

# Tags of the model transform's elements.
IMAGE = "image"
TEXTS = "texts"
PAIR = "pair"


def load_clip_model(config: ScoringConfig) -> ClipEncoder:
    """``load_clip`` with remote checkpoints read through Beam's filesystems."""
    return load_clip(config, FileSystems)


class ClipModelHandler(ModelHandler):
    """open_clip through ``RunInference``. Elements are tagged tuples, so one
    transform (one model copy per worker) embeds both towers:
    ``("image", image_id, bytes)`` -> ``("image", image_id, vector or None, error, nsfw)``
    and ``("texts", doc_id, texts)`` -> ``("texts", doc_id, texts, matrix)``; for
    recycled pairs (an object with ``data`` and ``caption``, stage recycle)
    ``("pair", pair)`` -> ``("pair", pair, similarity or None, error, nsfw)``, where
    ``nsfw`` is the image's NSFW score (``scoring.nsfw``; None when that is off).
    ``loader`` replaces ``load_clip_model`` (tests pass a fake encoder)."""

    def __init__(self, config: ScoringConfig, loader: Any = None):
        super().__init__()
        self._config = config
        self._loader = loader or load_clip_model

    def load_model(self) -> Any:
        model = self._loader(self._config)
        if self._config.nsfw.enabled:  # scoring.nsfw: prompts encoded once, here
            model = NsfwClipEncoder(model, self._config.nsfw, FileSystems)
        return model

    def run_inference(self, batch: Sequence[Any], model: Any, inference_args=None) -> Iterable[Any]:
        images = [e for e in batch if e[0] == IMAGE]
        docs = [e for e in batch if e[0] == TEXTS]
        pairs = [e[1] for e in batch if e[0] == PAIR]
        if pairs:
            vectors, errors = model.encode_images([pair.data for pair in pairs])
            decoded = [pair for pair, error in zip(pairs, errors) if not error]
            texts = model.encode_texts([pair.caption for pair in decoded]) if decoded else None
            unsafe = nsfw_scores(model, vectors)
            row = 0
            for pair, error in zip(pairs, errors):
                if error:
                    yield PAIR, pair, None, error, None
                else:
                    yield PAIR, pair, float(np.dot(vectors[row], texts[row])), "", unsafe[row]
                    row += 1
        if images:
            vectors, errors = model.encode_images([payload for _, _, payload in images])
            unsafe = nsfw_scores(model, vectors)
            row = 0
            for (_, image_id, _), error in zip(images, errors):
                if error:
                    yield IMAGE, image_id, None, error, None
                else:
                    yield IMAGE, image_id, vectors[row], "", unsafe[row]
                    row += 1
        if docs:
            matrix = model.encode_texts([text for _, _, texts in docs for text in texts])
            start = 0
            for _, doc_id, texts in docs:
                yield TEXTS, doc_id, tuple(texts), matrix[start : start + len(texts)]
                start += len(texts)

    def batch_elements_kwargs(self) -> Mapping[str, Any]:
        return {"min_batch_size": 1, "max_batch_size": self._config.batch_size}


def check_model_files(config: ScoringConfig, loader: Any = None) -> None:
    """Fail at pipeline construction, naming the key, on a missing or wrong
    checkpoint (unless ``loader`` replaces it) or NSFW prompt set or head."""
    if config.clip_on and loader is None:
        check_checkpoint(config, FileSystems)
    if config.clip_on or loader is not None:
        check_nsfw(config.nsfw, FileSystems)


def accelerator_hint(config: ScoringConfig, accelerator: Optional[str] = None) -> str:
    """The accelerator resource hint of the model transforms: ``accelerator`` (the
    --scoring_accelerator flag) when given, else ``scoring.accelerator``; "" on CPU."""
    hint = config.accelerator if accelerator is None else accelerator
    return hint if config.device == "cuda" else ""


def clip_inference(config: ScoringConfig, loader: Any = None, accelerator: str = "") -> RunInference:
    """``RunInference`` with ``ClipModelHandler``, carrying the accelerator hint when
    one is given: the only transforms of a run that ask for a GPU."""
    inference = RunInference(ClipModelHandler(config, loader))
    return inference.with_resource_hints(accelerator=accelerator) if accelerator else inference
