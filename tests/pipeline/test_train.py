import dataclasses
import json
import random

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from docfactory import make_doc
from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.config import QualityConfig
from mmcurate.filters.quality import positive_probabilities
from mmcurate.pipeline.train import gather_examples, parser, roc_auc, train_fasttext
from mmcurate.pipeline.train_examples import balance, load_examples, read_texts, split_examples, wmt_examples, wmt_files
from mmcurate.stages.engines.text_classifiers import model_paths
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


def _wmt_tree(root, lines: int = 400):
    """A WMT txt/ folder of two years, into and out of English: people write the
    references and sources in one style, the two systems in another, on shared topics."""
    rng = random.Random(13)
    topic = "harbour council bridge railway museum salt ships festival library market".split()
    human = ["that", "whose", ";", "however"]
    machine = ["which", "which", ",", "also"]

    def line(style):
        words = [rng.choice(topic if rng.random() < 0.5 else COMMON) for _ in range(rng.randint(8, 16))]
        for _ in range(2):
            words.insert(rng.randint(1, len(words) - 1), rng.choice(style))
        return " ".join(words) + "."

    files = {
        "sources/generaltest2023.de-en.src.de": human,
        "references/generaltest2023.de-en.ref.refA.en": human,
        "system-outputs/generaltest2023.de-en.hyp.SYS-1.en": machine,
        "system-outputs/generaltest2023.de-en.hyp.GPT4-5shot.en": machine,
        "sources/newstest2021.en-de.src.en": human,
        "references/newstest2021.en-de.ref.A.de": human,
        "system-outputs/newstest2021.en-de.hyp.SYS_2.de": machine,
        "references/newstest2021.en-de.ref.B.de": machine,  # excluded below
        "README.md": human,
    }
    for name, style in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(line(style) for _ in range(lines)) + "\n", encoding="utf-8")
    return root


def test_wmt_layout_of_any_year_into_and_out_of_english(tmp_path):
    root = _wmt_tree(tmp_path / "txt")
    files = wmt_files([root], exclude=["*.ref.B.de"])
    assert sorted((f.year, f.pair, f.kind, f.name, f.language, f.source) for f in files) == [
        (2021, "en-de", "hyp", "SYS_2", "de", "en"),
        (2021, "en-de", "ref", "A", "de", "en"),
        (2021, "en-de", "src", "", "en", ""),
        (2023, "de-en", "hyp", "GPT4-5shot", "en", "de"),
        (2023, "de-en", "hyp", "SYS-1", "en", "de"),
        (2023, "de-en", "ref", "refA", "en", "de"),
        (2023, "de-en", "src", "", "de", ""),
    ]
    english = wmt_examples(files, "en", 10)
    # into English: two systems (positive) against the reference and the original English of en-de
    assert sum(e.label for e in english) == 80 and len(english) == 160
    assert {(e.system, e.source, e.year) for e in english if not e.label} == {("refA", "de", 2023), ("src", "", 2021)}
    german = wmt_examples(files, "de", 10)
    assert {(e.label, e.system) for e in german} == {(1, "SYS_2"), (0, "A"), (0, "src")}
    # the same block of aligned files shares a group, so it lands on one side of a split
    assert len({e.group for e in english if e.year == 2023}) == 40


def test_train_mt_from_wmt_folders_then_the_stage_scores_with_it(tmp_path, capsys):
    root = _wmt_tree(tmp_path / "txt")
    model_path = tmp_path / "models" / "de.npz"
    rc = main(["train", "mt", "--wmt", str(root), "--language", "de", "--wmt-exclude", "*.ref.B.de",
               "--output", str(model_path)])
    assert rc == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "kind mt" in out and "ROC AUC 1.000" in out
    from mmcurate.stages.quality import FastTextModelHandler

    config = QualityConfig(mt={"model_dir": str(model_path.parent)}, llm={"enabled": False})
    handler = FastTextModelHandler(model_paths(config), batch_size=4)
    models = handler.load_model()
    rng = random.Random(1)
    docs = [
        dataclasses.replace(make_doc("human", " ".join(["the harbour that council ; however bridge."] * 10)), language="de"),
        dataclasses.replace(make_doc("machine", " ".join(["the harbour which council , also bridge."] * 10)), language="de"),
        dataclasses.replace(make_doc("english", _doc_text(rng, GOOD)), language="en"),
    ]
    scores = {d.doc_id: d.signals.get("mt_score") for d in handler.run_inference(docs, models)}
    assert scores["machine"] > 0.8 > 0.2 > scores["human"] and scores["english"] is None


def test_wmt_needs_a_language_and_kind_mt(tmp_path, capsys):
    root = _wmt_tree(tmp_path / "txt", lines=20)
    assert main(["train", "mt", "--wmt", str(root), "-o", str(tmp_path / "m.npz")]) == 2
    assert "--wmt needs --language" in capsys.readouterr().err
    assert main(["train", "llm", "--wmt", str(root), "--language", "en", "-o", str(tmp_path / "m.bin")]) == 2
    assert "--wmt is for kind mt" in capsys.readouterr().err
    assert main(["train", "mt", "--wmt", str(root), "--language", "ja", "-o", str(tmp_path / "m.npz")]) == 2
    assert "no WMT files into or in 'ja'" in capsys.readouterr().err


def test_fasttext_on_realistic_sizes_is_seeded_and_repeatable(tmp_path):
    good, poor = _corpus(tmp_path, n=300)
    args = parser().parse_args(["quality", "--positive", str(good), "--negative", f"{poor}@body", "-o", "x"])
    examples = load_examples([str(good)], 1, 0) + load_examples([f"{poor}@body"], 0, 0)
    a, b = train_fasttext(examples, args), train_fasttext(examples, args)
    texts = [e.text for e in examples[:50]]
    assert positive_probabilities(a, texts) == positive_probabilities(b, texts)


def test_a_quantized_fasttext_model_is_written_once_so_a_rebuild_repeats_its_bytes(tmp_path):
    # `make models` must rebuild the shipped files byte for byte. A quantized model
    # keeps its n-grams in an index fastText writes in hash-table order, which a load
    # and a second save reorder; so the file `mmcurate train` writes must be the one
    # the training process saved, and a rerun must write the same bytes.
    good, poor = _corpus(tmp_path, n=300)
    argv = ["quality", "--positive", str(good), "--negative", f"{poor}@body", "--quantize", "1000", "--seed", "5"]
    for name in ("a.bin", "b.bin"):
        assert main(["train", *argv, "--output", str(tmp_path / name)]) == 0
    written = (tmp_path / "a.bin").read_bytes()
    assert written == (tmp_path / "b.bin").read_bytes()

    args = parser().parse_args([*argv, "--output", "unused"])
    train, _ = split_examples(gather_examples(args), args.test_fraction, args.seed)
    model = train_fasttext(balance(train, args.seed), args, tmp_path / "saved.bin")
    assert (tmp_path / "saved.bin").read_bytes() == written
    # the premise: saving the loaded model again reorders the index (fastText 0.9.2, the pin)
    model.save_model(str(tmp_path / "resaved.bin"))
    assert (tmp_path / "resaved.bin").read_bytes() != written
