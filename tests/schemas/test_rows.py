"""The typed rows and their one conversion to and from Arrow."""

import dataclasses

import pyarrow as pa
import pytest

from mmcurate.schemas import Decision, Document, ImageRow, PairRow, Provenance, TextNode
from mmcurate.schemas.arrow_rows import (
    PROVENANCE_COLUMNS,
    ROW_TYPES,
    from_arrow_row,
    provenance_columns,
    provenance_from_columns,
    records_to_table,
    table_to_records,
    to_arrow_row,
)
from mmcurate.schemas.rows import NO_PROVENANCE, STATUS_FAILED, STATUS_OK, STATUS_REJECTED
from mmcurate.schemas.tables import DECISIONS, DOCUMENTS, IMAGES, PAIRS, PROVENANCE_FIELDS, SCHEMAS, TABLES

PROV = Provenance("crawl-00001.warc.gz", "<urn:uuid:7>", "2024-05-06T07:08:09Z", 4096, 812)

SAMPLES = {
    DOCUMENTS: Document("d1", "https://example.org/", PROV, nodes=(TextNode("Hello there."),), signals={"a": 1.0}),
    DECISIONS: Decision("d1", "https://example.org/", "heuristics", "rejected", "gopher.too_few_words", PROV, 3.0, 50.0),
    IMAGES: ImageRow("ab" * 32, ("https://img.example/a.png",), STATUS_OK, source="warc", width=4, height=3, provenance=PROV),
    PAIRS: PairRow("https://img.example/a.png", "A red kite", "alt", "d1", "https://example.org/", PROV, image_id="ab" * 32),
}


def test_every_table_has_a_typed_row():
    assert set(ROW_TYPES) == set(TABLES) == set(SAMPLES)


@pytest.mark.parametrize("table", TABLES)
def test_arrow_row_has_exactly_the_tables_columns(table):
    assert set(to_arrow_row(SAMPLES[table])) == set(SCHEMAS[table].names)


@pytest.mark.parametrize("table", TABLES)
def test_arrow_row_converts_back_to_the_same_record(table):
    record = SAMPLES[table]
    assert from_arrow_row(table, to_arrow_row(record)) == record
    arrow = records_to_table([record], table)
    assert arrow.schema.equals(SCHEMAS[table])
    assert table_to_records(arrow, table) == [record]


def test_typed_row_fields_are_the_column_names_in_order():
    """Every column but the provenance ones (and pairs.sha256, which is image_id) is
    a field of the same name, so a column added to a schema needs its field."""
    provenance = [f.name for f in PROVENANCE_FIELDS]
    for row_type, table in ((ImageRow, IMAGES), (PairRow, PAIRS)):
        columns = [c for c in SCHEMAS[table].names if c not in provenance and c != "sha256"]
        names = [f.name for f in dataclasses.fields(row_type) if f.name != "provenance"]
        assert sorted(names) == sorted(columns), table
    assert [f.name for f in dataclasses.fields(ImageRow)][:-1] == [
        c for c in SCHEMAS[IMAGES].names if c not in provenance
    ]


def test_one_provenance_mapping_for_every_table():
    columns = provenance_columns(PROV)
    assert list(columns) == [f.name for f in PROVENANCE_FIELDS]
    assert provenance_from_columns(columns) == PROV
    # every field of Provenance has its column: a new field without one fails here
    # Every field but the first phase's range stamp (stages/range_staging.py) is a column.
    assert [name for _, name in PROVENANCE_COLUMNS] == [f.name for f in dataclasses.fields(Provenance) if f.name != "range"]
    for table in TABLES:
        assert SCHEMAS[table].names[-len(PROVENANCE_FIELDS):] == list(columns), table
        row = to_arrow_row(SAMPLES[table])
        assert {k: row[k] for k in columns} == columns


def test_an_http_image_has_empty_provenance():
    row = to_arrow_row(ImageRow(None, ["https://img.example/x.jpg"], STATUS_FAILED, reason="image.not_captured"))
    assert (row["warc_file"], row["warc_record_id"], row["warc_offset"], row["warc_length"]) == ("", "", -1, -1)
    assert row["urls"] == ["https://img.example/x.jpg"]
    assert from_arrow_row(IMAGES, row).provenance == NO_PROVENANCE


def test_pairs_sha256_is_the_image_id():
    row = to_arrow_row(SAMPLES[PAIRS])
    assert row["sha256"] == row["image_id"] == "ab" * 32


def test_retrieved_means_status_ok_with_an_id():
    assert SAMPLES[IMAGES].retrieved
    assert not ImageRow(None, ("u",), STATUS_OK).retrieved
    assert not ImageRow("cd" * 32, ("u",), STATUS_REJECTED, reason="image.too_frequent").retrieved


def test_image_row_refuses_an_unknown_status_or_source():
    with pytest.raises(ValueError, match="status"):
        ImageRow(None, ("u",), "OK")
    with pytest.raises(ValueError, match="source"):
        ImageRow(None, ("u",), STATUS_FAILED, source="cache")


def test_records_to_table_refuses_a_row_of_another_table():
    with pytest.raises(TypeError, match="ImageRow"):
        records_to_table([SAMPLES[PAIRS]], IMAGES)


def test_from_arrow_row_needs_every_column():
    row = to_arrow_row(SAMPLES[IMAGES])
    del row["phash"]
    with pytest.raises(KeyError):
        from_arrow_row(IMAGES, row)


def test_non_finite_figures_are_stored_as_null():
    decision = dataclasses.replace(SAMPLES[DECISIONS], value=float("nan"), threshold=float("inf"))
    row = records_to_table([decision], DECISIONS).to_pylist()[0]
    assert row["value"] is None and row["threshold"] is None
    assert pa.types.is_float64(SCHEMAS[DECISIONS].field("value").type)
