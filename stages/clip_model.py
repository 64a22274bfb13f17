"""Loading an open_clip model from a local (or Beam-filesystem) checkpoint, and
encoding images and texts with it.

Kept free of Beam at import time, so the same loader serves the pipeline's
workers, the benchmarks and a GPU machine that has torch and open_clip but no
Beam: a remote path (gs://, s3://) is read through Beam's FileSystems, imported
only then.
"""

from __future__ import annotations

import hashlib
import io
import os
from typing import Any, BinaryIO, Sequence

import numpy as np

from mmcurate.stages.config import ScoringConfig
from mmcurate.stages.engines.exceptions import error_detail


def _exists(path: str) -> bool:
    if "://" not in path:
        return os.path.exists(path)
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.exists(path)


def _open(path: str) -> BinaryIO:
    if "://" not in path:
        return open(path, "rb")
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.open(path)


class ChecksumError(ValueError):
    """A checkpoint whose sha256 is not the one configured."""


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with _open(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_checkpoint(config: ScoringConfig) -> None:
    """Fail before the pipeline runs, naming the key, on a missing checkpoint or config
    file, an unknown architecture, or a checksum mismatch."""
    if not _exists(config.checkpoint):
        raise FileNotFoundError(f"scoring.checkpoint: file not found: {config.checkpoint}")
    if config.architecture_config and not _exists(config.architecture_config):
        raise FileNotFoundError(f"scoring.architecture_config: file not found: {config.architecture_config}")
    if config.checkpoint_sha256:
        actual = file_sha256(config.checkpoint)
        if actual != config.checkpoint_sha256:
            raise ChecksumError(
                f"scoring.checkpoint_sha256: {config.checkpoint} has sha256 {actual}, expected {config.checkpoint_sha256}"
            )


def _local_copy(path: str, suffix: str) -> str:
    """A local file for ``path`` (copied from a remote filesystem when needed)."""
    if "://" not in path:
        return path
    import tempfile

    with _open(path) as src, tempfile.NamedTemporaryFile(suffix=suffix, delete=False) as dst:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            dst.write(chunk)
        return dst.name


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


def load_clip(config: ScoringConfig) -> ClipEncoder:
    """The open_clip model of ``config``: architecture (a shipped config or the
    ``architecture_config`` file), weights from ``checkpoint`` only, in eval mode on
    ``device``. Exactly what the pipeline's workers run."""
    import open_clip

    check_checkpoint(config)
    if config.architecture_config:
        open_clip.add_model_config(_local_copy(config.architecture_config, ".json"))
    if config.architecture not in open_clip.list_models():
        raise ValueError(f"scoring.architecture: {config.architecture!r} is not an open_clip model config")
    # pretrained=None: open_clip never looks up a pretrained tag or the Hub; the
    # weights come from the checkpoint below.
    model, _, preprocess = open_clip.create_model_and_transforms(
        config.architecture, pretrained=None, device=config.device, load_weights=False
    )
    open_clip.load_checkpoint(model, _local_copy(config.checkpoint, ".pt"), device=config.device)
    model.eval()
    tokenizer = open_clip.get_tokenizer(config.architecture)
    return ClipEncoder(model, preprocess, tokenizer, config.device, config.batch_size, config.max_text_chars)
