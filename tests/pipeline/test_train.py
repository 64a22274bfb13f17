import json
import random

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import make_doc
from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import QualityConfig
from mmcurate.pipeline.train import load_examples, read_texts, roc_auc, split_examples
from mmcurate.stages.quality import ScoreQuality

COMMON = "the a of and to in is was for on with as by at from that this it".split()
GOOD = "museum harbour library history river architecture research garden century village bridge".split()
POOR = "cheap click casino bonus free winner deal viagra offer subscribe download".split()


def _doc_text(rng: random.Random, vocab: list[str], words: int = 60) -> str:
    return " ".join(rng.choice(vocab if rng.random() < 0.4 else COMMON) for _ in range(words)) + "."


def _corpus(tmp_path, n: int = 400):
    """Two seeded classes of blank-line separated documents, distinct by vocabulary."""
    rng = random.Random(7)
    good = tmp_path / "good.txt"
    poor = tmp_path / "poor.jsonl"
    good.write_text("\n\n".join(_doc_text(rng, GOOD) for _ in range(n)), encoding="utf-8")
    poor.write_text("\n".join(json.dumps({"body": _doc_text(rng, POOR)}) for _ in range(n)), encoding="utf-8")
    return good, poor


def test_train_end_to_end_then_the_stage_loads_the_model(tmp_path, capsys):
    good, poor = _corpus(tmp_path)
    model = tmp_path / "quality.bin"
    rc = main(["train", "quality", "--positive", str(good), "--negative", f"{poor}@body",
               "--output", str(model), "--epoch", "5", "--seed", "3"])
    assert rc == 0 and model.is_file()
    out = capsys.readouterr().out
    assert "held-out precision 1.000  recall 1.000  ROC AUC 1.000" in out

    rng = random.Random(11)
    docs = [make_doc("fine", _doc_text(rng, GOOD), images=1), make_doc("spam", _doc_text(rng, POOR), images=1)]
    config = QualityConfig(model_path=str(model), min_score=0.5, mt={"enabled": False}, llm={"enabled": False})
    p = TestPipeline()
    result = p | beam.Create(docs) | ScoreQuality(config)
    assert_that(result.kept | "Kept" >> beam.Map(lambda d: d.doc_id), equal_to(["fine"]), label="kept")
    assert_that(
        result.rejected | "Rows" >> beam.Map(lambda r: (r.doc_id, r.reason)),
        equal_to([("spam", reasons.QUALITY_LOW_SCORE)]),
        label="rejected",
    )
    p.run().wait_until_finish()


def test_missing_input_is_an_error_naming_it(tmp_path, capsys):
    rc = main(["train", "mt", "--positive", str(tmp_path / "none.txt"), "--negative", str(tmp_path / "x.txt"),
               "--output", str(tmp_path / "m.bin")])
    assert rc == 2 and "none.txt: no such file" in capsys.readouterr().err


def test_fast_detect_gpt_pairs_share_the_group_of_their_human_text(tmp_path):
    path = tmp_path / "xsum_gpt2-xl.raw_data.json"
    path.write_text(json.dumps({"original": ["Human one.", "Human two."], "sampled": ["Model one.", "Model two."]}))
    human = list(read_texts(f"{path}@original"))
    model = list(read_texts(f"{path}@sampled"))
    assert [g for _, g in human] == [g for _, g in model] and human[0][1] != human[1][1]


def test_aligned_line_blocks_land_on_one_side_of_the_split(tmp_path):
    ref, hyp = tmp_path / "test.de-en.ref.A.en", tmp_path / "test.de-en.hyp.SYS.en"
    ref.write_text("\n".join(f"reference sentence {i}" for i in range(200)))
    hyp.write_text("\n".join(f"system sentence {i}" for i in range(200)))
    examples = load_examples([str(hyp)], 1, 5) + load_examples([str(ref)], 0, 5)
    train, test = split_examples(examples, 0.3, seed=0)
    assert test and train
    assert not {e.group for e in train} & {e.group for e in test}
    assert len({e.group for e in examples}) == 40


def test_roc_auc_counts_ties_half():
    assert roc_auc([1, 0, 1, 0], [0.9, 0.1, 0.8, 0.2]) == 1.0
    assert roc_auc([1, 0], [0.5, 0.5]) == 0.5
