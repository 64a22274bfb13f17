"""Staging files: the records a run writes between its phases, on disk.

A staging table is a directory of Parquet files with two columns: ``key`` (the
record's key, for looking at a file by hand) and ``record`` (the pickled record,
zstd-compressed in the file). Row groups hold at most ``ROWS_PER_UNIT`` records; a
*unit* (``"<row group>:<path>"``) is one row group, the grain at which staged
records are spread over workers and at which verdicts are joined back.

Two writers fill a table: Beam's Parquet sink (``stages/staging.py``: files named
``part-*``) and, in the first phase of ``mmcurate run``, ``TableWriter``: runs of the
records of one input range, ``r-<range id>-<output>-<first offset>.parquet``, each
written under a temporary name and renamed when done, its page and decision rows
counted in its footer (``range_parts``). Beside the tables, each range read has its
read record (``reads/<range id>.json``) and each range found whole on a rerun its
*marker* (``ranges/<range id>.json``: what it staged and its counters).

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

RANGE_PREFIX = "r-"  # a range's file: r-<range id>-<output>-<first offset>-<first record digest>.parquet
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


RANGE_ID_CHARS = 20


def range_id(path: str, start: int, end: int) -> str:
    """A name for the byte range ``[start, end)`` of ``path`` (end -1: to the end)."""
    return hashlib.sha256(f"{path}\x00{start}\x00{end}".encode("utf-8")).hexdigest()[:RANGE_ID_CHARS]


def marker_path(fs, phase_dir: str, rid: str) -> str:
    return fs.join(phase_dir, MARKERS, f"{rid}.json")


class TableWriter:
    """Rows of a staging table to a temporary file, a row group (a unit) per
    ``ROWS_PER_UNIT`` rows or ``ROW_GROUP_BYTES``;
    ``commit`` closes it with facts in its footer and renames it to ``final``, replacing
    a file of that name an earlier attempt left."""

    def __init__(self, fs, final: str):
        self._fs = fs
        self.final = final
        self.temp = f"{final[: -len('.parquet')]}{_TMP}{uuid.uuid4().hex[:8]}.parquet"
        self._fh = fs.create(self.temp)
        self._writer = pq.ParquetWriter(self._fh, STAGED_SCHEMA, compression="zstd", use_compliant_nested_type=True)
        self._rows: list[dict] = []
        self._bytes = 0
        self.rows = 0

    def add(self, row: dict) -> None:
        self._rows.append(row)
        self._bytes += len(row["record"])
        self.rows += 1
        if len(self._rows) >= ROWS_PER_UNIT or self._bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=STAGED_SCHEMA))
            self._rows, self._bytes = [], 0

    def commit(self, facts: Mapping[str, Any]) -> None:
        self._flush()
        self._writer.add_key_value_metadata({FACTS_KEY: json.dumps(facts, sort_keys=True)})
        self._writer.close()
        self._fh.close()
        fs = self._fs
        if fs.exists(self.final):
            fs.delete([self.final])
        fs.rename([self.temp], [self.final])

    def abandon(self) -> None:
        """Closes the file of a failed bundle; it keeps its temporary name."""
        try:
            self._writer.close()
            self._fh.close()
        except Exception:  # the failure that got us here matters more
            pass


# The footer key of a range part's facts: {"pages": ..., "rows": [[subject, stage, kind, reason, n], ...]}.
FACTS_KEY = b"mmcurate.range"
READS = "reads"  # the directory of the read records of ranges, beside the tables


def range_part(fs, table_dir: str, rid: str, output: str, first: str) -> str:
    """The file of a run of one range's records from one output, named by its first record."""
    return fs.join(table_dir, f"{RANGE_PREFIX}{rid}-{output}-{first}.parquet")


def part_range_id(path: str) -> Optional[str]:
    """The range id of a range part's (finished) file name, else None."""
    name = path.rsplit("/", 1)[-1]
    if not name.startswith(RANGE_PREFIX) or _TMP in name or not name.endswith(".parquet"):
        return None
    return name[len(RANGE_PREFIX) : len(RANGE_PREFIX) + RANGE_ID_CHARS]


@dataclass(frozen=True)
class RangePart:
    path: str
    table: str
    num_rows: int
    pages: int
    rows: tuple


def range_parts(fs, phase_dir: str, tables: Sequence[str]) -> dict[str, list[RangePart]]:
    """The finished range parts of a phase's tables, by range id, with their footers' facts."""
    found: dict[str, list[RangePart]] = {}
    for table in tables:
        for path in staged_files(fs, fs.join(phase_dir, table)):
            rid = part_range_id(path)
            if rid is None:
                continue
            try:
                with _open(fs, path) as fh:
                    meta = pq.ParquetFile(fh).metadata
                facts = json.loads((meta.metadata or {}).get(FACTS_KEY, b"{}"))
            except (OSError, ValueError, pa.ArrowException):
                facts = {}
            if "pages" not in facts:
                facts = {"pages": -(1 << 40)}  # unreadable: its range is never found whole
            found.setdefault(rid, []).append(
                RangePart(path, table, meta.num_rows if "rows" in facts else 0, facts["pages"], tuple(map(tuple, facts.get("rows", ()))))
            )
    return found


def read_record_path(fs, phase_dir: str, rid: str) -> str:
    return fs.join(phase_dir, READS, f"{rid}.json")


def read_records(fs, phase_dir: str) -> dict[str, dict]:
    """The read records of a phase's ranges: range id -> record."""
    return _json_files(fs, fs.join(phase_dir, READS, "*.json"))


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
    return _json_files(fs, fs.join(phase_dir, MARKERS, "*.json"))


def _json_files(fs, pattern: str) -> dict[str, dict]:
    try:
        matched = fs.match([pattern])[0].metadata_list
    except Exception:  # no such directory on a filesystem that raises for it
        return {}
    found = {}
    for m in sorted(matched, key=lambda m: m.path):
        name = m.path.rsplit("/", 1)[-1]
        if _TMP in name:
            continue
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
            rid = part_range_id(m.path)
            if rid is None or rid not in wanted:
                stale.append(m.path)
    return sorted(stale)


def summed_counters(markers: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """The counters of finished ranges, summed."""
    totals: dict[tuple[str, str], int] = {}
    for marker in markers:
        for ns, name, value in marker.get("counters", []):
            totals[(ns, name)] = totals.get((ns, name), 0) + int(value)
    return totals
