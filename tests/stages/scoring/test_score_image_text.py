"""Stage `scoring`: CLIP similarity through RunInference, with a fake encoder for
the stage logic and a tiny real open_clip model saved and loaded through the same
code users run (architecture name + checkpoint path, sha256 checked)."""

from __future__ import annotations

import hashlib
import io

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image

from mmcurate.filters import clip as rules
from mmcurate.filters import reasons
from mmcurate.pipeline.config import ConfigError, ScoringConfig, load_config
from mmcurate.schemas import Document, ImageNode, Provenance, TextNode
from mmcurate.schemas.rows import STATUS_FAILED, STATUS_OK, ImageRow
from mmcurate.stages.engines import image_text_scores as scoring
from mmcurate.stages.engines.clip_encoder import ChecksumError, ClipEncoder, load_clip
from mmcurate.stages.scoring.score_image_text import ScoreImageText
from tinyclip import ColourEncoder, save_tiny_clip

COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255)}


def png(colour: str, size=(64, 48)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, COLOURS[colour]).save(buffer, format="PNG")
    return buffer.getvalue()


PAYLOADS = {colour: png(colour) for colour in COLOURS}
IDS = {colour: hashlib.sha256(data).hexdigest() for colour, data in PAYLOADS.items()}


def fake_loader(config):
    return ColourEncoder()


def image(colour: str, alt: str = "", caption: str = "") -> ImageNode:
    return ImageNode(src=f"https://img.example/{colour}.png", alt=alt, caption=caption, image_id=IDS[colour], width=64, height=48)


def doc(doc_id: str, *nodes) -> Document:
    return Document(doc_id=doc_id, url=f"https://site.example/{doc_id}", provenance=Provenance("t.warc.gz", doc_id), nodes=tuple(nodes))


def rows():
    return [ImageRow(IDS[c], (f"https://img.example/{c}.png",), STATUS_OK, bytes=data) for c, data in PAYLOADS.items()] + [
        ImageRow(None, ("https://img.example/gone.png",), STATUS_FAILED, reason="image.not_captured")
    ]


DOCS = [
    # Caption and neighbours agree with the image: kept, clip_score 1.
    doc("good", TextNode("A barn by the road."), image("red", alt="a red barn"), TextNode("The field behind it.")),
    # The blue image matches none of its texts: removed, the document stays.
    doc("mixed", image("red", alt="red apples"), TextNode("Fruit on a table."), image("blue", alt="a kitchen")),
    # Its only image matches nothing: no image left.
    doc("bad", TextNode("Nothing to see."), image("green", alt="sky at dusk")),
    # No retrieved image at all: passes unscored.
    doc("text", TextNode("Only words here.")),
]


def test_scoring_with_a_fake_encoder():
    # NSFW scores add their own signals: tests/stages/test_nsfw.py checks them.
    config = ScoringConfig(image_min_similarity=0.15, nsfw={"enabled": False})
    p = TestPipeline()
    result = p | beam.Create(DOCS) | ScoreImageText(config, p | "Rows" >> beam.Create(rows()), loader=fake_loader)
    assert_that(
        result.kept
        | "Kept" >> beam.Map(lambda d: (d.doc_id, tuple((n.src.rsplit("/", 1)[1], n.clip_score) for n in d.image_nodes))),
        equal_to([("good", (("red.png", pytest.approx(1.0)),)), ("mixed", (("red.png", pytest.approx(1.0)),)), ("text", ())]),
        label="kept",
    )
    assert_that(
        result.kept
        | "Signals" >> beam.Filter(lambda d: d.doc_id == "mixed")
        | beam.Map(lambda d: {k: round(v, 3) for k, v in d.signals.items()}),
        equal_to(
            [
                {
                    "clip.image.0.caption": 1.0,
                    "clip.image.0.after": 0.0,
                    "clip.image.0.best": 1.0,
                    "clip.image.1.caption": 0.0,
                    "clip.image.1.before": 0.0,
                    "clip.image.1.best": 0.0,
                    rules.CLIP_IMAGES: 2.0,
                    rules.CLIP_MEAN: 0.5,
                    rules.CLIP_MIN: 0.0,
                    rules.CLIP_MAX: 1.0,
                    rules.CLIP_SHARE_ABOVE: 0.5,
                    rules.CLIP_REMOVED: 1.0,
                }
            ]
        ),
        label="signals",
    )
    assert_that(
        result.rejected | beam.Map(lambda r: (r.subject, r.doc_id, r.reason, r.detail)),
        equal_to(
            [
                ("image", IDS["blue"], reasons.CLIP_IMAGE_LOW_SIMILARITY, "document mixed"),
                ("image", IDS["green"], reasons.CLIP_IMAGE_LOW_SIMILARITY, "document bad"),
                ("page", "bad", reasons.CLIP_NO_IMAGES_LEFT, "1 removed"),
            ]
        ),
        label="rejected",
    )
    assert_that(result.errors, equal_to([]), label="errors")
    p.run().wait_until_finish()


def test_undecodable_bytes_are_an_image_error_row_and_the_image_stays_unscored():
    broken = b"\x89PNG\r\n\x1a\n not really"
    broken_id = hashlib.sha256(broken).hexdigest()
    d = doc("d", TextNode("red things"), ImageNode(src="https://img.example/x.png", alt="red", image_id=broken_id))
    p = TestPipeline()
    result = p | beam.Create([d]) | ScoreImageText(
        ScoringConfig(), p | "Rows" >> beam.Create([ImageRow(broken_id, ("https://img.example/x.png",), STATUS_OK, bytes=broken)]), loader=fake_loader
    )
    assert_that(result.kept | beam.Map(lambda d: (d.doc_id, d.image_nodes[0].clip_score)), equal_to([("d", None)]), label="kept")
    assert_that(result.errors | beam.Map(lambda r: (r.subject, r.doc_id, r.kind)), equal_to([("image", broken_id, "error")]), label="errors")
    p.run().wait_until_finish()


def test_mmc4_assignment_moves_each_image_after_its_sentence():
    d = doc(
        "assign",
        TextNode("A blue door. Some words."),
        TextNode("Then a red roof."),
        image("red", alt="x"),
        image("blue", alt="y"),
    )
    texts = scoring.scoring_texts(d, assign=True)
    encoder = ColourEncoder()
    vectors, _ = encoder.encode_images([PAYLOADS["red"], PAYLOADS["blue"]])
    scored, removed, n = scoring.score_document(
        d, {IDS["red"]: vectors[0], IDS["blue"]: vectors[1]}, texts, encoder.encode_texts(texts),
        ScoringConfig(image_min_similarity=0.0, assign_images=True),
    )
    order = [n.text if isinstance(n, TextNode) else n.src.rsplit("/", 1)[1] for n in scored.nodes]
    assert order == ["A blue door. Some words.", "blue.png", "Then a red roof.", "red.png"]
    assert scored.signals["clip.image.0.sentence"] == 2.0 and scored.signals["clip.image.1.sentence"] == 0.0
    assert removed == [] and n == 2


@pytest.mark.parametrize(
    "signals, expected",
    [
        ({rules.CLIP_MEAN: 0.1, rules.CLIP_SHARE_ABOVE: 1.0}, reasons.CLIP_LOW_MEAN_SIMILARITY),
        ({rules.CLIP_MEAN: 0.3, rules.CLIP_SHARE_ABOVE: 0.2}, reasons.CLIP_LOW_SHARE_ABOVE),
        ({rules.CLIP_MEAN: 0.3, rules.CLIP_SHARE_ABOVE: 0.6}, ""),
    ],
)
def test_document_rules_on_aggregates(signals, expected):
    d = doc("x", TextNode("t"), image("red")).with_signals(signals)
    verdict = rules.document_rules(d, min_mean=0.2, min_share_above=0.5, no_images="reject", had_images=True)
    assert verdict.reason == expected


def test_aggregates_and_image_and_pair_verdicts():
    assert rules.aggregates([0.1, 0.3, 0.5], share_threshold=0.28) == pytest.approx(
        {rules.CLIP_IMAGES: 3, rules.CLIP_MEAN: 0.3, rules.CLIP_MIN: 0.1, rules.CLIP_MAX: 0.5, rules.CLIP_SHARE_ABOVE: 2 / 3}
    )
    assert rules.image_verdict(0.1, min_similarity=0.15).reason == reasons.CLIP_IMAGE_LOW_SIMILARITY
    assert rules.image_verdict(None, min_similarity=0.15).keep
    assert rules.pair_verdict(0.2, min_similarity=0.28).reason == reasons.CLIP_PAIR_LOW_SIMILARITY


# -- the real loading path, with a tiny open_clip model -------------------------------

@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A tiny open_clip model (a custom config, ~1 MB of weights) saved to disk."""
    return save_tiny_clip(tmp_path_factory.mktemp("clip"), "mmcurate-tiny")


def tiny_config(tiny_checkpoint, **extra) -> ScoringConfig:
    config_path, checkpoint, digest = tiny_checkpoint
    return ScoringConfig(architecture="mmcurate-tiny", architecture_config=config_path, checkpoint=checkpoint, checkpoint_sha256=digest, **extra)


def test_tiny_model_loads_from_its_checkpoint_and_encodes(tiny_checkpoint):
    encoder = load_clip(tiny_config(tiny_checkpoint, batch_size=2))
    assert isinstance(encoder, ClipEncoder)
    vectors, errors = encoder.encode_images([PAYLOADS["red"], b"junk", PAYLOADS["blue"]])
    assert vectors.shape == (2, 16) and errors[0] == errors[2] == "" and errors[1].startswith("UnidentifiedImageError")
    texts = encoder.encode_texts(["a red barn", "a blue door", "x" * 1000])
    assert texts.shape == (3, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3) and np.allclose(np.linalg.norm(texts, axis=1), 1, atol=1e-3)
    # Same weights, same numbers: the checkpoint (not a random init) decides.
    again = load_clip(tiny_config(tiny_checkpoint)).encode_texts(["a red barn"])
    assert np.allclose(again[0], texts[0], atol=1e-5)


def test_checkpoint_checks_name_the_key(tiny_checkpoint, tmp_path):
    config_path, checkpoint, _ = tiny_checkpoint
    with pytest.raises(ChecksumError, match="scoring.checkpoint_sha256"):
        load_clip(ScoringConfig(architecture="mmcurate-tiny", architecture_config=config_path, checkpoint=checkpoint, checkpoint_sha256="0" * 64))
    with pytest.raises(FileNotFoundError, match="scoring.checkpoint"):
        ScoreImageText(ScoringConfig(checkpoint=str(tmp_path / "missing.pt")))
    with pytest.raises(ConfigError, match="scoring.architecture"):
        load_config(overrides=["scoring.architecture=hf-hub:laion/CLIP-ViT-B-32"])
    with pytest.raises(ConfigError, match="needs stage 'images'"):
        load_config(overrides=["run.stages=heuristics,scoring"])


def test_stage_with_the_tiny_model_fills_clip_scores(tiny_checkpoint):
    config = tiny_config(tiny_checkpoint, image_min_similarity=-1.0)
    p = TestPipeline()
    result = p | beam.Create(DOCS[:2]) | ScoreImageText(config, p | "Rows" >> beam.Create(rows()))
    assert_that(
        result.kept | beam.Map(lambda d: (d.doc_id, [n.clip_score is not None and -1 <= n.clip_score <= 1 for n in d.image_nodes])),
        equal_to([("good", [True]), ("mixed", [True, True])]),
    )
    assert_that(result.rejected, equal_to([]), label="rejected")
    p.run().wait_until_finish()


def test_cuda_asks_for_an_accelerator_on_the_model_transform_only():
    cpu = ScoreImageText(ScoringConfig(), loader=fake_loader)
    assert cpu.accelerator == ""
    gpu = ScoreImageText(ScoringConfig(device="cuda"), loader=fake_loader, accelerator="type:nvidia-l4;count:1;install-nvidia-driver")
    hints = gpu.model_transform().get_resource_hints()
    assert list(hints.values()) == [b"type:nvidia-l4;count:1;install-nvidia-driver"]


def test_dataflow_gpu_hint_lands_on_the_scoring_model_transform_only(tiny_checkpoint, tmp_path):
    from apache_beam.options.pipeline_options import PipelineOptions

    from mmcurate.pipeline.build import build_pipeline
    from mmcurate.runners.presets import preset_args

    flags = preset_args("dataflow", {"project": "p", "region": "r", "temp_location": "gs://b/t", "gpu": "nvidia-l4"})
    accelerator = [f for f in flags if f.startswith("--scoring_accelerator=")]
    config_path, checkpoint, digest = tiny_checkpoint
    config = load_config(
        overrides=[
            "run.stages=heuristics,images,scoring,recycle",
            "scoring.architecture=mmcurate-tiny",
            f"scoring.architecture_config={config_path}",
            f"scoring.checkpoint={checkpoint}",
            "scoring.device=cuda",
        ]
    )
    p = beam.Pipeline(options=PipelineOptions(accelerator))
    build_pipeline(p, ["unused.warc"], str(tmp_path), config)

    def walk(node):
        yield node
        for part in node.parts:
            yield from walk(part)

    hinted = {n.full_label: n.resource_hints for n in walk(p._root_transform()) if n.resource_hints}
    assert hinted and all(label.startswith(("Scoring/Embed", "Recycle/Clip")) for label in hinted)
    assert {v for hints in hinted.values() for v in hints.values()} == {b"type:nvidia-l4;count:1;install-nvidia-driver"}
