"""Files the Beam-free engines read: local paths through the OS, remote ones only
through the filesystem the caller hands in, data files by name from the package."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from mmcurate.stages.engines import files


class MemoryFilesystem:
    """A remote filesystem in memory, shaped like Beam's FileSystems."""

    def __init__(self, blobs: dict[str, bytes]):
        self.blobs = dict(blobs)

    def open(self, path: str):
        return io.BytesIO(self.blobs[path])

    def exists(self, path: str) -> bool:
        return path in self.blobs

    def create(self, path: str, mime_type: str = "application/octet-stream"):
        raise NotImplementedError


def test_remote_paths_need_a_filesystem_and_use_the_one_given():
    with pytest.raises(ValueError, match="gs://bucket/model.pt"):
        files.exists("gs://bucket/model.pt")
    fs = MemoryFilesystem({"gs://bucket/model.pt": b"weights"})
    assert files.exists("gs://bucket/model.pt", fs) and not files.exists("gs://bucket/other.pt", fs)
    copy = files.local_copy("gs://bucket/model.pt", ".pt", fs)
    assert Path(copy).read_bytes() == b"weights" and copy.endswith(".pt")
    assert files.file_sha256("gs://bucket/model.pt", fs) == files.file_sha256(copy)


def test_local_paths_never_touch_the_filesystem_given(tmp_path):
    path = tmp_path / "head.pt"
    path.write_bytes(b"head")
    fs = MemoryFilesystem({})
    assert files.exists(str(path), fs) and files.local_copy(str(path), ".pt", fs) == str(path)
    with files.open_file(str(path), fs) as fh:
        assert fh.read() == b"head"


def test_data_files_by_name_or_path(tmp_path):
    assert files.data_file("judge_rubric_v1.txt").is_file()
    assert files.data_file(str(tmp_path / "mine.txt")) == tmp_path / "mine.txt"
