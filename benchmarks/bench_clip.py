"""CLIP throughput of the scoring stage's encoder: images/s and texts/s, peak memory.

    .venv/bin/python benchmarks/bench_clip.py [--device cpu|cuda] [--batch-sizes 8,32,128]
        [--models tiny,ViT-B-32] [--threads N] [--images N]

Self-contained and offline: each model is built with random weights (``tiny``: the
small custom config the tests use; ``ViT-B-32``: open_clip's shipped config), saved
as a checkpoint in a temporary directory and loaded back through
``stages.engines.clip_encoder.load_clip``, exactly as the pipeline's workers load one. Random
weights cost the same arithmetic as trained ones.

images/s covers what the stage does per image: JPEG decode (320x240 generated
photos), open_clip's preprocessing (resize, crop, normalise) and the image tower.
texts/s: tokenisation and the text tower, on 20-word captions. Each model runs in
its own subprocess, so "peak RSS" is that model's process alone; on cuda the peak
GPU memory torch allocated is reported as well.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 8, "heads": 2, "layers": 1},
}
WORDS = "the harbour at the end of the valley was built when the town still traded salt and timber with cities".split()


def _photos(n: int) -> list[bytes]:
    import random

    from PIL import Image, ImageDraw

    out = []
    for seed in range(n):
        rng = random.Random(seed)
        image = Image.new("RGB", (320, 240), tuple(rng.randrange(256) for _ in range(3)))
        draw = ImageDraw.Draw(image)
        for _ in range(10):
            x, y = rng.randrange(320), rng.randrange(240)
            draw.ellipse([x, y, x + rng.randrange(20, 160), y + rng.randrange(20, 120)], fill=tuple(rng.randrange(256) for _ in range(3)))
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=90)
        out.append(buffer.getvalue())
    return out


def _encoder(model: str, device: str, batch_size: int, workdir: Path):
    import open_clip
    import torch

    from mmcurate.pipeline.config import ScoringConfig
    from mmcurate.stages.engines.clip_encoder import load_clip

    extra = {}
    name = model
    if model == "tiny":
        name = "mmcurate-tiny"
        config_path = workdir / f"{name}.json"
        config_path.write_text(json.dumps(TINY))
        open_clip.add_model_config(config_path)
        extra["architecture_config"] = str(config_path)
    checkpoint = workdir / f"{name}.pt"
    if not checkpoint.exists():
        torch.manual_seed(0)
        torch.save(open_clip.create_model(name, pretrained=None, load_weights=False).state_dict(), checkpoint)
    config = ScoringConfig(architecture=name, checkpoint=str(checkpoint), device=device, batch_size=batch_size, **extra)
    return load_clip(config)


def measure(model: str, device: str, batch_sizes: list[int], n_images: int) -> list[dict]:
    """One model, every batch size (run in a subprocess by main)."""
    import torch

    rows = []
    photos = _photos(max(n_images, max(batch_sizes)))
    captions = [" ".join(WORDS[(i % 5) :] + WORDS[: (i % 5)]) for i in range(len(photos))]
    with tempfile.TemporaryDirectory() as tmp:
        for batch_size in batch_sizes:
            encoder = _encoder(model, device, batch_size, Path(tmp))
            images = photos[: max(n_images, batch_size)]
            encoder.encode_images(images[:batch_size])  # warm-up
            encoder.encode_texts(captions[:batch_size])
            if device == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            encoder.encode_images(images)
            if device == "cuda":
                torch.cuda.synchronize()
            image_seconds = time.perf_counter() - started
            started = time.perf_counter()
            encoder.encode_texts(captions[: len(images)])
            if device == "cuda":
                torch.cuda.synchronize()
            text_seconds = time.perf_counter() - started
            rows.append(
                {
                    "model": model,
                    "device": device,
                    "batch": batch_size,
                    "images": len(images),
                    "images_per_s": len(images) / image_seconds,
                    "texts_per_s": len(images) / text_seconds,
                    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                    "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None,
                }
            )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch-sizes", default="8,32,128", help="comma-separated")
    parser.add_argument("--models", default="tiny,ViT-B-32", help="comma-separated: tiny and/or open_clip config names")
    parser.add_argument("--images", type=int, default=256, help="images encoded per batch size (at least one batch)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model, print JSON
    args = parser.parse_args(argv)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.one:
        print(json.dumps(measure(args.one, args.device, batch_sizes, args.images)))
        return 0
    rows = []
    for model in [m for m in args.models.split(",") if m]:
        command = [sys.executable, __file__, "--one", model, "--device", args.device, "--batch-sizes", args.batch_sizes,
                   "--images", str(args.images), "--threads", str(args.threads)]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        rows += json.loads(done.stdout.strip().splitlines()[-1])
    import torch

    print(f"CLIP encoder throughput (stages.engines.clip_encoder.load_clip, random weights), torch {torch.__version__}, "
          f"{torch.get_num_threads() if not args.threads else args.threads} CPU threads, device {args.device}")
    header = f"{'model':<10} {'device':<6} {'batch':>5} {'images':>6} {'images/s':>9} {'texts/s':>9} {'peak RSS MB':>11} {'peak GPU MB':>11}"
    print(header)
    print("-" * len(header))
    for r in rows:
        gpu = f"{r['peak_gpu_mb']:>11.0f}" if r["peak_gpu_mb"] is not None else f"{'-':>11}"
        print(f"{r['model']:<10} {r['device']:<6} {r['batch']:>5} {r['images']:>6} {r['images_per_s']:>9.1f} "
              f"{r['texts_per_s']:>9.1f} {r['peak_rss_mb']:>11.0f} {gpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
