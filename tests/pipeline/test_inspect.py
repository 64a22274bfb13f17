"""`mmcurate inspect`: a document as text with image markers, decisions by reason,
DuckDB over the tables as views; and the README's claim that `datasets`, pandas and
Polars read the shards."""

from __future__ import annotations

import shutil

import pytest

from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main


def run(argv, capsys):
    code = main(["inspect", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_doc_prints_interleaved_text_with_image_markers(report_run, capsys):
    out, ids = report_run
    code, text, _ = run([out, "--doc", ids["harbour"]], capsys)
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == f"doc_id    {ids['harbour']}"
    assert "url       https://news.example.org/harbour" in lines
    blocks = [b.replace("\n", " ") for b in text.split("\n\n")]
    body = blocks[blocks.index("# The harbour") :]
    assert body[1].startswith("The harbour at the end of the valley")
    assert body[2].startswith("[image 1: https://news.example.org/img/harbour.jpg 320x240 sha256=")
    assert body[2].endswith('alt="The harbour in spring" caption="The harbour, photographed in spring."]')
    assert body[3].startswith("Fishing boats leave before dawn")
    # the second image was not in the WARC: the images stage removed it
    assert "harbour-missing.jpg" not in text


def test_doc_of_a_rejected_page_prints_its_decisions(report_run, capsys):
    out, ids = report_run
    code, text, _ = run([out, "--doc", ids["copy"]], capsys)
    assert code == 0
    assert "not kept; decisions:" in text
    row = text.splitlines()[-2].split()
    assert row == ["page", "dedup", "rejected", reasons.DEDUP_EXACT_TEXT, "1", "1", f"survivor={ids['harbour']}"]
    assert run([out, "--doc", "0" * 32], capsys)[0] == 1


def test_reason_lists_its_decision_rows(report_run, capsys):
    out, ids = report_run
    code, text, _ = run([out, "--reason", reasons.CONTENT_TOO_FEW_WORDS], capsys)
    assert code == 0
    assert text.splitlines()[0] == f"{reasons.CONTENT_TOO_FEW_WORDS}: 1 decision row"
    assert ids["short"] in text and "https://news.example.org/short" in text
    code, _, err = run([out, "--reason", "no.such_reason"], capsys)
    assert code == 1 and "no decision with reason no.such_reason" in err


def test_sql_over_the_views(report_run, capsys):
    out, ids = report_run
    code, text, _ = run(
        [out, "--sql", "SELECT d.reason, count(*) AS n FROM decisions d GROUP BY 1 ORDER BY 1"], capsys
    )
    assert code == 0
    rows = [l.split() for l in text.splitlines()[2:-1]]
    assert rows == [
        [reasons.CONTENT_TOO_FEW_WORDS, "1"],
        [reasons.DEDUP_EXACT_TEXT, "1"],
        [reasons.HTTP_STATUS_NOT_OK, "1"],
        [reasons.IMAGE_NOT_CAPTURED, "2"],
    ]
    code, text, _ = run(
        [
            out,
            "--sql",
            "SELECT d.doc_id, i.status FROM documents d, unnest(d.image_meta) AS u(m) "
            "JOIN images i ON i.image_id = m.image_id ORDER BY 1",
        ],
        capsys,
    )
    assert code == 0 and sorted(l.split()[0] for l in text.splitlines()[2:-1]) == sorted([ids["harbour"], ids["orchard"]])
    code, text, _ = run([out, "--sql", "SELECT * FROM pairs"], capsys)
    assert code == 0 and text.splitlines()[-1] == "(0 rows)"  # the recycle stage did not run
    code, _, err = run([out, "--sql", "SELECT * FROM no_such_table"], capsys)
    assert code == 1 and "no_such_table" in err


def test_summary_and_not_a_run(report_run, tmp_path, capsys):
    out, _ = report_run
    code, text, _ = run([out], capsys)
    assert code == 0
    assert "pages 5 = kept 2 + rejected 3 + errors 0" in text
    assert "views: documents (2 rows), decisions (5 rows), images (4 rows), pairs (0 rows)" in text
    assert run([tmp_path], capsys)[0] == 2


def test_an_empty_table_directory_is_an_empty_view(report_run, tmp_path, capsys):
    out, _ = report_run
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    for f in (copy / "documents").iterdir():
        f.unlink()
    code, text, _ = run([copy, "--sql", "SELECT count(*) AS n FROM documents"], capsys)
    assert code == 0 and text.splitlines()[2] == "0"


def test_readme_readers_load_the_documents(report_run, tmp_path):
    """README "Looking at the output": datasets, pandas and Polars read the shards;
    signals (list<struct<key, value>>) come back as lists of {key, value}."""
    out, ids = report_run
    pattern = str(out / "documents" / "*.parquet")
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset("parquet", data_files=pattern, split="train", cache_dir=str(tmp_path / "hf"))
    assert sorted(ds["doc_id"]) == sorted([ids["harbour"], ids["orchard"]])
    row = ds[0]
    assert len(row["texts"]) == len(row["images"]) and all((t is None) != (i is None) for t, i in zip(row["texts"], row["images"]))
    assert {"key": "content.word_count", "value": row_value(row, "content.word_count")} in row["signals"]

    pd = pytest.importorskip("pandas")
    frame = pd.read_parquet(out / "documents")
    frame["words"] = frame["signals"].map(lambda s: {e["key"]: e["value"] for e in s}["content.word_count"])
    assert sorted(frame["doc_id"]) == sorted(ds["doc_id"]) and (frame["words"] >= 50).all()

    pl = pytest.importorskip("polars")
    lf = pl.scan_parquet(pattern).select(
        "doc_id",
        pl.col("signals").list.eval(pl.element().filter(pl.element().struct.field("key") == "content.word_count").struct.field("value")).list.first().alias("words"),
    )
    assert sorted(lf.collect()["doc_id"].to_list()) == sorted(ds["doc_id"])


def row_value(row, key):
    return next(e["value"] for e in row["signals"] if e["key"] == key)
