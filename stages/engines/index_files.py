"""Reading Common Crawl index extracts: Parquet, or CSV/TSV (perhaps compressed),
in batches of the columns asked for. Both the read stage's record pointers
(``warc/index_pointers.py``) and source planning read such files."""

from __future__ import annotations

from typing import BinaryIO, Iterator, Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

BATCH_ROWS = 10_000


def is_csv(path: str) -> bool:
    """CSV or TSV (perhaps compressed) by the file name; anything else is Parquet."""
    return path.lower().endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz"))


def _delimiter(path: str) -> str:
    return "\t" if ".tsv" in path.lower() else ","


def header_columns(line: bytes, path: str) -> list[str]:
    """The column names of the CSV/TSV header ``line`` of the file ``path``."""
    header = line.decode("utf-8", errors="replace")
    return [n.strip().strip('"') for n in header.rstrip("\r\n").split(_delimiter(path))]


def parquet_columns(fh: BinaryIO) -> list[str]:
    """The column names of the Parquet file open as ``fh``."""
    return list(pq.ParquetFile(fh).schema_arrow.names)


def csv_batches(
    fh: BinaryIO, path: str, columns: Sequence[str], types: Optional[Mapping[str, pa.DataType]] = None
) -> Iterator[pa.RecordBatch]:
    """The rows of the CSV/TSV file ``path``, open (decompressed) as ``fh``, in
    batches of ``columns``; ``types`` fixes a column's type (the others are
    inferred); an empty string is null."""
    reader = pacsv.open_csv(
        fh,
        parse_options=pacsv.ParseOptions(delimiter=_delimiter(path)),
        convert_options=pacsv.ConvertOptions(
            include_columns=list(columns),
            column_types={k: v for k, v in (types or {}).items() if k in columns},
            strings_can_be_null=True,
        ),
    )
    yield from reader


def parquet_batches(fh: BinaryIO, columns: Sequence[str], batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The rows of the Parquet file open as ``fh``, in batches of ``columns``."""
    yield from pq.ParquetFile(fh).iter_batches(batch_size=batch_rows, columns=list(columns))
