"""A tiny open_clip model saved to disk, for tests of the real loading path
(tests/stages/scoring/test_score_image_text.py, test_nsfw.py), and a colour encoder standing in
for CLIP in stage-logic tests."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

# ~1 MB of weights: one transformer layer per tower, 16-dimensional embeddings.
TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 8, "heads": 2, "layers": 1},
}


def save_tiny_clip(directory: Path, name: str, seed: int = 0) -> tuple[str, str, str]:
    """Registers the config ``name``, saves a seeded random model as a half-precision
    state dict; returns (config path, checkpoint path, checkpoint sha256)."""
    import open_clip
    import torch

    config_path = Path(directory) / f"{name}.json"
    config_path.write_text(json.dumps(TINY))
    open_clip.add_model_config(config_path)
    torch.manual_seed(seed)
    model = open_clip.create_model(name, pretrained=None, load_weights=False)
    checkpoint = Path(directory) / f"{name}.pt"
    torch.save({k: v.half() for k, v in model.state_dict().items()}, checkpoint)
    return str(config_path), str(checkpoint), hashlib.sha256(checkpoint.read_bytes()).hexdigest()


class ColourEncoder:
    """Solid colours and colour words on three axes, other texts on a fourth: a red
    image has similarity 1 with a text saying "red" and 0 with the others."""

    def encode_images(self, payloads):
        """Images by the colour of their top-left pixel; an undecodable payload gets
        an error and no row, as ``ClipEncoder.encode_images`` does."""
        vectors, errors = [], []
        for payload in payloads:
            try:
                pixel = Image.open(io.BytesIO(payload)).convert("RGB").getpixel((0, 0))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            v = np.array(pixel + (0,), dtype=np.float32)
            vectors.append(v / np.linalg.norm(v))
            errors.append("")
        return np.array(vectors, dtype=np.float32), errors

    def encode_texts(self, texts):
        out = []
        for text in texts:
            v = np.array([("red" in text) * 1.0, ("green" in text) * 1.0, ("blue" in text) * 1.0, 0.0], dtype=np.float32)
            if not v.any():
                v[3] = 1.0
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)
