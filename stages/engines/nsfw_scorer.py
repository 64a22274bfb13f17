"""The NSFW scorer of the scoring stage (``scoring.nsfw``), on the CLIP encoder's
image embeddings.

``ClipModelHandler.load_model`` (``stages.scoring.model_handler``) wraps the loaded
CLIP encoder in ``NsfwClipEncoder`` once per worker: the prompt set is encoded with
the text tower there, once, and the optional classifier head is loaded there. ``run_inference`` then scores every
embedded image (documents' images and recycled pairs alike) from the embedding it
already has: NSFW costs a matrix product per batch, no second pass over the image.

Nothing is downloaded: the prompt set ships as package data and the head is a
local (or remote, through the filesystem the stage passes) file, sha256-checked when ``head_sha256`` is given.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from mmcurate.filters import nsfw
from mmcurate.stages.config import NsfwConfig
from mmcurate.stages.engines.files import Filesystem, data_file, exists, file_sha256, open_file


def load_prompts(name: str) -> nsfw.PromptSet:
    """The prompt set ``name`` (a file under filters/data/, or a path)."""
    path = data_file(name)
    if not path.is_file():
        raise FileNotFoundError(f"scoring.nsfw.prompts: file not found: {name}")
    return nsfw.parse_prompts(path.read_text(encoding="utf-8"), f"scoring.nsfw.prompts {path}")


def load_head(path: str, sha256: str = "", fs: Optional[Filesystem] = None) -> nsfw.ClassifierHead:
    """A classifier head state dict (torch ``.pt``/``.pth``), as numpy; ``fs`` reads
    a remote path."""
    import torch

    if sha256:
        actual = file_sha256(path, fs)
        if actual != sha256.lower():
            raise ValueError(f"scoring.nsfw.head_sha256: {path} has sha256 {actual}, expected {sha256}")
    with open_file(path, fs) as fh:
        state = torch.load(io.BytesIO(fh.read()), map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    return nsfw.ClassifierHead.from_state_dict({k: v.float().numpy() for k, v in state.items()})


def check_nsfw(config: NsfwConfig, fs: Optional[Filesystem] = None) -> None:
    """Fail at pipeline construction, naming the key, on a bad prompt set or head."""
    if not config.enabled:
        return
    load_prompts(config.prompts)
    if config.head:
        if not exists(config.head, fs):
            raise FileNotFoundError(f"scoring.nsfw.head: file not found: {config.head}")
        load_head(config.head, config.head_sha256, fs)


def method(config: NsfwConfig) -> str:
    """How images are scored, for the manifest."""
    if config.head:
        return f"head {config.head}"
    return f"zero-shot {Path(config.prompts).name} (version {load_prompts(config.prompts).version})"


class NsfwClipEncoder:
    """A CLIP encoder (``encode_images``, ``encode_texts``) that also scores images for NSFW."""

    def __init__(self, encoder: Any, config: NsfwConfig, fs: Optional[Filesystem] = None):
        self.encoder = encoder
        self.config = config
        self.head: Optional[nsfw.ClassifierHead] = load_head(config.head, config.head_sha256, fs) if config.head else None
        self.prompts: Optional[nsfw.PromptSet] = None
        self.prompt_vectors: Optional[np.ndarray] = None
        if self.head is None:
            self.prompts = load_prompts(config.prompts)
            self.prompt_vectors = np.asarray(encoder.encode_texts(list(self.prompts.texts)), dtype=np.float32)

    def encode_images(self, payloads: Sequence[bytes]):
        return self.encoder.encode_images(payloads)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder.encode_texts(texts)

    def nsfw_scores(self, vectors: np.ndarray) -> np.ndarray:
        if self.head is not None:
            return self.head.scores(vectors)
        return nsfw.zero_shot_scores(vectors, self.prompt_vectors, self.prompts.nsfw_mask, self.config.logit_scale)


def nsfw_scores(model: Any, vectors: np.ndarray) -> list[Optional[float]]:
    """NSFW score per embedded image, or None each when the model has no scorer."""
    if not isinstance(model, NsfwClipEncoder) or len(vectors) == 0:
        return [None] * len(vectors)
    return [float(s) for s in model.nsfw_scores(vectors)]
