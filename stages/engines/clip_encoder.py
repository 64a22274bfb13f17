"""An open_clip model loaded from a local (or remote) checkpoint, encoding images
and texts to L2-normalised vectors: the engine of the scoring stage's CLIP step.

Beam-free, so the same loader serves the pipeline's workers, the benchmarks and a
GPU machine that has torch and open_clip but no Beam. A remote path (gs://, s3://)
is read through the filesystem the caller passes (the stage passes Beam's
``FileSystems``; see ``engines.files``).
"""

from __future__ import annotations

import io
from typing import Any, Optional, Sequence

import numpy as np

from mmcurate.stages.config import ScoringConfig
from mmcurate.stages.engines.exceptions import error_detail
from mmcurate.stages.engines.files import Filesystem, exists, file_sha256, local_copy


class ChecksumError(ValueError):
    """A checkpoint whose sha256 is not the one configured."""


def check_checkpoint(config: ScoringConfig, fs: Optional[Filesystem] = None) -> None:
    """Fail before the pipeline runs, naming the key, on a missing checkpoint or config
    file, an unknown architecture, or a checksum mismatch."""
    if not exists(config.checkpoint, fs):
        raise FileNotFoundError(f"scoring.checkpoint: file not found: {config.checkpoint}")
    if config.architecture_config and not exists(config.architecture_config, fs):
        raise FileNotFoundError(f"scoring.architecture_config: file not found: {config.architecture_config}")
    if config.checkpoint_sha256:
        actual = file_sha256(config.checkpoint, fs)
        if actual != config.checkpoint_sha256:
            raise ChecksumError(
                f"scoring.checkpoint_sha256: {config.checkpoint} has sha256 {actual}, expected {config.checkpoint_sha256}"
            )


class ClipEncoder:
    """A loaded open_clip model with its image transform and tokenizer, encoding to
    L2-normalised float32 numpy vectors."""

    def __init__(self, model: Any, preprocess: Any, tokenizer: Any, device: str, batch_size: int, max_text_chars: int):
        self.model = model
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = batch_size
        self.max_text_chars = max_text_chars

    def encode_images(self, payloads: Sequence[bytes]) -> tuple[np.ndarray, list[str]]:
        """Embeddings of the decodable payloads (rows in order) and, per payload, ""
        or the error that kept it out (rows only for the decodable ones)."""
        import torch
        from PIL import Image

        tensors, errors = [], []
        for payload in payloads:
            try:
                with Image.open(io.BytesIO(payload)) as image:
                    image.seek(0)
                    tensors.append(self.preprocess(image.convert("RGB")))
                errors.append("")
            except Exception as exc:  # a payload the images stage accepted but we cannot decode
                errors.append(f"{type(exc).__name__}: {error_detail(exc)}")
        if not tensors:
            return np.zeros((0, 0), dtype=np.float32), errors
        out = []
        with torch.inference_mode():
            for start in range(0, len(tensors), self.batch_size):
                batch = torch.stack(tensors[start : start + self.batch_size]).to(self.device)
                out.append(self.model.encode_image(batch, normalize=True).float().cpu().numpy())
        return np.concatenate(out), errors

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                chunk = [t[: self.max_text_chars] for t in texts[start : start + self.batch_size]]
                tokens = self.tokenizer(chunk).to(self.device)
                out.append(self.model.encode_text(tokens, normalize=True).float().cpu().numpy())
        return np.concatenate(out)


def load_clip(config: ScoringConfig, fs: Optional[Filesystem] = None) -> ClipEncoder:
    """The open_clip model of ``config``: architecture (a shipped config or the
    ``architecture_config`` file), weights from ``checkpoint`` only, in eval mode on
    ``device``. Exactly what the pipeline's workers run; ``fs`` reads remote paths."""
    import open_clip

    check_checkpoint(config, fs)
    if config.architecture_config:
        open_clip.add_model_config(local_copy(config.architecture_config, ".json", fs))
    if config.architecture not in open_clip.list_models():
        raise ValueError(f"scoring.architecture: {config.architecture!r} is not an open_clip model config")
    # pretrained=None: open_clip never looks up a pretrained tag or the Hub; the
    # weights come from the checkpoint below.
    model, _, preprocess = open_clip.create_model_and_transforms(
        config.architecture, pretrained=None, device=config.device, load_weights=False
    )
    open_clip.load_checkpoint(model, local_copy(config.checkpoint, ".pt", fs), device=config.device)
    model.eval()
    tokenizer = open_clip.get_tokenizer(config.architecture)
    return ClipEncoder(model, preprocess, tokenizer, config.device, config.batch_size, config.max_text_chars)
