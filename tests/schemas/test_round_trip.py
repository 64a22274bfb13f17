"""Every table written through the writer's own code path (``stages.write.WriteCorpus``
under Beam), then read back with pyarrow and DuckDB: the same typed rows come out."""

import glob
import hashlib

import apache_beam as beam
import duckdb
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from mmcurate.stages.config import WriteConfig
from mmcurate.schemas import Decision, Document, ImageNode, ImageRow, PairRow, Provenance, TextNode
from mmcurate.schemas.arrow_rows import table_row, table_to_records, to_arrow_row
from mmcurate.schemas.rows import STATUS_FAILED, STATUS_OK, STATUS_REJECTED, STATUS_SKIPPED
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, IMAGES, PAIRS, SCHEMA_VERSION, SCHEMAS, TABLES
from mmcurate.stages.write import WriteCorpus

PROV = Provenance("s3://bucket/crawl-00001.warc.gz", "<urn:uuid:1>", "2024-01-02T03:04:05Z", 1234, 567)
PROV2 = Provenance("crawl-00002.warc.gz", "<urn:uuid:2>", "2024-02-03T04:05:06Z", 0, 99)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
ID = hashlib.sha256(PNG).hexdigest()
OTHER = hashlib.sha256(b"other").hexdigest()

DOCUMENTS_IN = [
    Document(
        doc_id="d1",
        url="https://example.org/a",
        provenance=PROV,
        nodes=(
            TextNode("Intro paragraph, with ünïcode and 中文.", "p"),
            ImageNode(
                "https://img.example/a.png", alt="A cat", caption="Fig. 1", declared_width=300, declared_height=200,
                candidates=("https://img.example/a@1x.png",), image_id=ID, width=4, height=3, phash="8f00ff00ff00ff00",
                clip_score=0.25,
            ),
            TextNode("A heading", "h2"),
        ),
        title="Title",
        language="en",
        language_score=0.98,
        hreflang=(("de", "https://example.org/de/a"),),
        signals={"content.word_count": 7.0, "extract.seconds": 0.01},
        metadata={"charset": "utf-8", "extractor": "dom"},
    ),
    Document(doc_id="d2", url="https://example.org/b", provenance=PROV2, nodes=(TextNode("Only text."),)),
]

DECISIONS_IN = [
    Decision("d3", "https://example.org/c", "heuristics", "rejected", "gopher.too_few_words", PROV, 3.0, 50.0,
             detail="3 words", signals={"content.word_count": 3.0}),
    Decision("d4", "https://example.org/d", "extract", "error", "UnicodeDecodeError", PROV2, detail="bad bytes"),
    Decision("d1", "https://img.example/gone.jpg", "images", "rejected", "image.not_captured", PROV, subject="image"),
]

IMAGES_IN = [
    ImageRow(ID, ("https://img.example/a.png", "https://img.example/a@1x.png"), STATUS_OK, source="warc",
             content_type="image/png", format="PNG", width=4, height=3, num_bytes=len(PNG), phash="8f00ff00ff00ff00",
             doc_frequency=2, bytes=PNG, provenance=PROV),
    ImageRow(OTHER, ("https://cdn.example/b.jpg",), STATUS_OK, source="http", content_type="image/jpeg",
             format="JPEG", width=640, height=480, num_bytes=5, phash="0000ffff0000ffff", duplicate_of=ID,
             doc_frequency=1, path="images/ab/b.jpg"),
    ImageRow(None, ("https://img.example/gone.jpg",), STATUS_FAILED, reason="image.not_captured",
             detail="no capture, images.http off"),
    ImageRow(None, ("https://img.example/logo.svg",), STATUS_SKIPPED, reason="image.svg", format="SVG"),
    ImageRow("cd" * 32, ("https://img.example/tiny.gif",), STATUS_REJECTED, reason="image.too_small", source="warc",
             format="GIF", width=1, height=1, num_bytes=43, provenance=PROV2),
]

PAIRS_IN = [
    PairRow("https://img.example/a.png", "A cat on a mat", "alt", "d3", "https://example.org/c", PROV,
            similarity=0.31, width=4, height=3, format="PNG", image_id=ID, bytes=PNG, source_stage="heuristics",
            rejection_reason="gopher.too_few_words"),
    PairRow("https://cdn.example/b.jpg", "A bridge at night", "figcaption", "d1", "https://example.org/a", PROV2,
            width=640, height=480, format="JPEG", image_id=OTHER, source_kept=True),
]

RECORDS = {DOCUMENTS: DOCUMENTS_IN, DECISIONS: DECISIONS_IN, IMAGES: IMAGES_IN, PAIRS: PAIRS_IN}
KEYS = {DOCUMENTS: "doc_id", DECISIONS: "reason", IMAGES: "urls", PAIRS: "url"}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("written"))
    with TestPipeline() as p:
        pcolls = tuple(p | f"Create{t}" >> beam.Create(RECORDS[t], reshuffle=False) for t in TABLES)
        _ = pcolls | WriteCorpus(out, WriteConfig(num_shards=1))
    return out


def _read(out: str, table: str):
    files = sorted(glob.glob(f"{out}/{table}/*.parquet"))
    assert files, table
    return pq.read_table(files)


def _key(table: str):
    return lambda record: str(getattr(record, KEYS[table]))


@pytest.mark.parametrize("table", TABLES)
def test_pyarrow_reads_back_the_same_typed_rows(written, table):
    arrow = _read(written, table)
    assert arrow.schema.equals(SCHEMAS[table], check_metadata=False)
    assert arrow.num_rows == len(RECORDS[table])
    back = sorted(table_to_records(arrow, table), key=_key(table))
    assert back == sorted(RECORDS[table], key=_key(table))


@pytest.mark.parametrize("table", TABLES)
def test_files_carry_the_schema_version_and_table_name(written, table):
    for path in glob.glob(f"{written}/{table}/*.parquet"):
        metadata = pq.read_schema(path).metadata
        assert metadata[b"mmcurate.schema_version"] == SCHEMA_VERSION.encode()
        assert metadata[b"mmcurate.table"] == table.encode()


@pytest.mark.parametrize("table", TABLES)
def test_duckdb_reads_the_same_values(written, table):
    arrow = _read(written, table)
    cursor = duckdb.sql(f"select * from read_parquet('{written}/{table}/*.parquet')")
    assert cursor.columns == SCHEMAS[table].names
    key = KEYS[table]
    expected = sorted(arrow.to_pylist(), key=lambda r: str(r[key]))
    got = sorted((dict(zip(cursor.columns, values)) for values in cursor.fetchall()), key=lambda r: str(r[key]))
    scalar = [f.name for f in SCHEMAS[table] if not str(f.type).startswith(("list", "struct"))]
    assert [{c: r[c] for c in scalar} for r in got] == [{c: r[c] for c in scalar} for r in expected]


def test_duckdb_queries_the_columns_analysts_use(written):
    words = duckdb.sql(
        f"select map_from_entries(signals)['content.word_count'] from read_parquet('{written}/documents/*.parquet') "
        "where doc_id = 'd1'"
    ).fetchall()[0][0]
    assert words == 7.0
    ok = duckdb.sql(
        f"select count(*), sum(len(urls)) from read_parquet('{written}/images/*.parquet') where status = 'ok'"
    ).fetchall()[0]
    assert ok == (2, 3)
    joined = duckdb.sql(
        f"select p.caption, i.format from read_parquet('{written}/pairs/*.parquet') p "
        f"join read_parquet('{written}/images/*.parquet') i on p.sha256 = i.image_id order by p.caption"
    ).fetchall()
    assert joined == [("A bridge at night", "JPEG"), ("A cat on a mat", "PNG")]


def test_the_writer_takes_only_each_tables_typed_row():
    row = to_arrow_row(IMAGES_IN[2])
    assert table_row(IMAGES_IN[2], IMAGES) == row
    with pytest.raises(TypeError, match="ImageRow rows, not dict"):
        table_row(row, IMAGES)  # a hand-built dict row
    with pytest.raises(TypeError, match="PairRow rows, not ImageRow"):
        table_row(IMAGES_IN[2], PAIRS)
