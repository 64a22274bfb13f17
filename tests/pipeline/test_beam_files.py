"""pipeline/beam_files: the one place the commands read and write paths, local or on
any Beam filesystem (a fake object store, tests/fakefs.py, stands for gs:// here)."""

from __future__ import annotations

import os

import fakefs
from mmcurate.pipeline import beam_files


def test_a_local_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    path = str(tmp_path / "state.json")
    beam_files.write_json(path, {"run_id": "a", "phases": ["read"]})
    beam_files.write_json(path, {"run_id": "b"})
    assert beam_files.read_json(path) == {"run_id": "b"}
    assert os.listdir(tmp_path) == ["state.json"]
    assert beam_files.read_bytes(path).endswith(b"}\n")


def test_read_json_is_none_for_a_missing_or_broken_file(tmp_path):
    assert beam_files.read_json(str(tmp_path / "none.json")) is None
    (tmp_path / "broken.json").write_text("{not json")
    assert beam_files.read_json(str(tmp_path / "broken.json")) is None


def test_match_lists_files_only_and_nothing_under_a_missing_folder(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "b.parquet").write_bytes(b"b")
    (tmp_path / "t" / "a.parquet").write_bytes(b"a")
    (tmp_path / "t" / "sub.parquet").mkdir()
    found = beam_files.match(beam_files.join(str(tmp_path), "t", "*.parquet"))
    assert [os.path.basename(p) for p in found if os.path.isfile(p)] == ["a.parquet", "b.parquet"]
    assert beam_files.match(beam_files.join(str(tmp_path), "missing", "*.parquet")) == []


def test_remove_takes_a_file_a_tree_or_nothing(tmp_path):
    (tmp_path / "tree" / "deep").mkdir(parents=True)
    (tmp_path / "tree" / "deep" / "f").write_text("x")
    (tmp_path / "file").write_text("x")
    beam_files.remove(str(tmp_path / "tree"))
    beam_files.remove(str(tmp_path / "file"))
    beam_files.remove(str(tmp_path / "never-there"))
    assert os.listdir(tmp_path) == []


def test_absolute_leaves_urls_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert beam_files.absolute("out") == str(tmp_path / "out")
    assert beam_files.absolute("gs://bucket/out") == "gs://bucket/out"
    assert beam_files.join("out", "manifest.json") == "out/manifest.json"
    assert beam_files.is_local("out") and not beam_files.is_local("s3://b/out")


def test_the_same_calls_work_on_an_object_store(tmp_path, monkeypatch):
    monkeypatch.setattr(fakefs.FakeObjectStore, "root", tmp_path)
    out = "mmfake://bucket/out"
    path = beam_files.join(out, "manifest.json")
    assert path == "mmfake://bucket/out/manifest.json" and not beam_files.exists(path)
    assert beam_files.read_json(path) is None
    beam_files.write_json(path, {"run_id": "r"})
    assert beam_files.exists(path) and beam_files.read_json(path) == {"run_id": "r"}
    assert beam_files.size(path) == len(b'{\n  "run_id": "r"\n}\n')
    assert beam_files.match(beam_files.join(out, "*.json")) == [path]
    assert beam_files.absolute(out) == out
    beam_files.remove(path)
    beam_files.remove(path)  # gone already: nothing to do
    assert not (tmp_path / "bucket" / "out" / "manifest.json").exists()
