"""NSFW image scores from CLIP image embeddings, and the decisions on them.

Two scorers, both on the L2-normalised image embedding the scoring stage already
computes (so an image is embedded once, for similarity and for safety):

- **zero-shot** against a versioned prompt set (``filters/data/nsfw_prompts_v1.txt``):
  the softmax, at CLIP's logit scale, of the image's cosine similarity to every
  prompt; the score is the probability mass of the ``nsfw`` prompts. This is CLIP
  zero-shot classification, as LAION tagged NSFW images (Schuhmann et al. 2021,
  LAION-400M; 2022, LAION-5B).
- a **classifier head** in the format of LAION's CLIP-based NSFW detector as
  ported to PyTorch (github.com/LAION-AI/CLIP-based-NSFW-Detector; the port NeMo
  Curator loads): a state dict with ``norm.mean`` and ``norm.variance`` (optional),
  then ``linear_1`` .. ``linear_N`` (weight, bias); ReLU between the layers,
  sigmoid after the last. Run here in numpy.

Scores are probabilities in [0, 1]; above the threshold an image is NSFW.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from mmcurate.filters import reasons
from mmcurate.filters.verdict import Verdict, keep, reject

NSFW = "nsfw"
SAFE = "safe"

NSFW_MAX = "nsfw.max"  # highest NSFW score among the document's scored images
NSFW_IMAGES = "nsfw.images"  # images above the threshold (removed)


def image_signal(index: int) -> str:
    """The NSFW score of the document's image ``index`` (position among its image nodes)."""
    return f"nsfw.image.{index}"


@dataclass(frozen=True)
class PromptSet:
    version: str
    labels: tuple[str, ...]
    texts: tuple[str, ...]

    @property
    def nsfw_mask(self) -> np.ndarray:
        return np.array([label == NSFW for label in self.labels], dtype=bool)


def parse_prompts(text: str, name: str = "prompts") -> PromptSet:
    """A prompt file: ``version: N`` on the first line, ``#`` comments, then one
    ``label<TAB>prompt`` a line with label ``nsfw`` or ``safe``."""
    first, _, rest = text.partition("\n")
    if not first.startswith("version:"):
        raise ValueError(f"{name}: must start with a 'version: N' line")
    labels, texts = [], []
    for number, line in enumerate(rest.splitlines(), start=2):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        label, sep, prompt = line.partition("\t")
        if not sep or label not in (NSFW, SAFE) or not prompt.strip():
            raise ValueError(f"{name}, line {number}: expected 'nsfw<TAB>prompt' or 'safe<TAB>prompt'")
        labels.append(label)
        texts.append(prompt.strip())
    if NSFW not in labels or SAFE not in labels:
        raise ValueError(f"{name}: needs at least one nsfw and one safe prompt")
    return PromptSet(first.removeprefix("version:").strip(), tuple(labels), tuple(texts))


def zero_shot_scores(image_vectors: np.ndarray, prompt_vectors: np.ndarray, nsfw_mask: np.ndarray, logit_scale: float) -> np.ndarray:
    """Per image, the softmax probability mass of the nsfw prompts."""
    if len(image_vectors) == 0:
        return np.zeros(0, dtype=np.float32)
    logits = logit_scale * (np.asarray(image_vectors, dtype=np.float64) @ np.asarray(prompt_vectors, dtype=np.float64).T)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    return probs[:, nsfw_mask].sum(axis=1).astype(np.float32)


_LINEAR = re.compile(r"^linear_(\d+)\.weight$")


@dataclass(frozen=True)
class ClassifierHead:
    """LAION's CLIP-based NSFW detector format, as numpy arrays."""

    mean: np.ndarray | None
    variance: np.ndarray | None
    layers: tuple[tuple[np.ndarray, np.ndarray], ...]  # (weight [out, in], bias [out])

    @classmethod
    def from_state_dict(cls, state: Mapping[str, np.ndarray]) -> "ClassifierHead":
        numbers = sorted(int(m.group(1)) for key in state if (m := _LINEAR.match(key)))
        if not numbers or numbers != list(range(1, len(numbers) + 1)):
            raise ValueError("NSFW head: expected linear_1.weight .. linear_N.weight in the state dict")
        layers = tuple(
            (np.asarray(state[f"linear_{i}.weight"], dtype=np.float32), np.asarray(state[f"linear_{i}.bias"], dtype=np.float32))
            for i in numbers
        )
        if layers[-1][0].shape[0] != 1:
            raise ValueError(f"NSFW head: the last layer must have one output, not {layers[-1][0].shape[0]}")
        for (w_in, _), (w_out, _) in zip(layers, layers[1:]):
            if w_out.shape[1] != w_in.shape[0]:
                raise ValueError("NSFW head: layer sizes do not chain")
        mean = state.get("norm.mean")
        variance = state.get("norm.variance")
        return cls(
            None if mean is None else np.asarray(mean, dtype=np.float32).reshape(-1),
            None if variance is None else np.asarray(variance, dtype=np.float32).reshape(-1),
            layers,
        )

    @property
    def input_size(self) -> int:
        return self.layers[0][0].shape[1]

    def scores(self, image_vectors: np.ndarray) -> np.ndarray:
        x = np.asarray(image_vectors, dtype=np.float32)
        if len(x) == 0:
            return np.zeros(0, dtype=np.float32)
        if x.shape[1] != self.input_size:
            raise ValueError(f"NSFW head expects {self.input_size}-dimensional embeddings, the CLIP model gives {x.shape[1]}")
        if self.mean is not None:
            x = x - self.mean
        if self.variance is not None:
            x = x / np.sqrt(self.variance)
        for i, (weight, bias) in enumerate(self.layers):
            x = x @ weight.T + bias
            if i < len(self.layers) - 1:
                x = np.maximum(x, 0.0)
        return (1.0 / (1.0 + np.exp(-x[:, 0]))).astype(np.float32)


def image_verdict(score: float, *, threshold: float) -> Verdict:
    """Drop an image whose NSFW score is above ``threshold`` (``image.nsfw``)."""
    if score > threshold:
        return reject(reasons.IMAGE_NSFW, score, threshold)
    return keep()


def document_verdict(nsfw_images: int, *, min_images: int) -> Verdict:
    """Reject a document with at least ``min_images`` NSFW images (0: never)."""
    if min_images > 0 and nsfw_images >= min_images:
        return reject(reasons.SAFETY_NSFW_IMAGES, nsfw_images, min_images)
    return keep()


def aggregates(scores: Sequence[float], removed: int) -> dict[str, float]:
    out = {NSFW_IMAGES: float(removed)}
    if scores:
        out[NSFW_MAX] = float(max(scores))
    return out


def scores_by_id(ids: Iterable[str], scores: np.ndarray) -> dict[str, float]:
    return {image_id: float(s) for image_id, s in zip(ids, scores)}
