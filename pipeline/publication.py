"""Publishing a run into its output directory: a lock, staging, versions, the atomic
switch, and the row counts of what was published.

Layout of a local output directory ``DIR``::

    DIR/documents -> .current/documents      (a symbolic link; so are decisions,
    DIR/manifest.json -> .current/manifest.json  images, pairs)
    DIR/.current -> .versions/<run_id>       (the one pointer that is swapped)
    DIR/.versions/<run_id>/{documents,decisions,images,pairs}/*.parquet, manifest.json
    DIR/.staging/<run key>/...               (phases of a run not yet published)
    DIR/.lock                                (held while a run works here)

A run works under ``DIR/.staging/<run key>/`` (the key is a hash of the config and
the input files, so a rerun of the same command finds its finished phases there).
``publish`` moves the finished tables to a new version directory, writes its
``manifest.json`` last, and then replaces the ``.current`` link by one ``rename``:
a reader that opens ``DIR/documents`` sees the old run's tables or the new run's,
never a mix, and a kill at any point leaves one or the other. The previous version
is removed after the swap. (A reader that must see one run across several tables
while runs replace each other resolves ``DIR/.current`` once and reads under it.)

Object stores (gs://, s3://) have no links and no atomic rename of a directory:
there each file is copied and deleted on its own, ``manifest.json`` is written
last, and a reader during publication can see a mix; no lock is taken either.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import posixpath
import shutil
import uuid
from collections import Counter
from typing import Any, Iterator, Optional

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from mmcurate.pipeline.beam_files import is_local, join, open_read, remove, write_json
from mmcurate.pipeline.run_output import MANIFEST, table_files
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, PAIRS, TABLES

STAGING = ".staging"
VERSIONS = ".versions"
CURRENT = ".current"
LOCK = ".lock"


class OutputBusy(RuntimeError):
    """Another run holds the output directory's lock."""


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def staging_dir(output: str, key: str) -> str:
    return join(output, STAGING, key)


def version_dir(output: str, run_id: str) -> str:
    return join(output, VERSIONS, run_id)


def clear_staging(output: str, keep: Optional[str] = None) -> None:
    """Remove what earlier runs left in staging, except the run key ``keep``."""
    root = join(output, STAGING)
    if is_local(root):
        if not os.path.isdir(root):
            return
        for name in os.listdir(root):
            if name != keep:
                shutil.rmtree(join(root, name), ignore_errors=True)
        return
    if keep is None:
        remove(root)
        return
    matched = FileSystems.match([join(root, "*")])[0].metadata_list
    stale = {m.path[len(root) :].lstrip("/").split("/", 1)[0] for m in matched} - {keep}
    for name in stale:
        remove(join(root, name))


@contextlib.contextmanager
def lock_output(output: str) -> Iterator[None]:
    """Holds ``DIR/.lock`` (an advisory ``flock``) for the duration; raises
    ``OutputBusy`` at once if another run holds it. The kernel releases the lock
    when the process ends, however it ends, so a killed run leaves no stale lock.
    Object stores have no lock: the context does nothing there."""
    if not is_local(output):
        yield
        return
    os.makedirs(output, exist_ok=True)
    path = join(output, LOCK)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
            raise OutputBusy(
                f"output {output} is in use by another run (pid {holder}); wait for it to end or choose another --output"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _link(target: str, path: str) -> None:
    """Points the symbolic link ``path`` at ``target`` in one rename."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    os.symlink(target, tmp)
    os.replace(tmp, path)


def _adopt_legacy(output: str) -> None:
    """An output written before versions (real table directories): make it the
    current version, so the first versioned publication swaps from it too. So is a copy
    of an output whose links were followed (``.current`` a real directory)."""
    current = join(output, CURRENT)
    if os.path.isdir(current) and not os.path.islink(current):
        shutil.rmtree(current)  # a copy: DIR/<table> hold the same tables
    legacy = [name for name in (*TABLES, MANIFEST) if os.path.exists(join(output, name)) and not os.path.islink(join(output, name))]
    if not legacy or os.path.lexists(join(output, CURRENT)):
        return
    version = version_dir(output, f"legacy-{new_run_id()}")
    os.makedirs(version)
    for name in legacy:
        os.replace(join(output, name), join(version, name))
    _link(posixpath.relpath(version, output), join(output, CURRENT))


def publish(output: str, tables: str, run_id: str, manifest: dict[str, Any]) -> None:
    """Publishes the finished tables under ``tables`` as run ``run_id``, with its
    manifest written last. Safe to call again after a kill at any point in it."""
    if not is_local(output):
        _publish_by_copy(output, tables, manifest)
        return
    version = version_dir(output, run_id)
    if os.path.isdir(tables):
        os.makedirs(join(output, VERSIONS), exist_ok=True)
        remove(version)  # left by an earlier publication of this run that did not finish
        os.replace(tables, version)
    for table in TABLES:
        os.makedirs(join(version, table), exist_ok=True)
    write_json(join(version, MANIFEST), manifest)
    _adopt_legacy(output)
    for name in (*TABLES, MANIFEST):
        path = join(output, name)
        target = join(CURRENT, name)
        if not (os.path.islink(path) and os.readlink(path) == target):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            _link(target, path)
    # The one step that switches every table at once.
    _link(posixpath.join(VERSIONS, run_id), join(output, CURRENT))
    for name in os.listdir(output):
        if ".tmp-" in name:  # a link or manifest a killed publication left half made
            remove(join(output, name))
    versions = join(output, VERSIONS)
    for name in os.listdir(versions):
        if name != run_id:
            shutil.rmtree(join(versions, name), ignore_errors=True)


def _publish_by_copy(output: str, tables: str, manifest: dict[str, Any]) -> None:
    for table in TABLES:
        old = table_files(output, table)
        if old:
            FileSystems.delete(old)
        new = table_files(tables, table)
        if new:
            FileSystems.rename(new, [join(output, table, posixpath.basename(p)) for p in new])
    write_json(join(output, MANIFEST), manifest)


def current_tables(output: str) -> str:
    """Where the published tables of ``output`` are (the current version, resolved)."""
    if is_local(output) and os.path.islink(join(output, CURRENT)):
        return os.path.realpath(join(output, CURRENT))
    return output


def table_summary(directory: str) -> dict[str, Any]:
    """Row counts of each table, and decision rows by (subject, stage, kind, reason)."""
    summary: dict[str, Any] = {}
    for table in TABLES:
        files = table_files(directory, table)
        rows = 0
        for path in files:
            with open_read(path) as fh:
                rows += pq.ParquetFile(fh).metadata.num_rows
        summary[table] = {"files": len(files), "rows": rows}
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for path in table_files(directory, DECISIONS):
        with open_read(path) as fh:
            columns = pq.read_table(fh, columns=["subject", "stage", "kind", "reason"]).to_pydict()
        counts.update(zip(columns["subject"], columns["stage"], columns["kind"], columns["reason"]))
    summary["decision_counts"] = counts
    # Source documents of the pairs: rejected ones (recycled) and kept ones.
    sources: dict[bool, set[str]] = {False: set(), True: set()}
    for path in table_files(directory, PAIRS):
        with open_read(path) as fh:
            columns = pq.read_table(fh, columns=["doc_id", "source_kept"]).to_pydict()
        for doc_id, kept in zip(columns["doc_id"], columns["source_kept"]):
            sources[bool(kept)].add(doc_id)
    summary["pair_sources"] = {"recycled_documents": len(sources[False]), "kept_documents": len(sources[True])}
    summary["kept"] = summary[DOCUMENTS]["rows"]
    return summary
