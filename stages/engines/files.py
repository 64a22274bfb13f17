"""Files the engines read and write: local paths, remote ones (gs://, s3://)
through a filesystem the caller hands in, and data files shipped with the package.

Engines never import Beam, so they cannot reach Beam's filesystems themselves: a
stage passes ``apache_beam.io.filesystems.FileSystems`` (whose ``open``, ``exists``
and ``create`` match ``Filesystem`` below), a Beam-free caller (a benchmark on a
GPU machine) passes nothing and reads local files only. Local paths always go
through the operating system, as they did when this code read them itself.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import BinaryIO, Optional, Protocol


class Filesystem(Protocol):
    """What the engines need of a filesystem (Beam's ``FileSystems`` is one)."""

    def open(self, path: str) -> BinaryIO: ...

    def exists(self, path: str) -> bool: ...

    def create(self, path: str, mime_type: str = ...) -> BinaryIO: ...


def is_remote(path: str) -> bool:
    return "://" in path


def _remote(path: str, fs: Optional[Filesystem]) -> Filesystem:
    if fs is None:
        raise ValueError(f"{path}: a remote path needs a filesystem (run it through the pipeline, which passes Beam's)")
    return fs


def exists(path: str, fs: Optional[Filesystem] = None) -> bool:
    return _remote(path, fs).exists(path) if is_remote(path) else os.path.exists(path)


def open_file(path: str, fs: Optional[Filesystem] = None) -> BinaryIO:
    """``path`` opened for reading bytes."""
    return _remote(path, fs).open(path) if is_remote(path) else open(path, "rb")


def file_sha256(path: str, fs: Optional[Filesystem] = None) -> str:
    digest = hashlib.sha256()
    with open_file(path, fs) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def local_copy(path: str, suffix: str, fs: Optional[Filesystem] = None) -> str:
    """A local file for ``path`` (copied from a remote filesystem when needed), for
    libraries that take only local paths (open_clip)."""
    if not is_remote(path):
        return path
    with open_file(path, fs) as src, tempfile.NamedTemporaryFile(suffix=suffix, delete=False) as dst:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            dst.write(chunk)
        return dst.name


def data_file(name: str) -> Path:
    """A data file: ``name`` under the package's ``filters/data/`` (the rubric, the
    NSFW prompt sets), or ``name`` itself when it is a path. The file may not exist."""
    if os.sep in name or Path(name).is_absolute():
        return Path(name)
    return Path(str(resources.files("mmcurate.filters") / "data" / name))
