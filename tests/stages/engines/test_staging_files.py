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


def test_a_finished_range_has_whole_files_and_a_marker_with_its_counters(tmp_path):
    phase = tmp_path / "0-read"
    files = sf.RangeFiles(FileSystems, str(phase), _tables(phase), ("/w/a.warc.gz", 100, 900))
    assert files.owns("/w/a.warc.gz", 100) and files.owns("/w/a.warc.gz", 899)
    assert not files.owns("/w/a.warc.gz", 900) and not files.owns("/w/a.warc.gz", 99) and not files.owns("/w/b", 500)
    images = [_image("/w/a.warc.gz", 100 + i) for i in range(sf.ROWS_PER_UNIT + 3)]
    for image in images:
        files.add("captured", _row(image))
    # Before the range is done only a temporary name exists, which no reader lists.
    assert sf.staged_files(FileSystems, str(phase / "captured")) == []
    files.finish(True, {("read", "pages"): 4, ("extract", "kept"): 3}, {"pages": 4, "captured": len(images)})

    final = sf.range_file(FileSystems, str(phase / "captured"), files.rid)
    assert sf.staged_files(FileSystems, str(phase / "captured")) == [final]
    units = list(sf.list_units(FileSystems, final))
    assert units == [f"0:{final}", f"1:{final}"]  # a row group per ROWS_PER_UNIT records
    assert [r for u in units for r in sf.read_unit(FileSystems, u)] == images
    markers = sf.finished_ranges(FileSystems, str(phase))
    assert list(markers) == [sf.range_id("/w/a.warc.gz", 100, 900)]
    marker = markers[files.rid]
    assert marker["range"] == ["/w/a.warc.gz", 100, 900] and marker["tables"] == {"captured": len(images)}
    assert marker["pages"] == 4
    assert sf.summed_counters([marker, marker]) == {("read", "pages"): 8, ("extract", "kept"): 6}


def test_a_rerun_removes_all_but_the_files_of_finished_ranges(tmp_path):
    phase = tmp_path / "0-read"
    done = sf.RangeFiles(FileSystems, str(phase), _tables(phase), ("/w/a.warc.gz", 0, -1))
    done.add("docs", _row(_image("/w/a.warc.gz", 5)))
    done.finish(True, {}, {})
    unmarked = sf.RangeFiles(FileSystems, str(phase), _tables(phase), ("/w/b.warc.gz", 0, -1))
    unmarked.add("docs", _row(_image("/w/b.warc.gz", 5)))
    unmarked.finish(False, {}, {})  # whole files, but not provably the whole range: no marker
    cut = sf.RangeFiles(FileSystems, str(phase), _tables(phase), ("/w/c.warc.gz", 0, -1))
    cut.add("decisions", _row(_image("/w/c.warc.gz", 5)))  # killed while reading: a temporary file
    (phase / "docs" / "part-00000-of-00001.parquet").write_bytes(b"")  # Beam's sink, for records outside ranges
    finished = sf.finished_ranges(FileSystems, str(phase))
    assert list(finished) == [done.rid]
    stale = sf.stale_files(FileSystems, str(phase), TABLES, finished)
    kept = sf.range_file(FileSystems, str(phase / "docs"), done.rid)
    listed = sorted(str(p) for p in phase.glob("*/*.parquet"))
    assert len(listed) == 4 and stale == sorted(p for p in listed if p != kept)


def test_a_range_read_again_replaces_its_earlier_files(tmp_path):
    phase = tmp_path / "0-read"
    first = sf.RangeFiles(FileSystems, str(phase), _tables(phase), ("/w/a.warc.gz", 0, -1))
    first.add("docs", _row(_image("/w/a.warc.gz", 1)))
    first.add("decisions", _row(_image("/w/a.warc.gz", 2)))
    first.finish(False, {}, {})
    again = sf.RangeFiles(FileSystems, str(phase), _tables(phase), ("/w/a.warc.gz", 0, -1))
    again.add("docs", _row(_image("/w/a.warc.gz", 3)))
    again.finish(True, {}, {})
    assert sf.staged_files(FileSystems, str(phase / "decisions")) == []
    (docs,) = sf.staged_files(FileSystems, str(phase / "docs"))
    assert [i.provenance.offset for u in sf.list_units(FileSystems, docs) for i in sf.read_unit(FileSystems, u)] == [3]


def test_join_keys_sort_by_the_record_whichever_file_holds_it():
    a = sf.unit_key("0:/s/r-ffff.parquet", "d|10|/w/a.warc.gz")
    b = sf.unit_key("0:/s/r-0000.parquet", "d|10|/w/b.warc.gz")
    assert a < b
    assert sf.split_unit_key(a) == ("0:/s/r-ffff.parquet", "d|10|/w/a.warc.gz")
