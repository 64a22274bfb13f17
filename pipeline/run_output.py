"""A finished run's output directory as its readers (``report``, ``inspect``,
``export``, ``plan``) see it, on any filesystem Beam knows.

Layout: ``DIR/manifest.json`` (written last: a directory without it holds no
finished run) and one folder of Parquet files per table (``documents``,
``decisions``, ``images``, ``pairs``); ``pipeline/publication.py`` says how a run
puts them there.

DuckDB (inspect's views, the report's queries) reads local files: ``local_copy``
copies a remote run's manifest and table files into a temporary directory for the
duration of a command and leaves a local directory as it is; ``connect`` registers
one view per table.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Iterator

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from mmcurate.pipeline.beam_files import exists, is_local, join, match, read_bytes, read_json
from mmcurate.schemas.tables import SCHEMAS, TABLES

if TYPE_CHECKING:
    import duckdb

MANIFEST = "manifest.json"
REPORT = "report.html"  # written by `mmcurate report` (pipeline/report/command.py)
# Tables the views cover, in the order they are listed; `pairs` is the recycle
# stage's table and is registered only when a run wrote it.
VIEW_TABLES = TABLES


class OutputError(ValueError):
    """DIR is not a run's output directory (no manifest, no tables)."""


def table_files(directory: str, table: str) -> list[str]:
    """The Parquet files of ``table`` under a run's output ``directory``, sorted."""
    return match(join(directory, table, "*.parquet"))


def _not_finished(directory: str) -> OutputError:
    return OutputError(f"{directory} has no {MANIFEST}: not the output directory of a finished mmcurate run")


def load_manifest(directory: str) -> dict[str, Any]:
    manifest = read_json(join(directory, MANIFEST))
    if manifest is None:
        raise _not_finished(directory)
    return manifest


@contextlib.contextmanager
def local_copy(directory: str) -> Iterator[str]:
    """A local directory with the run's manifest and tables: ``directory`` itself
    when it is local, else a temporary copy removed on exit. A remote ``directory``
    must hold a finished run (OutputError naming it otherwise)."""
    if is_local(directory):
        yield directory
        return
    manifest = join(directory, MANIFEST)
    if not exists(manifest):
        raise _not_finished(directory)
    tmp = tempfile.mkdtemp(prefix="mmcurate-output-")
    try:
        with open(os.path.join(tmp, MANIFEST), "wb") as fh:
            fh.write(read_bytes(manifest))
        for table in TABLES:
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


def connect(directory: str) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    """An in-memory DuckDB with one view per output table present under the local
    ``directory``.

    A table the run wrote with no files (an empty result) becomes an empty view
    with the table's schema, so queries on it return no rows rather than failing.
    Returns the connection and the names of the views.
    """
    if not os.path.isdir(directory):
        raise OutputError(f"{directory} is not a directory")
    import duckdb  # here: a run imports this module and does not query (~0.04 CPU s)

    con = duckdb.connect()
    names = []
    for table in VIEW_TABLES:
        files = table_files(directory, table)
        if files:
            listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listing}])")
        elif table in SCHEMAS and os.path.isdir(os.path.join(directory, table)):
            con.register(f"_{table}_empty", pa.Table.from_pylist([], schema=SCHEMAS[table]))
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}_empty")
        else:
            continue
        names.append(table)
    if not names:
        raise OutputError(f"{directory} holds no output tables (documents/, decisions/, images/, pairs/)")
    return con, names
