"""``mmcurate export``: shards read back with tarfile, json and pyarrow.

Documents come from a real run (``report_run``: read -> ... -> images on the
DirectRunner); sharding, the image join across shards and pairs use a run
directory written here with the tables' own schemas.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fakefs
from imagegen import jpeg
from mmcurate.pipeline import shard_formats
from mmcurate.pipeline.cli import main
from mmcurate.schemas.tables import DOCUMENTS_SCHEMA, IMAGES_SCHEMA, PAIRS_SCHEMA


def _rows(directory: Path, table: str) -> list[dict]:
    return pq.read_table(directory / table).to_pylist()


def _tar_members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def _image_bytes(directory: Path) -> dict[str, bytes]:
    return {r["image_id"]: r["bytes"] for r in _rows(directory, "images") if r["status"] == "ok"}


def test_webdataset_documents_keep_interleaved_order_with_each_image_at_its_position(report_run, tmp_path, capsys):
    out_dir, ids = report_run
    assert main(["export", str(out_dir), "--format", "webdataset", "--output", str(tmp_path / "wds")]) == 0
    assert "1 webdataset shard(s)" in capsys.readouterr().out
    docs = _rows(out_dir, "documents")
    images = _image_bytes(out_dir)
    members = _tar_members(tmp_path / "wds" / "00000.tar")
    records = [json.loads(members[f"00000{i:04d}.json"]) for i in range(len(docs))]
    assert [r["doc_id"] for r in records] == [d["doc_id"] for d in docs]  # the run's row order
    embedded = 0
    for record, doc in zip(records, docs):
        assert record["texts"] == doc["texts"] and record["images"] == doc["images"]
        assert record["signals"] == {e["key"]: e["value"] for e in doc["signals"]}
        for i, (src, meta) in enumerate(zip(doc["images"], doc["image_meta"])):
            name = record["image_files"][i]
            if src is None:
                assert name is None and doc["texts"][i] is not None
                continue
            assert name == f"{record['key']}.{i}.jpg"
            assert members[name] == images[meta["image_id"]]
            embedded += 1
    assert embedded and set(members) == {f"{r['key']}.json" for r in records} | {
        n for r in records for n in r["image_files"] if n}
    stats = json.loads((tmp_path / "wds" / "00000_stats.json").read_text())
    assert stats["rows"] == len(docs) and stats["images"] == embedded and stats["images_missing"] == 0
    assert stats["image_bytes"] == sum(len(images[m["image_id"]]) for d in docs for m in d["image_meta"] if m)
    assert stats["bytes"] == (tmp_path / "wds" / "00000.tar").stat().st_size
    assert stats["languages"] == {"en": len(docs)}
    summary = json.loads((tmp_path / "wds" / "export.json").read_text())
    assert (summary["shards"], summary["rows"], summary["images"], summary["files"]) == (1, len(docs), embedded, ["00000.tar"])


def test_jsonl_and_parquet_embedded_carry_the_same_bytes_inline(report_run, tmp_path):
    out_dir, _ = report_run
    docs = _rows(out_dir, "documents")
    images = _image_bytes(out_dir)
    expected = [[images[m["image_id"]] if m else None for m in d["image_meta"]] for d in docs]

    assert main(["export", str(out_dir), "-f", "jsonl", "-o", str(tmp_path / "jsonl")]) == 0
    lines = (tmp_path / "jsonl" / "00000.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["doc_id"] for r in records] == [d["doc_id"] for d in docs]
    assert [[base64.b64decode(b) if b else None for b in r["image_bytes"]] for r in records] == expected

    assert main(["export", str(out_dir), "-f", "parquet-embedded", "-o", str(tmp_path / "pq")]) == 0
    table = pq.read_table(tmp_path / "pq" / "00000.parquet")
    assert table.schema.remove_metadata() == shard_formats.EMBEDDED_DOCUMENTS_SCHEMA.remove_metadata()
    assert table.column("image_bytes").to_pylist() == expected
    assert table.drop_columns(["image_bytes"]).to_pylist() == docs


# -- a run directory written here ---------------------------------------------------


def _image_row(image_id: str, data: bytes, status: str = "ok") -> dict:
    return {"image_id": image_id, "urls": [f"https://img.example/{image_id}.jpg"], "status": status,
            "format": "JPEG", "width": 8, "height": 8, "num_bytes": len(data), "bytes": data}


def _is_image(node: str) -> bool:
    return node.startswith("img-") or node == "lost"


def _doc_row(doc_id: str, language: str, nodes: list[str]) -> dict:
    """Nodes named img-* (or "lost", an image never retrieved) are images, the rest text."""
    texts = [None if _is_image(n) else n for n in nodes]
    images = [f"https://img.example/{n}.jpg" if _is_image(n) else None for n in nodes]
    meta = [{"image_id": n if n != "lost" else None, "alt": "a photo"} if _is_image(n) else None for n in nodes]
    return {"doc_id": doc_id, "url": f"https://site.example/{doc_id}", "language": language, "texts": texts,
            "images": images, "image_meta": meta, "node_tags": ["p" if t else "img" for t in texts],
            "num_texts": sum(t is not None for t in texts), "num_images": sum(i is not None for i in images)}


def _write(path: Path, rows: list[dict], schema: pa.Schema, row_group_size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=row_group_size)


@pytest.fixture()
def made_run(tmp_path) -> Path:
    """Five documents in two files (row groups of two), three images (one used in
    three documents across shards, one never retrieved), three pairs."""
    run = tmp_path / "run"
    a, b, c = jpeg(1), jpeg(2), jpeg(3)
    docs1 = [
        _doc_row("d1", "en", ["Intro", "img-a", "Middle", "img-b", "End"]),
        _doc_row("d2", "de", ["img-a", "Text"]),
        _doc_row("d3", "zh", ["只有文字的段落"]),
    ]
    docs2 = [_doc_row("d4", "ja", ["本文", "lost", "img-a"]), _doc_row("d5", "en", ["img-c", "Caption text"])]
    _write(run / "documents" / "part-00000-of-00002.parquet", docs1, DOCUMENTS_SCHEMA, 2)
    _write(run / "documents" / "part-00001-of-00002.parquet", docs2, DOCUMENTS_SCHEMA, 2)
    images = [_image_row("img-a", a), _image_row("img-b", b), _image_row("img-c", c),
              {"image_id": None, "urls": ["https://img.example/lost.jpg"], "status": "failed"}]
    _write(run / "images" / "part-00000-of-00001.parquet", images, IMAGES_SCHEMA, 2)
    pairs = [
        {"url": "https://img.example/img-b.jpg", "caption": "A heron", "image_id": "img-b", "sha256": "img-b",
         "doc_id": "r1", "source_kept": False},
        {"url": "https://img.example/own.jpg", "caption": "Own bytes", "image_id": "own", "bytes": c,
         "format": "JPEG", "doc_id": "r2", "source_kept": False},
        {"url": "https://img.example/gone.jpg", "caption": "Never stored", "image_id": "gone", "doc_id": "r3",
         "source_kept": True},
    ]
    _write(run / "pairs" / "part-00000-of-00001.parquet", pairs, PAIRS_SCHEMA, 10)
    (run / "manifest.json").write_text(json.dumps({"run_id": "made", "totals": {}}))
    return run


def test_shards_follow_row_groups_in_order_and_each_gets_the_images_it_uses(made_run, tmp_path):
    out = tmp_path / "out"
    assert main(["export", str(made_run), "-f", "webdataset", "-o", str(out), "--shard-size", "2"]) == 0
    # File 1: row groups [d1 d2] [d3]; file 2: [d4 d5] -> three shards.
    shards = sorted(p.name for p in out.glob("*.tar"))
    assert shards == ["00000.tar", "00001.tar", "00002.tar"]
    order = []
    for shard in shards:
        members = _tar_members(out / shard)
        order += [json.loads(members[n])["doc_id"] for n in sorted(members) if n.endswith(".json")]
    assert order == ["d1", "d2", "d3", "d4", "d5"]
    first = _tar_members(out / "00000.tar")
    assert first["000000000.1.jpg"] == first["000000001.0.jpg"] == jpeg(1)  # img-a in d1 and d2
    assert first["000000000.3.jpg"] == jpeg(2)
    third = _tar_members(out / "00002.tar")
    assert set(third) == {"000020000.json", "000020000.2.jpg", "000020001.json", "000020001.0.jpg"}
    assert third["000020000.2.jpg"] == jpeg(1)  # img-a again, sent to this shard too
    d4 = json.loads(third["000020000.json"])
    assert d4["image_files"] == [None, None, "000020000.2.jpg"]  # the never-retrieved image keeps its URL only
    stats = [json.loads((out / f"0000{i}_stats.json").read_text()) for i in range(3)]
    assert [(s["rows"], s["images"], s["images_missing"]) for s in stats] == [(2, 3, 0), (1, 0, 0), (2, 2, 1)]
    assert stats[2]["languages"] == {"en": 1, "ja": 1}
    summary = json.loads((out / "export.json").read_text())
    assert (summary["rows"], summary["images"], summary["images_missing"]) == (5, 5, 1)
    assert summary["languages"] == {"en": 2, "de": 1, "ja": 1, "zh": 1}

    # A rerun with larger shards replaces the earlier shards instead of mixing with them.
    assert main(["export", str(made_run), "-f", "webdataset", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["00000.tar", "00000_stats.json", "00001.tar",
                                                     "00001_stats.json", "export.json"]


def test_pairs_export_as_img2dataset_samples(made_run, tmp_path):
    out = tmp_path / "pairs"
    assert main(["export", str(made_run), "--table", "pairs", "-f", "webdataset", "-o", str(out)]) == 0
    members = _tar_members(out / "00000.tar")
    assert members["000000000.jpg"] == jpeg(2) and members["000000000.txt"] == b"A heron"  # joined by image_id
    assert members["000000001.jpg"] == jpeg(3)  # the pair's own bytes
    assert "000000002.jpg" not in members and members["000000002.txt"] == b"Never stored"
    meta = json.loads(members["000000000.json"])
    assert (meta["url"], meta["caption"], meta["key"]) == ("https://img.example/img-b.jpg", "A heron", "000000000")
    stats = json.loads((out / "00000_stats.json").read_text())
    assert (stats["rows"], stats["images"], stats["images_missing"]) == (3, 2, 1)

    assert main(["export", str(made_run), "--table", "pairs", "-f", "parquet-embedded", "-o", str(tmp_path / "pq")]) == 0
    table = pq.read_table(tmp_path / "pq" / "00000.parquet")
    assert table.schema.remove_metadata() == PAIRS_SCHEMA.remove_metadata()
    assert table.column("bytes").to_pylist() == [jpeg(2), jpeg(3), None]
    assert table.column("format").to_pylist() == ["JPEG", "JPEG", None]


def test_export_reads_and_writes_url_style_directories(made_run, tmp_path):
    store = tmp_path / "store"
    (store / "bucket").mkdir(parents=True)
    fakefs.FakeObjectStore.root = store
    (made_run).rename(store / "bucket" / "run")
    assert main(["export", "mmfake://bucket/run", "-f", "jsonl", "-o", "mmfake://bucket/shards"]) == 0
    lines = (store / "bucket" / "shards" / "00000.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["doc_id"] for line in lines] == ["d1", "d2", "d3"]
    assert json.loads((store / "bucket" / "shards" / "export.json").read_text())["shards"] == 2


def test_not_a_run_and_a_bad_shard_size(tmp_path, capsys):
    assert main(["export", str(tmp_path), "-f", "jsonl", "-o", str(tmp_path / "o")]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    (tmp_path / "manifest.json").write_text("{}")
    assert main(["export", str(tmp_path), "-f", "jsonl", "-o", str(tmp_path / "o"), "--shard-size", "0"]) == 2
    assert "--shard-size 0" in capsys.readouterr().err


def test_the_writers_alone(tmp_path):
    # A text-only document: no image files, an empty image_bytes list of nulls.
    row = _doc_row("t", "en", ["Only text", "More text"])
    stats = shard_formats.ShardStats("00000", "00000.tar", "webdataset", "documents", "x")
    sink = io.BytesIO()
    shard_formats.write_webdataset(sink, "documents", shard_formats.document_samples([row], {}, stats), "00000")
    with tarfile.open(fileobj=io.BytesIO(sink.getvalue())) as tar:
        assert tar.getnames() == ["000000000.json"]
    assert (stats.rows, stats.images, stats.text_chars) == (1, 0, len("Only text") + len("More text"))
