"""Staging files: the records a run writes between its phases, on disk.

A staging table is a directory of Parquet files with two columns: ``key`` (the
record's key, for looking at a file by hand) and ``record`` (the pickled record,
zstd-compressed in the file). Row groups hold at most ``ROWS_PER_UNIT`` records; a
*unit* (``"<row group>:<path>"``) is one row group, the grain at which staged
records are spread over workers and at which verdicts are joined back.

Two writers fill a table: Beam's Parquet sink (``stages/staging.py``: files named
``part-*``) and, in the first phase of ``mmcurate run``, ``RangeFiles``: the records
of one input range in one file per table, ``r-<range id>.parquet``, written under a
temporary name and renamed when the range is done, followed by the range's
*marker* (``ranges/<range id>.json``: what it staged and its counters), so a file
with a final name is whole and a marker says its range is finished.

Plain pyarrow and pickle. Paths go through a filesystem the caller hands in
(Beam's ``FileSystems``: ``open``, ``create``, ``rename``, ``delete``, ``match``,
``join``), so any filesystem Beam knows works and this module needs no Beam.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from mmcurate.schemas import Document

STAGED_SCHEMA = pa.schema([("key", pa.string()), ("record", pa.binary())])
ROWS_PER_UNIT = 256
ROW_GROUP_BYTES = 8 * 1024 * 1024
_KEY_SEP = "\x00"

RANGE_PREFIX = "r-"  # a range's file in a staging table: r-<range id>.parquet
MARKERS = "ranges"  # the directory of range markers, beside the tables
_TMP = ".tmp-"


# -- keys and units ---------------------------------------------------------------------


def record_key(doc: Document) -> str:
    """A key unique to one record of the input: the doc_id with the record's file and
    offset, so the same WARC read under two names gives two keys (and one survivor
    in dedup), never one key shared by two documents."""
    prov = doc.provenance
    return f"{doc.doc_id}|{prov.offset}|{prov.warc_file}"


def unit_key(unit: str, key: str) -> str:
    """The join key of a staged record: its own key, then its unit. The record's key
    comes first so that join keys sort as the records do, whichever staging file
    holds them (dedup breaks ties between copies of one record by it)."""
    return f"{key}{_KEY_SEP}{unit}"


def split_unit_key(joined: str) -> tuple[str, str]:
    """(unit, key) of a join key."""
    key, unit = joined.split(_KEY_SEP, 1)
    return unit, key


def by_key(verdicts: Iterable[tuple[str, Any]]) -> dict[str, list]:
    grouped: dict[str, list] = {}
    for key, verdict in verdicts:
        grouped.setdefault(key, []).append(verdict)
    return grouped


def to_row(record: Any, key: Callable[[Any], str]) -> dict:
    """A staged row: the record's key and the pickled record."""
    return {"key": key(record), "record": pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)}


# -- reading ----------------------------------------------------------------------------


def _open(fs, path: str):
    """``path`` opened as stored (Beam's name for no decompression)."""
    return fs.open(path, compression_type="uncompressed")


def table_pattern(fs, directory: str) -> str:
    """The pattern of a staging table's files (finished and temporary)."""
    return fs.join(directory, "*.parquet")


def is_finished(path: str) -> bool:
    """Whether a file of a staging table carries its final name."""
    return _TMP not in path.rsplit("/", 1)[-1]


def staged_files(fs, directory: str) -> list[str]:
    """The finished files of a staging table (sorted; temporary names left out)."""
    matched = fs.match([table_pattern(fs, directory)])[0].metadata_list
    return sorted(m.path for m in matched if is_finished(m.path))


def list_units(fs, path: str) -> Iterator[str]:
    """One unit per row group of a staged file."""
    with _open(fs, path) as fh:
        groups = pq.ParquetFile(fh).metadata.num_row_groups
    for group in range(groups):
        yield f"{group}:{path}"


def read_unit(fs, unit: str) -> Iterator[Any]:
    """The records of one unit, in the order they were written."""
    group, path = unit.split(":", 1)
    with _open(fs, path) as fh:
        column = pq.ParquetFile(fh).read_row_group(int(group), columns=["record"]).column("record")
    for chunk in column.chunks:
        for i in range(len(chunk)):
            yield pickle.loads(chunk[i].as_buffer())


# -- one input range's files and its marker -----------------------------------------------


def range_id(path: str, start: int, end: int) -> str:
    """A name for the byte range ``[start, end)`` of ``path`` (end -1: to the end)."""
    return hashlib.sha256(f"{path}\x00{start}\x00{end}".encode("utf-8")).hexdigest()[:20]


def range_file(fs, table_dir: str, rid: str) -> str:
    return fs.join(table_dir, f"{RANGE_PREFIX}{rid}.parquet")


def marker_path(fs, phase_dir: str, rid: str) -> str:
    return fs.join(phase_dir, MARKERS, f"{rid}.json")


def in_range(chunk: tuple[str, int, int], warc_file: str, offset: int) -> bool:
    """Whether the record at ``offset`` of ``warc_file`` lies in the range ``chunk``."""
    path, start, end = chunk
    return warc_file == path and offset >= start and (end < 0 or offset < end)


def remove_marker(fs, phase_dir: str, rid: str) -> None:
    """Removes a range's marker, if it has one (a record of the range turned up
    outside its files): a rerun reads the range again."""
    marker = marker_path(fs, phase_dir, rid)
    if fs.exists(marker):
        fs.delete([marker])


@dataclass(frozen=True)
class TableFormat:
    """How a range's file of one table is written: its Arrow schema, codec and the
    rows of a row group (``record_bytes``: the bytes of a row that also close a row
    group at ``ROW_GROUP_BYTES``, None to go by rows alone)."""

    schema: pa.Schema
    compression: str = "zstd"
    rows_per_group: int = ROWS_PER_UNIT
    record_bytes: Optional[Callable[[dict], int]] = None


def _staged_bytes(row: dict) -> int:
    return len(row["record"])


# A staging table's format: a row group is a unit (ROWS_PER_UNIT records, at most ~8 MB).
STAGED = TableFormat(STAGED_SCHEMA, record_bytes=_staged_bytes)


class _TableWriter:
    """Rows of one table to a temporary file, a row group per ``rows_per_group`` rows
    (for staging tables: a unit, ``ROWS_PER_UNIT`` rows or ``ROW_GROUP_BYTES``)."""

    def __init__(self, fs, final: str, form: TableFormat = STAGED):
        self.final = final
        self.temp = f"{final[: -len('.parquet')]}{_TMP}{uuid.uuid4().hex[:8]}.parquet"
        self._form = form
        self._fh = fs.create(self.temp)
        self._writer = pq.ParquetWriter(
            self._fh, form.schema, compression=form.compression, use_compliant_nested_type=True
        )
        self._rows: list[dict] = []
        self._bytes = 0
        self.rows = 0

    def add(self, row: dict) -> None:
        self._rows.append(row)
        if self._form.record_bytes is not None:
            self._bytes += self._form.record_bytes(row)
        self.rows += 1
        if len(self._rows) >= self._form.rows_per_group or self._bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._form.schema))
            self._rows, self._bytes = [], 0

    def close(self) -> None:
        self._flush()
        self._writer.close()
        self._fh.close()


class RangeFiles:
    """The staged records of one input range ``(path, start, end)``: one file per
    table (``tables``: table name -> its directory), opened on the first record.

    ``owns`` says whether a record (by its provenance) lies in the range. ``finish``
    closes the files and renames them into place; with ``complete`` it then writes
    the range's marker, last, so a marker always names whole files. A table is
    written in its ``formats`` entry (default: a staging table's ``STAGED``)."""

    def __init__(
        self,
        fs,
        phase_dir: str,
        tables: Mapping[str, str],
        chunk: tuple[str, int, int],
        formats: Optional[Mapping[str, TableFormat]] = None,
    ):
        self._fs = fs
        self.phase_dir = phase_dir
        self._tables = dict(tables)
        self._formats = dict(formats or {})
        self.path, self.start, self.end = chunk
        self.rid = range_id(*chunk)
        self._writers: dict[str, _TableWriter] = {}

    def owns(self, warc_file: str, offset: int) -> bool:
        return in_range((self.path, self.start, self.end), warc_file, offset)

    def add(self, table: str, row: dict) -> None:
        writer = self._writers.get(table)
        if writer is None:
            final = range_file(self._fs, self._tables[table], self.rid)
            writer = self._writers[table] = _TableWriter(self._fs, final, self._formats.get(table, STAGED))
        writer.add(row)

    def rows(self, table: str) -> int:
        writer = self._writers.get(table)
        return writer.rows if writer is not None else 0

    def finish(self, complete: bool, counters: Mapping[tuple[str, str], int], facts: Mapping[str, Any]) -> None:
        fs = self._fs
        for writer in self._writers.values():
            writer.close()
        # A file of this range left by an earlier attempt is replaced (or removed, when
        # this attempt staged nothing for that table).
        stale = [range_file(fs, d, self.rid) for t, d in self._tables.items() if t not in self._writers]
        stale = [p for p in stale if fs.exists(p)]
        if stale:
            fs.delete(stale)
        for writer in self._writers.values():
            if fs.exists(writer.final):
                fs.delete([writer.final])
            fs.rename([writer.temp], [writer.final])
        if complete:
            marker = {
                "range": [self.path, self.start, self.end],
                "tables": {t: w.rows for t, w in sorted(self._writers.items())},
                "counters": [[ns, name, value] for (ns, name), value in sorted(counters.items())],
                **facts,
            }
            write_marker(fs, marker_path(fs, self.phase_dir, self.rid), marker)

    def abandon(self) -> None:
        """Closes the files of a range whose reading failed; they keep temporary names."""
        for writer in self._writers.values():
            try:
                writer.close()
            except Exception:  # the failure that got us here matters more
                pass


def write_marker(fs, path: str, marker: Mapping[str, Any]) -> None:
    """The marker, written under a temporary name and renamed into place."""
    temp = f"{path}{_TMP}{uuid.uuid4().hex[:8]}"
    with fs.create(temp) as fh:
        fh.write((json.dumps(marker, sort_keys=True) + "\n").encode("utf-8"))
    if fs.exists(path):
        fs.delete([path])
    fs.rename([temp], [path])


def finished_ranges(fs, phase_dir: str) -> dict[str, dict]:
    """The markers of a phase's finished ranges: range id -> marker."""
    pattern = fs.join(phase_dir, MARKERS, "*.json")
    try:
        matched = fs.match([pattern])[0].metadata_list
    except Exception:  # no markers directory on a filesystem that raises for it
        return {}
    found = {}
    for m in sorted(matched, key=lambda m: m.path):
        name = m.path.rsplit("/", 1)[-1]
        try:
            with _open(fs, m.path) as fh:
                found[name[: -len(".json")]] = json.loads(fh.read().decode("utf-8"))
        except (OSError, ValueError):
            continue  # unreadable: its range is read again
    return found


def stale_files(fs, phase_dir: str, tables: Sequence[str], keep: Iterable[str]) -> list[str]:
    """Every file of a phase's staging tables that is not the file of a finished range
    in ``keep``: what a killed run left half done (temporary files, ranges without a
    marker, the shards of Beam's sink), to remove before the phase runs again."""
    wanted = set(keep)
    stale = []
    for table in tables:
        directory = fs.join(phase_dir, table)
        try:
            matched = fs.match([fs.join(directory, "*")])[0].metadata_list
        except Exception:
            continue
        for m in matched:
            name = m.path.rsplit("/", 1)[-1]
            rid = name[len(RANGE_PREFIX) : -len(".parquet")] if name.startswith(RANGE_PREFIX) else None
            if rid is None or _TMP in name or not name.endswith(".parquet") or rid not in wanted:
                stale.append(m.path)
    return sorted(stale)


def summed_counters(markers: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """The counters of finished ranges, summed."""
    totals: dict[tuple[str, str], int] = {}
    for marker in markers:
        for ns, name, value in marker.get("counters", []):
            totals[(ns, name)] = totals.get((ns, name), 0) + int(value)
    return totals
