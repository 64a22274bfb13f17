import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from mmcurate.schemas import Decision, Document, ImageNode, Provenance, TextNode
from mmcurate.schemas.arrow_rows import decision_to_row, document_to_row, row_to_document
from mmcurate.schemas.tables import (
    DECISIONS,
    DECISIONS_SCHEMA,
    DOCUMENTS,
    DOCUMENTS_SCHEMA,
    SCHEMA_VERSION,
    to_table,
)

DOC = Document(
    doc_id="d1",
    url="https://example.org/a",
    provenance=Provenance("f.warc.gz", "<urn:uuid:1>", "2024-01-02T03:04:05Z", 1234, 567),
    nodes=(
        TextNode("Intro paragraph.", "p"),
        ImageNode("https://example.org/a.jpg", alt="A cat", caption="Fig. 1", declared_width=300, declared_height=200),
        TextNode("A heading", "h2"),
        ImageNode("https://example.org/b.png"),
    ),
    title="Title",
    language="en",
    language_score=0.98,
    hreflang=(("de", "https://example.org/de/a"),),
    signals={"content.word_count": 4.0, "extract.seconds": 0.01},
    metadata={"charset": "utf-8"},
)


def test_documents_round_trip_through_parquet(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(to_table([document_to_row(DOC)], DOCUMENTS), path)
    table = pq.read_table(path)
    assert table.schema.equals(DOCUMENTS_SCHEMA, check_metadata=False)
    assert table.schema.metadata[b"mmcurate.schema_version"] == SCHEMA_VERSION.encode()
    row = table.to_pylist()[0]
    assert row["texts"] == ["Intro paragraph.", None, "A heading", None]
    assert row["images"] == [None, "https://example.org/a.jpg", None, "https://example.org/b.png"]
    assert [m is None for m in row["image_meta"]] == [True, False, True, False]
    assert (row["num_texts"], row["num_images"]) == (2, 2)
    assert row_to_document(row) == DOC


def test_obelics_invariant_exactly_one_null_per_position(tmp_path):
    row = document_to_row(DOC)
    assert len(row["texts"]) == len(row["images"])
    assert all((t is None) != (i is None) for t, i in zip(row["texts"], row["images"]))


def test_duckdb_reads_signals_as_a_map(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(to_table([document_to_row(DOC)], DOCUMENTS), path)
    words = duckdb.sql(
        f"select map_from_entries(signals)['content.word_count'] from read_parquet('{path}')"
    ).fetchall()[0][0]
    assert words == 4.0


def test_decisions_schema_and_non_finite_values(tmp_path):
    decision = Decision(
        doc_id="d2",
        url="u",
        stage="heuristics",
        kind="rejected",
        reason="content.too_few_words",
        provenance=Provenance("f.warc"),
        value=float("nan"),
        threshold=50,
        signals={"x": float("inf")},
    )
    table = to_table([decision_to_row(decision)], DECISIONS)
    assert table.schema.equals(DECISIONS_SCHEMA)
    row = table.to_pylist()[0]
    assert row["value"] is None and row["threshold"] == 50.0 and row["signals"] == [{"key": "x", "value": None}]
    assert pa.types.is_list(table.schema.field("signals").type)
