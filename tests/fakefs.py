"""A fake object store registered with Beam's FileSystems under ``mmfake://``.

It behaves as GCS or S3 do for what mmcurate uses: no directories (a "directory"
is a key prefix; empty ones do not exist), listing by prefix, delete of a prefix
removes every object under it. Objects are files under ``FakeObjectStore.root``,
so a test can look at them; nothing but the FileSystems API reaches them by URL.
Importing this module registers the scheme (Beam finds FileSystem subclasses).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from apache_beam.io.filesystem import BeamIOError, FileMetadata, FileSystem

SCHEME = "mmfake"
PREFIX = f"{SCHEME}://"


class FakeObjectStore(FileSystem):
    root: Path = Path("/nonexistent")

    @classmethod
    def scheme(cls):
        return SCHEME

    @classmethod
    def local(cls, url: str) -> Path:
        assert url.startswith(PREFIX), url
        return cls.root / url[len(PREFIX):]

    @classmethod
    def url(cls, path: Path) -> str:
        return PREFIX + str(Path(path).relative_to(cls.root))

    def join(self, basepath, *paths):
        out = basepath
        for p in paths:
            out = out.rstrip("/") + "/" + p.lstrip("/")
        return out

    def split(self, path):
        head, _, tail = path.rstrip("/").rpartition("/")
        return head, tail

    def mkdirs(self, path):
        pass

    def has_dirs(self):
        return False

    def _list(self, dir_or_prefix):
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                url = self.url(Path(dirpath) / name)
                if url.startswith(dir_or_prefix):
                    local = Path(dirpath) / name
                    yield FileMetadata(url, local.stat().st_size, local.stat().st_mtime)

    def create(self, path, mime_type="application/octet-stream", compression_type=None):
        local = self.local(path)
        local.parent.mkdir(parents=True, exist_ok=True)
        return open(local, "wb")

    def open(self, path, mime_type="application/octet-stream", compression_type=None):
        local = self.local(path)
        if not local.is_file():
            raise BeamIOError("open failed", {path: FileNotFoundError(path)})
        return open(local, "rb")

    def copy(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.local(dst).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.local(src), self.local(dst))

    def rename(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.local(dst).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.local(src), self.local(dst))

    def exists(self, path):
        local = self.local(path)
        if local.is_file():
            return True
        # A prefix exists when an object lies under it, as on an object store.
        return local.is_dir() and any(f for _, _, files in os.walk(local) for f in files)

    def size(self, path):
        return self.local(path).stat().st_size

    def last_updated(self, path):
        return self.local(path).stat().st_mtime

    def checksum(self, path):
        return hashlib.md5(self.local(path).read_bytes()).hexdigest()

    def metadata(self, path):
        local = self.local(path)
        return FileMetadata(path, local.stat().st_size, local.stat().st_mtime)

    def delete(self, paths):
        for path in paths:
            local = self.local(path)
            if local.is_dir():
                shutil.rmtree(local)
            elif local.exists():
                local.unlink()
            else:
                raise BeamIOError("delete failed", {path: FileNotFoundError(path)})

    def report_lineage(self, path, lineage, level=None):
        pass
