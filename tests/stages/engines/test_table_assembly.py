"""Output tables assembled from per-range parts (stages/engines/table_assembly.py):
order, row groups, the number of files, empty tables, and a range's output part."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas import KIND_REJECTED, SUBJECT_PAGE, Decision, Provenance
from mmcurate.schemas.arrow_rows import table_row
from mmcurate.schemas.tables import DECISIONS, SCHEMAS
from mmcurate.stages.engines import staging_files as sf
from mmcurate.stages.engines import table_assembly as ta

SCHEMA = pa.schema([("n", pa.int64()), ("words", pa.list_(pa.string()))])


def _part(path, numbers, rows_per_group=2) -> str:
    table = pa.table({"n": numbers, "words": [[str(n)] * (n % 3) for n in numbers]}, schema=SCHEMA)
    pq.write_table(table, path, row_group_size=rows_per_group, use_compliant_nested_type=True)
    return str(path)


def _assemble(fs, parts, directory, schema, compression, rows_per_group, num_shards=0, target=ta.TARGET_FILE_BYTES):
    """Every planned file of ``parts`` written, one after the other (as this process
    assembles local staging: ``range_outputs.assemble_tables``)."""
    return [
        ta.write_file(fs, spec, schema, compression, rows_per_group)
        for spec in ta.plan_files(fs, parts, directory, num_shards, target)
    ]


def _read(paths) -> list[int]:
    return [n for p in paths for n in pq.read_table(p).column("n").to_pylist()]


def test_parts_are_joined_in_the_order_given_into_full_row_groups(tmp_path):
    parts = [_part(tmp_path / "b.parquet", [5, 6, 7]), _part(tmp_path / "a.parquet", [1, 2]), _part(tmp_path / "c.parquet", [9])]
    written = _assemble(FileSystems, parts, str(tmp_path / "out" / "t"), SCHEMA, "zstd", rows_per_group=4)
    assert [p.rsplit("/", 1)[-1] for p in written] == ["part-00000-of-00001.parquet"]
    assert _read(written) == [5, 6, 7, 1, 2, 9]
    meta = pq.ParquetFile(written[0]).metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [4, 2]
    assert pq.read_table(written[0]).schema.equals(SCHEMA)
    assert pq.read_table(written[0]).column("words").to_pylist() == [[str(n)] * (n % 3) for n in [5, 6, 7, 1, 2, 9]]


def test_num_shards_splits_the_rows_evenly_in_order_and_an_empty_table_is_one_file(tmp_path):
    parts = [_part(tmp_path / f"{i}.parquet", list(range(10 * i, 10 * i + 5))) for i in range(3)]
    written = _assemble(FileSystems, parts, str(tmp_path / "t"), SCHEMA, "snappy", 1000, num_shards=4)
    assert [p.rsplit("/", 1)[-1] for p in written] == [f"part-0000{k}-of-00004.parquet" for k in range(4)]
    assert [pq.ParquetFile(p).metadata.num_rows for p in written] == [3, 4, 4, 4]
    assert _read(written) == [n for i in range(3) for n in range(10 * i, 10 * i + 5)]
    # More shards than rows: the rest are files with the schema and no rows.
    few = _assemble(FileSystems, parts[:1], str(tmp_path / "few"), SCHEMA, "zstd", 1000, num_shards=7)
    assert [pq.ParquetFile(p).metadata.num_rows for p in few] == [0, 1, 1, 0, 1, 1, 1]
    empty = _assemble(FileSystems, [], str(tmp_path / "empty"), SCHEMA, "zstd", 1000)
    assert len(empty) == 1 and pq.read_table(empty[0]).num_rows == 0 and pq.read_table(empty[0]).schema.equals(SCHEMA)


def test_without_num_shards_a_file_holds_about_the_target_bytes_of_parts():
    assert ta.shard_count(0, 0) == 1
    assert ta.shard_count(ta.TARGET_FILE_BYTES, 0) == 1
    assert ta.shard_count(ta.TARGET_FILE_BYTES + 1, 0) == 2
    assert ta.shard_count(10 * ta.TARGET_FILE_BYTES, 0) == 10
    assert ta.shard_count(10 * ta.TARGET_FILE_BYTES, 3) == 3


def test_sizes_decide_the_files_when_shards_are_left_open(tmp_path):
    parts = [_part(tmp_path / f"{i}.parquet", [i]) for i in range(3)]
    size = sum((tmp_path / f"{i}.parquet").stat().st_size for i in range(3))
    written = _assemble(FileSystems, parts, str(tmp_path / "t"), SCHEMA, "zstd", 1000, target=-(-size // 3))
    assert [pq.ParquetFile(p).metadata.num_rows for p in written] == [1, 1, 1] and _read(written) == [0, 1, 2]


def test_a_range_writes_output_rows_in_the_tables_format(tmp_path):
    """A run's only phase writes each range's decision rows as the output table's rows."""
    phase = tmp_path / "0-read"
    form = sf.TableFormat(SCHEMAS[DECISIONS], "zstd", 2)
    final = sf.range_part(FileSystems, str(phase / "parts" / DECISIONS), sf.range_id("/w/a", 0, -1), "decisions0", 0)
    writer = sf.TableWriter(FileSystems, final, form)
    rows = [
        Decision(doc_id=f"d{i}", url=f"http://x/{i}", stage="read", kind=KIND_REJECTED, reason="http_status",
                 provenance=Provenance("/w/a", offset=i), subject=SUBJECT_PAGE)
        for i in range(5)
    ]
    for row in rows:
        writer.add(table_row(row, DECISIONS))
    writer.commit({"pages": 5, "rows": [[SUBJECT_PAGE, "read", KIND_REJECTED, "http_status", 5]]})
    [part] = sf.staged_files(FileSystems, str(phase / "parts" / DECISIONS))
    meta = pq.ParquetFile(part).metadata
    assert meta.num_rows == 5 and [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [2, 2, 1]
    assert pq.read_table(part).schema.equals(SCHEMAS[DECISIONS])
    assert pq.read_table(part).column("doc_id").to_pylist() == [f"d{i}" for i in range(5)]
    [found] = sf.range_parts(FileSystems, str(phase), ["parts/" + DECISIONS])[sf.range_id("/w/a", 0, -1)]
    assert (found.num_rows, found.pages, found.rows) == (5, 5, ((SUBJECT_PAGE, "read", KIND_REJECTED, "http_status", 5),))


def test_the_plan_names_each_files_slices_of_the_parts_and_writing_files_apart_gives_the_same_files(tmp_path):
    """Files written one by one from the plan (as Beam's workers do) hold what one pass writes."""
    parts = [_part(tmp_path / f"{i}.parquet", list(range(10 * i, 10 * i + 5)), rows_per_group=2) for i in range(3)]
    plan = ta.plan_files(FileSystems, parts, str(tmp_path / "apart"), num_shards=4)
    assert [spec.slices for spec in plan] == [
        ((parts[0], 0, 3),),
        ((parts[0], 3, 5), (parts[1], 0, 2)),
        ((parts[1], 2, 5), (parts[2], 0, 1)),
        ((parts[2], 1, 5),),
    ]
    apart = [ta.write_file(FileSystems, spec, SCHEMA, "zstd", 3) for spec in reversed(plan)][::-1]
    whole = _assemble(FileSystems, parts, str(tmp_path / "whole"), SCHEMA, "zstd", 3, num_shards=4)
    assert [p.rsplit("/", 1)[-1] for p in apart] == [p.rsplit("/", 1)[-1] for p in whole]
    for a, w, want in zip(apart, whole, ([3], [3, 1], [3, 1], [3, 1])):
        assert pq.read_table(a).equals(pq.read_table(w))
        groups = pq.ParquetFile(a).metadata
        assert [groups.row_group(g).num_rows for g in range(groups.num_row_groups)] == want
