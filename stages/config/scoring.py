"""Settings of the scoring stage: CLIP, the NSFW head and the VLM judge.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from mmcurate.stages.config.base import Section as _Section


class JudgeConfig(_Section):
    """``scoring.judge``: an optional VLM judge (stages/scoring/judge.py): an OpenAI-compatible
    chat completions endpoint rates each document the CLIP step kept."""

    # Ask the VLM judge about each document CLIP kept.
    enabled: bool = False
    # Base URL of the API, e.g. http://localhost:8000/v1 (vLLM, SGLang) or a hosted API.
    endpoint: str = ""
    # Model name the endpoint serves.
    model: str = ""
    # Name of an environment variable holding the API key (sent as a Bearer token).
    api_key_env: str = ""
    # The rubric prompt: a file name under mmcurate/filters/data/ or a path.
    prompt: str = "judge_rubric_v1.txt"
    concurrency: int = Field(default=8, gt=0)  # requests in flight per worker
    # Seconds one request may take.
    timeout_seconds: float = Field(default=60.0, gt=0)
    retries: int = Field(default=3, ge=0)  # after 429, 5xx, timeouts and connection errors
    backoff_seconds: float = Field(default=1.0, ge=0)  # doubled after each retry
    batch_size: int = Field(default=16, gt=0)  # documents per DoFn call (sent concurrently)
    max_images: int = Field(default=4, ge=0)  # images sent per document
    image_max_side: int = Field(default=512, gt=0)  # images are downscaled to this
    # Characters of document text sent.
    max_text_chars: int = Field(default=6000, gt=0)
    # Most tokens the judge may answer with.
    max_tokens: int = Field(default=300, gt=0)
    # Reject documents scored below this (the rubric's scale is 1-5); 0 never rejects.
    min_score: float = Field(default=0.0, ge=0, le=5)
    # Response cache (JSON files keyed by document hash, prompt version and model);
    # empty: no cache.
    cache_dir: str = ""

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str, info) -> str:
        if info.data.get("enabled") and not value:
            raise ValueError("scoring.judge.enabled needs scoring.judge.endpoint")
        return value.rstrip("/")

    @field_validator("model")
    @classmethod
    def _model(cls, value: str, info) -> str:
        if info.data.get("enabled") and not value:
            raise ValueError("scoring.judge.enabled needs scoring.judge.model")
        return value


class NsfwConfig(_Section):
    """``scoring.nsfw``: an NSFW score per image from its CLIP embedding (stages/engines/nsfw_scorer.py);
    on whenever the CLIP step runs (scoring.checkpoint), unless enabled is false."""

    enabled: bool = True
    # CLIP zero-shot against a versioned prompt set, as LAION-5B tagged NSFW images
    # (Schuhmann et al. 2022): a file name under mmcurate/filters/data/ or a path;
    # its first line names the version, which the manifest records.
    prompts: str = "nsfw_prompts_v1.txt"
    # Softmax temperature of the zero-shot step: CLIP's own logit scale (100).
    logit_scale: float = Field(default=100.0, gt=0)
    # Optional classifier head on the image embedding, in the format of LAION's
    # CLIP-based NSFW detector as ported to PyTorch (a state dict with norm.mean,
    # norm.variance and linear_1..linear_N; ReLU between, sigmoid at the end). It needs
    # the embedding it was trained on (ViT-L/14 for LAION's). When set, it replaces
    # the zero-shot score.
    head: str = ""
    # sha256 of the head file; checked before loading when given.
    head_sha256: str = ""
    # An image scoring above this is dropped (image.nsfw). 0.5: the decision point of
    # both scores (a probability); NeMo Curator's NSFW filter also uses 0.5.
    threshold: float = Field(default=0.5, ge=0, le=1)
    # A document with at least this many NSFW images is rejected (safety.nsfw_images);
    # 0 only drops the images. 1 is ours: a page showing a pornographic image is an
    # adult page, whatever its other images.
    reject_document_min_images: int = Field(default=1, ge=0)


class ScoringConfig(_Section):
    """Stage `scoring`: CLIP image-text similarity (open_clip, stages/scoring/).

    CLIP is off unless a checkpoint is given; with no checkpoint and no judge the
    stage passes every document through and the manifest says why. Weights are never
    downloaded: ``checkpoint`` is a local file (or any Beam filesystem path)."""

    # open_clip architecture name (open_clip.list_models(), e.g. "ViT-B-32",
    # "ViT-L-14"), or the name of the config file given in architecture_config.
    architecture: str = "ViT-B-32"
    # An open_clip model config JSON for an architecture open_clip does not ship;
    # its file name (without .json) is the architecture name.
    architecture_config: str = ""
    # Local checkpoint (a state dict saved by torch or safetensors). Empty: stage off.
    checkpoint: str = ""
    # sha256 of the checkpoint file; checked before loading when given.
    checkpoint_sha256: str = ""
    # Where CLIP runs: cpu or cuda.
    device: Literal["cpu", "cuda"] = "cpu"
    # Beam's accelerator resource hint on the model transforms when device=cuda, in
    # Dataflow's syntax; the dataflow runner preset's gpu= replaces it
    # (--scoring_accelerator). Runners without accelerators ignore it.
    accelerator: str = "type:nvidia-l4;count:1;install-nvidia-driver"
    batch_size: int = Field(default=32, gt=0)  # images (or documents' texts) per model call
    # Characters of a text the tokenizer sees (CLIP's context is 77 tokens).
    max_text_chars: int = Field(default=300, gt=0)
    # An image is removed from its document when its best similarity (caption and
    # neighbouring text) is below this. MMC4 (Zhu et al. 2023, sec. 3) discards
    # images whose best sentence similarity is below 0.15 with ViT-L/14; LAION-400M
    # (Schuhmann et al. 2021) and DataComp's baselines keep pairs at or above 0.28
    # with ViT-B/32 (see pair_min_similarity). Thresholds depend on the model: the
    # default is MMC4's, for documents; 0 scores without removing.
    image_min_similarity: float = Field(default=0.15, ge=-1, le=1)
    # Image-text pairs (stage recycle): LAION-400M's 0.28 cosine with ViT-B/32.
    pair_min_similarity: float = Field(default=0.28, ge=-1, le=1)
    # The share-above signal counts images at or above this (default: LAION's 0.28).
    share_threshold: float = Field(default=0.28, ge=-1, le=1)
    # Document rules on the aggregates; 0 (default) measures without rejecting.
    min_mean_similarity: float = Field(default=0.0, ge=-1, le=1)
    # Share of a document's images at or above share_threshold that it needs (0: no rule).
    min_share_above: float = Field(default=0.0, ge=0, le=1)
    # A document left with no image after removal: "reject" it, or keep it as text.
    no_images: Literal["reject", "keep_text_only"] = "reject"
    # MMC4-style placement: assign images to sentences by maximum-weight bipartite
    # matching of the similarity matrix (MMC4 sec. 3, linear assignment) and move
    # each image after the text block of its sentence.
    assign_images: bool = False
    judge: JudgeConfig = JudgeConfig()
    nsfw: NsfwConfig = NsfwConfig()

    @property
    def clip_on(self) -> bool:
        return bool(self.checkpoint)

    @property
    def active(self) -> bool:
        """Whether the stage does anything: CLIP needs a checkpoint, the judge its switch."""
        return bool(self.checkpoint) or self.judge.enabled

    @field_validator("architecture")
    @classmethod
    def _local_architecture(cls, value: str) -> str:
        if value.startswith(("hf-hub:", "local-dir:")):
            raise ValueError(
                "scoring.architecture must be an open_clip config name; weights come from scoring.checkpoint"
            )
        return value

    @field_validator("checkpoint_sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.strip().lower()
        if value and (len(value) != 64 or any(c not in "0123456789abcdef" for c in value)):
            raise ValueError("scoring.checkpoint_sha256 must be 64 hex digits")
        return value
