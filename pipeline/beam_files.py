"""Files on any filesystem Beam knows (local paths, ``gs://``, ``s3://``, ...): the
one place the commands test, join, read, write, list and remove paths.

Local paths go through ``os`` (so symbolic links, ``rename`` and ``fsync`` work as
the output directory's publication needs); URL-style paths through Beam's
``FileSystems``. A local write goes to a temporary name beside the target and is
renamed over it, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import uuid
from typing import Any, Optional

from apache_beam.io.filesystems import FileSystems


def is_local(path: str) -> bool:
    return "://" not in path


def absolute(path: str) -> str:
    """A local path made absolute (workers may run elsewhere); a URL as it is."""
    return os.path.abspath(path) if is_local(path) else path


def join(directory: str, *names: str) -> str:
    return posixpath.join(directory, *names) if is_local(directory) else FileSystems.join(directory, *names)


def exists(path: str) -> bool:
    return os.path.exists(path) if is_local(path) else FileSystems.exists(path)


def open_read(path: str):
    """A binary file object for reading ``path``."""
    return open(path, "rb") if is_local(path) else FileSystems.open(path)


def read_bytes(path: str) -> bytes:
    with open_read(path) as fh:
        return fh.read()


def write_bytes(path: str, data: bytes, mime_type: str = "application/octet-stream") -> None:
    """Writes ``data`` to ``path``; a local file is written whole (synced) and then
    renamed into place."""
    if not is_local(path):
        with FileSystems.create(path, mime_type=mime_type) as fh:
            fh.write(data)
        return
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json(path: str) -> Optional[dict[str, Any]]:
    """The JSON object at ``path``, or None when there is none (or it is unreadable)."""
    try:
        if not exists(path):
            return None
        return json.loads(read_bytes(path).decode("utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: str, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
    write_bytes(path, text.encode("utf-8"), "application/json")


def size(path: str) -> int:
    return os.path.getsize(path) if is_local(path) else FileSystems.match([path])[0].metadata_list[0].size_in_bytes


def match(pattern: str) -> list[str]:
    """Files matching ``pattern`` (no directories), sorted; none under a missing directory."""
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # Beam raises for a pattern under a missing directory on some filesystems
        return []
    return sorted(m.path for m in found if not m.path.endswith("/"))


def remove(path: str) -> None:
    """Removes a file or a directory tree, if it exists."""
    if is_local(path):
        if os.path.islink(path) or os.path.isfile(path):
            os.remove(path)
        else:
            shutil.rmtree(path, ignore_errors=True)
    elif FileSystems.exists(path):
        FileSystems.delete([path])
