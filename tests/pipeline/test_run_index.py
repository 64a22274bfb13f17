"""Range reads: a CC-index style table of (warc_filename, warc_record_offset,
warc_record_length) in, exactly those records read, the same decisions out."""

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mmcurate.pipeline.cli import main
from mmcurate.stages.engines.warc.index_pointers import warc_path

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "demo.warc.gz"


def outcome(out: Path):
    kept = sorted(pq.read_table(out / "documents").column("doc_id").to_pylist())
    rows = sorted(
        (r["doc_id"], r["stage"], r["kind"], r["reason"], r["warc_offset"])
        for r in pq.read_table(out / "decisions").to_pylist()
    )
    return kept, rows, json.loads((out / "manifest.json").read_text())


@pytest.fixture(scope="module")
def whole(demo_run):
    """The whole file read (the session's run, tests/conftest.py), and the pointers
    of every page it held."""
    out = demo_run.output
    columns = ["doc_id", "warc_file", "warc_offset", "warc_length"]
    rows = pq.read_table(out / "documents", columns=columns).to_pylist()
    rows += pq.read_table(out / "decisions", columns=columns).to_pylist()
    pointers = sorted({(r["warc_file"], r["warc_offset"], r["warc_length"]) for r in rows}, key=lambda p: p[1])
    return outcome(out), pointers


def write_parquet(path: Path, pointers) -> None:
    names, offsets, lengths = zip(*pointers)
    pq.write_table(
        pa.table({"warc_filename": list(names), "warc_record_offset": list(offsets), "warc_record_length": list(lengths)}),
        path,
    )


def test_every_page_by_range_reads_gives_the_same_output(whole, tmp_path):
    (want_kept, want_rows, want), pointers = whole
    index = tmp_path / "pointers.parquet"
    write_parquet(index, pointers + pointers[:3])  # a pointer listed twice is read once
    out = tmp_path / "out"
    assert main(["run", "--index", str(index), "-o", str(out), "--runner-preset", "direct", "--quiet"]) == 0
    kept, rows, manifest = outcome(out)
    assert kept == want_kept and len(kept) > 0
    assert rows == want_rows  # offsets included: the same records, found by range
    assert manifest["totals"] == want["totals"]
    assert manifest["stages"]["read"]["rejected_by_reason"] == want["stages"]["read"]["rejected_by_reason"]
    # Only the pointed-at records were read: no request, metadata or warcinfo records.
    assert manifest["records"]["by_type"] == {"response": len(pointers)}
    assert manifest["index"]["bytes_pointed_at"] == sum(p[2] for p in pointers) + sum(p[2] for p in pointers[:3])


def test_a_subset_from_csv_with_a_prefix_and_bad_pointers(whole, tmp_path):
    (want_kept, want_rows, want), pointers = whole
    subset = pointers[::2]
    index = tmp_path / "pointers.csv"
    with open(index, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["url", "warc_filename", "warc_record_offset", "warc_record_length"])
        for path, offset, length in subset:
            writer.writerow(["http://x/", Path(path).name, offset, length])
        writer.writerow(["http://x/", DEMO.name, 0, 0])  # not a range
        writer.writerow(["http://x/", DEMO.name, DEMO.stat().st_size - 10, 500])  # past the end
    out = tmp_path / "out"
    args = ["run", "--index", str(index), "--warc-prefix", str(DEMO.parent), "-o", str(out), "--quiet"]
    assert main(args + ["--runner-preset", "direct"]) == 0
    kept, rows, manifest = outcome(out)
    offsets = {offset for _, offset, _ in subset}
    assert set(kept) <= set(want_kept)
    assert [r for r in rows if r[2] == "rejected"] == [r for r in want_rows if r[4] in offsets and r[2] == "rejected"]
    errors = sorted((r[1], r[3]) for r in rows if r[2] == "error")
    assert errors == [("read", "InvalidPointer"), ("read", "ShortRange")]
    assert manifest["totals"]["pages"] == len(subset) + 2 and manifest["totals"]["conserved"]


def test_an_index_without_the_pointer_columns_fails_before_running(tmp_path, capsys):
    index = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"url": ["http://x/"], "warc_filename": ["a.warc.gz"]}), index)
    assert main(["run", "--index", str(index), "-o", str(tmp_path / "out")]) == 2
    assert "no column warc_record_offset, warc_record_length" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_warc_path_joins_relative_names_only():
    assert warc_path("crawl-data/x.warc.gz", "s3://commoncrawl/") == "s3://commoncrawl/crawl-data/x.warc.gz"
    assert warc_path("crawl-data/x.warc.gz", "/data/cc") == "/data/cc/crawl-data/x.warc.gz"
    assert warc_path("/abs/x.warc.gz", "s3://commoncrawl/") == "/abs/x.warc.gz"
    assert warc_path("gs://b/x.warc.gz", "s3://commoncrawl/") == "gs://b/x.warc.gz"
