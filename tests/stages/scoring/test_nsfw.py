"""NSFW image scores in the scoring stage (scoring.nsfw): the zero-shot and head
scorers, the stage with a fake encoder, recycled pairs, and the real loading path
with a tiny saved open_clip model."""

from __future__ import annotations

import hashlib
import io
import json

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image

from mmcurate.filters import nsfw, reasons
from mmcurate.pipeline.config import ScoringConfig
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.schemas.rows import STATUS_OK, ImageRow
from mmcurate.stages.engines.clip_encoder import load_clip
from mmcurate.stages.engines.nsfw_scorer import NsfwClipEncoder, load_head, load_prompts
from mmcurate.stages.engines.recycled_pairs import Pair
from mmcurate.stages.scoring.model_handler import IMAGE, PAIR, ClipModelHandler
from mmcurate.stages.scoring.pair_scores import ThresholdPairsFn
from mmcurate.stages.scoring.score_image_text import ScoreImageText
from tinyclip import ColourEncoder, save_tiny_clip

COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255)}


def png(colour: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), COLOURS[colour]).save(buffer, format="PNG")
    return buffer.getvalue()


PAYLOADS = {c: png(c) for c in COLOURS}
IDS = {c: hashlib.sha256(p).hexdigest() for c, p in PAYLOADS.items()}


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    path = tmp_path_factory.mktemp("nsfw") / "colour_prompts_v3.txt"
    path.write_text("version: 3\n# test prompts\nnsfw\ta red image\nsafe\ta green image\nsafe\ta blue image\n", encoding="utf-8")
    return str(path)


def image(colour: str) -> ImageNode:
    return ImageNode(src=f"https://img.example/{colour}.png", alt=f"a {colour} square", image_id=IDS[colour], width=64, height=48)


def doc(doc_id: str, *colours: str) -> Document:
    nodes = [TextNode(f"Squares in {' and '.join(colours)}.")] + [image(c) for c in colours]
    return Document(doc_id=doc_id, url=f"https://site.example/{doc_id}", provenance=Provenance("t.warc.gz", doc_id), nodes=tuple(nodes))


def rows():
    return [ImageRow(IDS[c], (f"https://img.example/{c}.png",), STATUS_OK, bytes=data) for c, data in PAYLOADS.items()]


# -- scorers --------------------------------------------------------------------------


def test_shipped_prompt_set_is_versioned_and_balanced_towards_safe():
    shipped = load_prompts("nsfw_prompts_v1.txt")
    assert shipped.version == "1"
    assert 0 < shipped.nsfw_mask.sum() < (~shipped.nsfw_mask).sum()
    with pytest.raises(ValueError, match="version"):
        nsfw.parse_prompts("nsfw\tx\n")
    with pytest.raises(ValueError, match="line 2"):
        nsfw.parse_prompts("version: 1\nunsafe\tx\n")


def test_zero_shot_is_the_nsfw_probability_mass():
    prompts = np.eye(3, dtype=np.float32)
    images = np.array([[1, 0, 0], [0, 1, 0], [0.6, 0.8, 0]], dtype=np.float32)
    scores = nsfw.zero_shot_scores(images, prompts, np.array([True, False, False]), logit_scale=10.0)
    e = np.exp
    assert scores == pytest.approx([e(10) / (e(10) + 2), 1 / (e(10) + 2), e(6) / (e(6) + e(8) + 1)], rel=1e-5)


def test_head_in_the_laion_detector_format(tmp_path):
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1), torch.nn.Sigmoid())
    mean, variance = torch.rand(4), torch.rand(4) + 0.5
    state = {
        "norm.mean": mean,
        "norm.variance": variance,
        "linear_1.weight": net[0].weight.data,
        "linear_1.bias": net[0].bias.data,
        "linear_2.weight": net[2].weight.data,
        "linear_2.bias": net[2].bias.data,
    }
    path = tmp_path / "head.pth"
    torch.save(state, path)
    head = load_head(str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    x = torch.rand(5, 4)
    expected = net((x - mean) / variance.sqrt())[:, 0].detach().numpy()
    assert head.scores(x.numpy()) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="head_sha256"):
        load_head(str(path), "0" * 64)
    with pytest.raises(ValueError, match="expects 4-dimensional"):
        head.scores(np.zeros((1, 16), dtype=np.float32))


def test_verdicts():
    assert nsfw.image_verdict(0.7, threshold=0.5).reason == reasons.IMAGE_NSFW
    assert nsfw.image_verdict(0.5, threshold=0.5).keep
    assert nsfw.document_verdict(1, min_images=1).reason == reasons.SAFETY_NSFW_IMAGES
    assert nsfw.document_verdict(3, min_images=0).keep


# -- the stage -------------------------------------------------------------------------


def run_stage(config, docs):
    p = TestPipeline()
    result = p | beam.Create(docs) | ScoreImageText(config, p | "ImageRows" >> beam.Create(rows()), loader=lambda c: ColourEncoder())
    return p, result


def test_nsfw_images_reject_the_document_by_default(prompts):
    config = ScoringConfig(image_min_similarity=-1.0, nsfw={"prompts": prompts})
    p, result = run_stage(config, [doc("mixed", "red", "green"), doc("safe", "green", "blue")])
    assert_that(result.kept | "Kept" >> beam.Map(lambda d: d.doc_id), equal_to(["safe"]), label="kept")
    assert_that(
        result.rejected | "Rows" >> beam.Map(lambda r: (r.subject, r.doc_id, r.reason)),
        equal_to([("image", IDS["red"], reasons.IMAGE_NSFW), ("page", "mixed", reasons.SAFETY_NSFW_IMAGES)]),
        label="rejected",
    )
    assert_that(
        result.kept | "Signals" >> beam.Map(lambda d: (d.signals[nsfw.NSFW_IMAGES], d.signals[nsfw.NSFW_MAX] < 0.01)),
        equal_to([(0.0, True)]),
        label="signals",
    )
    p.run().wait_until_finish()


def test_nsfw_images_are_dropped_and_the_document_kept_when_asked(prompts):
    config = ScoringConfig(image_min_similarity=-1.0, nsfw={"prompts": prompts, "reject_document_min_images": 0})
    p, result = run_stage(config, [doc("mixed", "red", "green")])
    assert_that(
        result.kept
        | beam.Map(
            lambda d: (
                [n.src.rsplit("/", 1)[1] for n in d.image_nodes],
                d.signals[nsfw.NSFW_IMAGES],
                d.signals[nsfw.image_signal(0)] > 0.99,
                d.signals[nsfw.image_signal(1)] < 0.01,
                d.signals["clip.images_removed"],
            )
        ),
        equal_to([(["green.png"], 1.0, True, True, 0.0)]),
    )
    assert_that(result.rejected | "Reasons" >> beam.Map(lambda r: r.reason), equal_to([reasons.IMAGE_NSFW]), label="rows")
    p.run().wait_until_finish()


def test_nsfw_off_scores_nothing(prompts):
    config = ScoringConfig(image_min_similarity=-1.0, nsfw={"enabled": False, "prompts": prompts})
    p, result = run_stage(config, [doc("mixed", "red", "green")])
    assert_that(result.kept | beam.Map(lambda d: sorted(k for k in d.signals if k.startswith("nsfw"))), equal_to([[]]))
    p.run().wait_until_finish()


def test_recycled_pairs_get_the_same_check():
    pair = Pair(url="https://img.example/red.png", caption="a red square", caption_source="alt", doc_id="d", doc_url="u", provenance=Provenance("t"))
    fn = ThresholdPairsFn(0.1, nsfw_threshold=0.5)
    out = list(fn.process((PAIR, pair, 0.9, "", 0.97)))
    assert [(o.value[0], o.value[1].reason, o.value[1].value) for o in out] == [(pair, reasons.IMAGE_NSFW, pytest.approx(0.97))]
    kept = list(fn.process((PAIR, pair, 0.9, "", 0.02)))
    assert [k.similarity for k in kept] == [0.9]
    assert [k.similarity for k in ThresholdPairsFn(0.1).process((PAIR, pair, 0.9, "", 0.97))] == [0.9]  # nsfw off


# -- the real loading path -----------------------------------------------------------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    config_path, checkpoint, digest = save_tiny_clip(tmp_path_factory.mktemp("clip"), "mmcurate-tiny-nsfw", seed=1)
    return ScoringConfig(architecture="mmcurate-tiny-nsfw", architecture_config=config_path, checkpoint=checkpoint, checkpoint_sha256=digest)


def test_tiny_open_clip_scores_images_through_the_model_handler(tiny):
    handler = ClipModelHandler(tiny)
    model = handler.load_model()
    assert isinstance(model, NsfwClipEncoder)
    assert model.prompt_vectors.shape == (len(load_prompts("nsfw_prompts_v1.txt").texts), 16)
    out = list(handler.run_inference([(IMAGE, IDS["red"], PAYLOADS["red"]), (IMAGE, "junk", b"junk")], model))
    (_, red_id, vector, error, score), (_, _, none, junk_error, no_score) = out
    assert red_id == IDS["red"] and error == "" and vector.shape == (16,)
    assert 0.0 <= score <= 1.0
    # The same score as the zero-shot formula on the same embedding.
    shipped = load_prompts("nsfw_prompts_v1.txt")
    clip = load_clip(tiny)
    expected = nsfw.zero_shot_scores(vector[None], clip.encode_texts(list(shipped.texts)), shipped.nsfw_mask, 100.0)[0]
    assert score == pytest.approx(float(expected), abs=1e-5)
    assert none is None and junk_error and no_score is None
    off = ClipModelHandler(ScoringConfig(**{**tiny.model_dump(), "nsfw": {"enabled": False}}))
    assert not isinstance(off.load_model(), NsfwClipEncoder)


# -- end to end: the CLI with the tiny model and a head that flags every image ------


def test_cli_run_with_scoring_drops_nsfw_images_and_says_so_in_the_manifest(tmp_path):
    import pyarrow.dataset as ds
    import torch

    from imagegen import jpeg
    from mmcurate.pipeline.cli import main
    from mmcurate.schemas import make_doc_id
    from warcbuild import WarcBuilder

    config_path, checkpoint, _ = save_tiny_clip(tmp_path, "mmcurate-tiny-e2e", seed=2)
    # A head on the tiny model's 16-dimensional embedding whose sigmoid is ~1 for any image.
    head = tmp_path / "all_nsfw.pth"
    torch.save({"linear_1.weight": torch.zeros(1, 16), "linear_1.bias": torch.tensor([8.0])}, head)
    first = (
        "The harbour at the end of the valley was built in the eighteenth century, when the town still traded salt "
        "and timber with the cities along the coast, and its stone quays have outlived every ship that used them."
    )
    second = (
        "Fishing boats leave before dawn and return in the early afternoon, and the market on the quay sells what "
        "they bring back until the last crates are empty. Visitors who walk up the old road can see the whole bay."
    )
    html = (
        f"<!doctype html><html><head><title>Harbour</title></head><body><article><h1>The harbour</h1><p>{first}</p>"
        '<figure><img src="/img/a.jpg" alt="The harbour in spring" width="320" height="240"></figure>'
        f"<p>{second}</p></article></body></html>"
    )
    with WarcBuilder.open(tmp_path / "in.warc.gz") as warc:
        record = warc.html("https://news.example.org/harbour", html)
        warc.image("https://news.example.org/img/a.jpg", jpeg(3))
    out = tmp_path / "out"
    code = main(
        [
            "run", str(tmp_path / "in.warc.gz"), "--output", str(out), "--quiet",
            "--stages", "heuristics,images,scoring",
            "--set", "scoring.architecture=mmcurate-tiny-e2e",
            "--set", f"scoring.architecture_config={config_path}",
            "--set", f"scoring.checkpoint={checkpoint}",
            "--set", f"scoring.nsfw.head={head}",
        ]
    )
    assert code == 0
    rows = ds.dataset(out / "decisions", format="parquet").to_table().to_pylist()
    assert {(r["subject"], r["stage"], r["reason"]) for r in rows} == {
        ("image", "scoring", reasons.IMAGE_NSFW),
        ("page", "scoring", reasons.SAFETY_NSFW_IMAGES),
    }
    page = [r for r in rows if r["subject"] == "page"][0]
    assert page["doc_id"] == make_doc_id(record)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["safety"]["nsfw"]["method"] == f"head {head}"
    assert (manifest["safety"]["nsfw"]["images_dropped"], manifest["safety"]["nsfw"]["documents_rejected"]) == (1, 1)
    assert manifest["totals"]["conserved"] and manifest["counter_mismatches"] == []
