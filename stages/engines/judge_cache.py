"""The VLM judge's answers cached as JSON files under ``scoring.judge.cache_dir``,
keyed by sha256 of (document hash, prompt version, model): a rerun sends no request
for a document it has judged. Local directories are written atomically (a
temporary file, then a rename); a remote one (gs://, s3://) goes through the
filesystem the stage passes (Beam's ``FileSystems``).
"""

from __future__ import annotations

import json
import os
import posixpath
from typing import Optional

from mmcurate.stages.engines.files import Filesystem, exists, is_remote, open_file


class ResponseCache:
    """Answers as JSON files under ``directory``; ``fs`` reaches a remote one."""

    def __init__(self, directory: str, fs: Optional[Filesystem] = None):
        self._dir = directory
        self._fs = fs

    def _path(self, key: str) -> str:
        return posixpath.join(self._dir, key[:2], f"{key}.json")

    def get(self, key: str) -> Optional[dict]:
        path = self._path(key)
        if not exists(path, self._fs):
            return None
        with open_file(path, self._fs) as fh:
            return json.loads(fh.read().decode("utf-8"))

    def put(self, key: str, value: dict) -> None:
        path = self._path(key)
        if is_remote(path):
            with self._fs.create(path, mime_type="application/json") as fh:
                fh.write(json.dumps(value).encode("utf-8"))
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(value, fh)
        os.replace(tmp, path)
