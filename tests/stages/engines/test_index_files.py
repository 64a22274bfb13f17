"""Index extracts read as CSV, TSV (plain or gzip) or Parquet, and their pointer
columns checked."""

import gzip
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mmcurate.stages.engines.index_files import header_columns, is_csv
from mmcurate.stages.engines.warc.index_pointers import (
    BadIndex,
    RecordPointer,
    check_columns,
    csv_pointer_batches,
    parquet_pointer_batches,
    pointers,
)

ROWS = [("a.warc.gz", 10, 100), ("", 20, 200), ("/abs/b.warc.gz", 30, 300)]
EXPECTED = [
    RecordPointer("s3://cc/a.warc.gz", 10, 100),
    RecordPointer("", 20, 200),
    RecordPointer("/abs/b.warc.gz", 30, 300),
]


@pytest.mark.parametrize(
    "path, csv", [("x.csv", True), ("x.csv.gz", True), ("x.tsv", True), ("x.tsv.gz", True), ("x.parquet", False), ("x", False)]
)
def test_is_csv_by_name(path, csv):
    assert is_csv(path) is csv


@pytest.mark.parametrize("name", ["index.csv", "index.tsv", "index.tsv.gz"])
def test_csv_and_tsv_pointers(name):
    sep = "\t" if ".tsv" in name else ","
    text = sep.join(("url", "warc_filename", "warc_record_offset", "warc_record_length")) + "\n"
    text += "".join(sep.join(("http://x/", f, str(o), str(n))) + "\n" for f, o, n in ROWS)
    data = text.encode()
    header = data.split(b"\n", 1)[0] + b"\n"
    check_columns(name, header_columns(header, name))
    # The caller opens compressed files decompressed (Beam's CompressionTypes.AUTO).
    fh = io.BytesIO(gzip.decompress(gzip.compress(data)) if name.endswith(".gz") else data)
    got = [p for batch in csv_pointer_batches(fh, name) for p in pointers(batch, "s3://cc/")]
    assert got == EXPECTED


def test_parquet_pointers_and_a_missing_column():
    table = pa.table({
        "warc_filename": [r[0] for r in ROWS],
        "warc_record_offset": [r[1] for r in ROWS],
        "warc_record_length": [r[2] for r in ROWS],
    })
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    buffer.seek(0)
    assert [p for batch in parquet_pointer_batches(buffer, "i.parquet") for p in pointers(batch, "s3://cc/")] == EXPECTED
    with pytest.raises(BadIndex, match="warc_record_length"):
        check_columns("i.csv", ["warc_filename", "warc_record_offset"])


def test_pointers_into_a_file_are_batched_in_file_order_the_same_however_they_arrive():
    from mmcurate.stages.engines.warc.index_pointers import RecordPointer, batch_pointers, pointer_key

    pointers = [RecordPointer("/w/a", offset, 100) for offset in (900, 0, 300, 600, 1200)]
    keys = [pointer_key(p) for p in pointers]
    batches = list(batch_pointers("/w/a", keys, 250))
    # A batch closes once it names 250 bytes or more.
    assert [(b.start, b.end, b.bytes) for b in batches] == [(0, 700, 300), (900, 1300, 200)]
    assert batches[0].keys == tuple(pointer_key(RecordPointer("/w/a", o, 100)) for o in (0, 300, 600))
    assert list(batch_pointers("/w/a", reversed(keys + keys[:2]), 250)) == batches
    # A pointer that cannot be read spans byte 0 (where its error row lies), one byte.
    [bad] = batch_pointers("/w/a", [pointer_key(RecordPointer("/w/a", -5, 0))], 250)
    assert (bad.start, bad.end, bad.bytes) == (0, 1, 0)
