"""Staging files on disk (stages/engines/staging_files.py): an input range's files
and marker, what a rerun keeps and removes, units read back, and join keys."""

from __future__ import annotations

from pathlib import Path

from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas import Provenance
from mmcurate.schemas.document import CapturedImage
from mmcurate.stages.engines import staging_files as sf

TABLES = ("docs", "decisions", "captured")


def _tables(phase: Path) -> dict[str, str]:
    return {t: str(phase / t) for t in TABLES}


def _image(path: str, offset: int) -> CapturedImage:
    return CapturedImage(f"http://x/{offset}.png", "image/png", b"png", Provenance(path, offset=offset))


def _row(image: CapturedImage) -> dict:
    return sf.to_row(image, lambda i: i.url)


def _part(phase: Path, table: str, path: str, offsets, output: str = "documents") -> str:
    final = sf.range_part(FileSystems, str(phase / table), sf.range_id(path, 0, -1), output, str(offsets[0]))
    writer = sf.TableWriter(FileSystems, final)
    for offset in offsets:
        writer.add(_row(_image(path, offset)))
    return final, writer


def test_a_range_part_is_whole_once_in_place_with_its_facts_in_the_footer(tmp_path):
    phase = tmp_path / "0-read"
    final, writer = _part(phase, "captured", "/w/a.warc.gz", [100 + i for i in range(sf.ROWS_PER_UNIT + 3)])
    # Before it is committed only a temporary name exists, which no reader lists.
    assert sf.staged_files(FileSystems, str(phase / "captured")) == []
    writer.commit({"pages": 0, "rows": []})
    assert sf.staged_files(FileSystems, str(phase / "captured")) == [final]
    units = list(sf.list_units(FileSystems, final))
    assert units == [f"0:{final}", f"1:{final}"]  # a row group per ROWS_PER_UNIT records
    images = [_image("/w/a.warc.gz", 100 + i) for i in range(sf.ROWS_PER_UNIT + 3)]
    assert [r for u in units for r in sf.read_unit(FileSystems, u)] == images
    [part] = sf.range_parts(FileSystems, str(phase), TABLES)[sf.range_id("/w/a.warc.gz", 0, -1)]
    assert (part.path, part.table, part.num_rows, part.pages) == (final, "captured", len(images), 0)
    assert sf.part_range_id(final) == sf.range_id("/w/a.warc.gz", 0, -1)


def test_a_rerun_removes_all_but_the_files_of_finished_ranges(tmp_path):
    phase = tmp_path / "0-read"
    kept, done = _part(phase, "docs", "/w/a.warc.gz", [5])
    done.commit({"pages": 1, "rows": []})
    _, other = _part(phase, "docs", "/w/b.warc.gz", [5])
    other.commit({"pages": 1, "rows": []})
    _part(phase, "decisions", "/w/c.warc.gz", [5], "decisions0")  # killed while writing: a temporary file
    (phase / "docs" / "part-00000-of-00001.parquet").write_bytes(b"")  # Beam's sink, for records outside ranges
    stale = sf.stale_files(FileSystems, str(phase), TABLES, {sf.range_id("/w/a.warc.gz", 0, -1)})
    listed = sorted(str(p) for p in phase.glob("*/*.parquet"))
    assert len(listed) == 4 and stale == sorted(p for p in listed if p != kept)


def test_markers_and_read_records_are_read_back_and_counters_summed(tmp_path):
    phase = tmp_path / "0-read"
    rid = sf.range_id("/w/a.warc.gz", 0, -1)
    marker = {"range": ["/w/a.warc.gz", 0, -1], "pages": 4, "counters": [["read", "pages", 4], ["extract", "kept", 3]]}
    sf.write_marker(FileSystems, sf.marker_path(FileSystems, str(phase), rid), marker)
    sf.write_marker(FileSystems, sf.read_record_path(FileSystems, str(phase), rid), {"pages": 4})
    assert sf.finished_ranges(FileSystems, str(phase)) == {rid: marker}
    assert sf.read_records(FileSystems, str(phase)) == {rid: {"pages": 4}}
    assert sf.summed_counters([marker, marker]) == {("read", "pages"): 8, ("extract", "kept"): 6}


def test_join_keys_sort_by_the_record_whichever_file_holds_it():
    a = sf.unit_key("0:/s/r-ffff.parquet", "d|10|/w/a.warc.gz")
    b = sf.unit_key("0:/s/r-0000.parquet", "d|10|/w/b.warc.gz")
    assert a < b
    assert sf.split_unit_key(a) == ("0:/s/r-ffff.parquet", "d|10|/w/a.warc.gz")
