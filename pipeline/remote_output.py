"""A run's output directory on any filesystem Beam knows (local, ``gs://``, ``s3://``,
...), for the commands that read one: ``report``, ``inspect`` and ``export``.

Listing and reading go through Beam's ``FileSystems``, so a URL-style directory
works exactly as a local one. DuckDB (inspect's views, the report's queries) reads
local files: ``local_copy`` copies a remote run's manifest and table files into a
temporary directory for the duration of a command and leaves a local directory as
it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import shutil
import tempfile
from typing import Any, Iterator, Sequence

from apache_beam.io.filesystems import FileSystems

MANIFEST = "manifest.json"
TABLE_DIRS = ("documents", "decisions", "images", "pairs")


def is_remote(path: str) -> bool:
    return "://" in path


def join(directory: str, *names: str) -> str:
    return FileSystems.join(directory, *names) if is_remote(directory) else posixpath.join(directory, *names)


def exists(path: str) -> bool:
    return FileSystems.exists(path) if is_remote(path) else os.path.exists(path)


def read_bytes(path: str) -> bytes:
    if not is_remote(path):
        with open(path, "rb") as fh:
            return fh.read()
    with FileSystems.open(path) as fh:
        return fh.read()


def write_bytes(path: str, data: bytes, mime_type: str = "application/octet-stream") -> None:
    if not is_remote(path):
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return
    with FileSystems.create(path, mime_type=mime_type) as fh:
        fh.write(data)


def size(path: str) -> int:
    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes if is_remote(path) else os.path.getsize(path)


def delete(paths: Sequence[str]) -> None:
    for path in paths:
        if is_remote(path):
            FileSystems.delete([path])
        elif os.path.exists(path):
            os.remove(path)


def read_json(path: str) -> dict[str, Any]:
    return json.loads(read_bytes(path).decode("utf-8"))


def match(pattern: str) -> list[str]:
    """Files matching ``pattern`` (no directories), sorted."""
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # Beam raises for a pattern under a missing directory on some filesystems
        return []
    return sorted(m.path for m in found if not m.path.endswith("/"))


def table_files(directory: str, table: str) -> list[str]:
    """The Parquet files of ``table`` under a run's output ``directory``."""
    return match(join(directory, table, "*.parquet"))


def has_table_dir(directory: str, table: str) -> bool:
    """Whether the run wrote ``table`` (possibly with no files: an empty table). An
    object store has no empty directories: there a table without files is absent."""
    if is_remote(directory):
        return bool(table_files(directory, table))
    return os.path.isdir(os.path.join(directory, table))


@contextlib.contextmanager
def local_copy(directory: str) -> Iterator[str]:
    """A local directory with the run's manifest and tables: ``directory`` itself
    when it is local, else a temporary copy removed on exit."""
    if not is_remote(directory):
        yield directory
        return
    tmp = tempfile.mkdtemp(prefix="mmcurate-output-")
    try:
        manifest = join(directory, MANIFEST)
        if exists(manifest):
            with open(os.path.join(tmp, MANIFEST), "wb") as fh:
                fh.write(read_bytes(manifest))
        for table in TABLE_DIRS:
            files = table_files(directory, table)
            if not files:
                continue
            os.makedirs(os.path.join(tmp, table))
            for path in files:
                with FileSystems.open(path) as src, open(os.path.join(tmp, table, posixpath.basename(path)), "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
