"""The output directory: staging, atomic publication, and reading tables back.

A run writes every table under ``DIR/.staging/<run_id>/``; only after the pipeline
has succeeded does ``publish`` move each table into ``DIR/<table>/`` (replacing the
previous run's table) and write ``DIR/manifest.json`` last. On a local filesystem
each table swap is a directory rename, so readers see the old table or the new
one, never a mix. Object stores have no directory rename: there the files are
renamed one by one, and ``manifest.json`` (written last) marks a complete run.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import uuid
from collections import Counter
from typing import Any, Iterable

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, PAIRS, TABLES

STAGING = ".staging"
MANIFEST = "manifest.json"


def is_local(path: str) -> bool:
    return "://" not in path


def join(*parts: str) -> str:
    return posixpath.join(*parts) if is_local(parts[0]) else FileSystems.join(*parts)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def staging_dir(output: str, run_id: str) -> str:
    return join(output, STAGING, run_id)


def clear_staging(output: str) -> None:
    """Remove what earlier runs that never finished left in staging."""
    path = join(output, STAGING)
    if is_local(path):
        shutil.rmtree(path, ignore_errors=True)
    elif FileSystems.exists(path):
        FileSystems.delete([path])


def table_files(directory: str, table: str) -> list[str]:
    pattern = join(directory, table, "*.parquet")
    matched = FileSystems.match([pattern])[0].metadata_list
    return sorted(m.path for m in matched)


def publish(output: str, staging: str, tables: Iterable[str] = TABLES) -> None:
    """Move each staged table into place, replacing the previous run's."""
    for table in tables:
        final = join(output, table)
        staged = join(staging, table)
        if is_local(output):
            os.makedirs(staged, exist_ok=True)
            trash = join(staging, f".replaced-{table}")
            if os.path.exists(final):
                os.replace(final, trash)
            os.replace(staged, final)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            old = table_files(output, table)
            if old:
                FileSystems.delete(old)
            new = table_files(staging, table)
            FileSystems.rename(new, [join(final, posixpath.basename(p)) for p in new])
    if is_local(staging):
        shutil.rmtree(staging, ignore_errors=True)
        parent = os.path.dirname(staging)
        if os.path.isdir(parent) and not os.listdir(parent):
            os.rmdir(parent)
    else:
        FileSystems.delete([staging])


def write_json(path: str, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
    if is_local(path):
        tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    else:
        with FileSystems.create(path, mime_type="application/json") as fh:
            fh.write(text.encode("utf-8"))


def _open(path: str):
    return open(path, "rb") if is_local(path) else FileSystems.open(path)


def table_summary(directory: str) -> dict[str, Any]:
    """Row counts of each table, and decision rows by (subject, stage, kind, reason)."""
    summary: dict[str, Any] = {}
    for table in TABLES:
        files = table_files(directory, table)
        rows = 0
        for path in files:
            with _open(path) as fh:
                rows += pq.ParquetFile(fh).metadata.num_rows
        summary[table] = {"files": len(files), "rows": rows}
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for path in table_files(directory, DECISIONS):
        with _open(path) as fh:
            columns = pq.read_table(fh, columns=["subject", "stage", "kind", "reason"]).to_pydict()
        counts.update(zip(columns["subject"], columns["stage"], columns["kind"], columns["reason"]))
    summary["decision_counts"] = counts
    # Source documents of the pairs: rejected ones (recycled) and kept ones.
    sources: dict[bool, set[str]] = {False: set(), True: set()}
    for path in table_files(directory, PAIRS):
        with _open(path) as fh:
            columns = pq.read_table(fh, columns=["doc_id", "source_kept"]).to_pydict()
        for doc_id, kept in zip(columns["doc_id"], columns["source_kept"]):
            sources[bool(kept)].add(doc_id)
    summary["pair_sources"] = {"recycled_documents": len(sources[False]), "kept_documents": len(sources[True])}
    summary["kept"] = summary[DOCUMENTS]["rows"]
    return summary
