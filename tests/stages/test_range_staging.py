"""Staging per input range (stages/range_staging.py), driven directly: each output's
``StageRecordsFn`` writes runs of one range's records into files of their own, named
by range, output and first record, with the rows they hold in their footer; a rerun
(``finish_ranges``) keeps a range only when its read record is there and its files
hold every page it read, and removes everything else."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas import KIND_REJECTED, SUBJECT_IMAGE, Decision, Document, Provenance
from mmcurate.stages.engines import staging_files as sf
from mmcurate.stages.engines.staging_files import record_key
from mmcurate.stages.range_staging import (
    DECISIONS,
    DOCS,
    RangeStaging,
    StageRecordsFn,
    finish_ranges,
    whole_ranges,
    without_document,
)

WARC = "/w/a.warc.gz"
FIRST = (WARC, 0, 1000)
SECOND = (WARC, 1000, -1)
CHAIN = ("read", "extract", "heuristics")
TABLES = (DOCS, DECISIONS)


def _staging(phase: Path) -> RangeStaging:
    return RangeStaging(str(phase), {DOCS: str(phase / DOCS), DECISIONS: str(phase / DECISIONS)}, {}, needs_captured=False)


def _stagers(phase: Path) -> tuple[StageRecordsFn, StageRecordsFn]:
    docs = StageRecordsFn(_staging(phase), DOCS, "documents", lambda r: sf.to_row(r, key=record_key))
    rows = StageRecordsFn(_staging(phase), DECISIONS, "decisions0", lambda r: sf.to_row(r, key=lambda d: d.doc_id),
                          without_document)
    for fn in (docs, rows):
        fn.start_bundle()
    return docs, rows


def _prov(chunk, offset: int) -> Provenance:
    return Provenance(WARC, offset=offset, range=chunk[1:])


def _document(chunk, offset: int) -> Document:
    return Document(f"p{offset}", f"http://x/{offset}", _prov(chunk, offset))


def _page_row(chunk, offset: int, document=None) -> Decision:
    return Decision(f"p{offset}", f"http://x/{offset}", "heuristics", KIND_REJECTED, "gopher.too_few_words",
                    _prov(chunk, offset), document=document)


def _image_row(chunk, offset: int) -> Decision:
    return Decision(f"img{offset}", f"http://x/{offset}.png", "extract", KIND_REJECTED, "url.blocklisted_domain",
                    _prov(chunk, offset), subject=SUBJECT_IMAGE)


def _read_record(phase: Path, chunk, pages: int) -> None:
    """What the staged reader writes once it has read ``chunk``."""
    sf.write_marker(FileSystems, sf.read_record_path(FileSystems, str(phase), sf.range_id(*chunk)),
                    {"range": list(chunk), "pages": pages, "captured": 0,
                     "counters": [["read", "pages", pages], ["read", "records.response", pages]]})


def _feed(fn: StageRecordsFn, records) -> list:
    return [out for record in records for out in fn.process(record)]


def _files(phase: Path, table: str) -> list[str]:
    return [p.rsplit("/", 1)[-1] for p in sf.staged_files(FileSystems, str(phase / table))]


def _name(chunk, output: str, record) -> str:
    """The file a run starting with ``record`` goes to: its offset and a digest of the pickled record."""
    digest = hashlib.sha1(sf.to_row(record, key=record_key)["record"]).hexdigest()[:8]
    return f"r-{sf.range_id(*chunk)}-{output}-{record.provenance.offset}-{digest}.parquet"


def test_a_run_of_one_ranges_records_goes_in_place_when_the_next_range_begins(tmp_path):
    phase = tmp_path / "0-read"
    docs, _ = _stagers(phase)
    assert _feed(docs, [_document(FIRST, 10), _document(FIRST, 20)]) == []
    assert _files(phase, DOCS) == []  # still being written, under a temporary name
    _feed(docs, [_document(SECOND, 1010)])
    first = _name(FIRST, "documents", _document(FIRST, 10))
    assert _files(phase, DOCS) == [first]
    keys = pq.read_table(phase / DOCS / first).column("key").to_pylist()
    assert keys == [record_key(_document(FIRST, 10)), record_key(_document(FIRST, 20))]
    docs.finish_bundle()
    assert _files(phase, DOCS) == sorted([first, _name(SECOND, "documents", _document(SECOND, 1010))])


def test_a_range_whose_files_hold_every_page_it_read_is_finished_with_its_counters(tmp_path):
    phase = tmp_path / "0-read"
    docs, rows = _stagers(phase)
    _feed(docs, [_document(FIRST, 10)])
    _feed(rows, [_page_row(FIRST, 20, document=_document(FIRST, 20)), _image_row(FIRST, 10)])
    docs.finish_bundle()
    rows.finish_bundle()
    _read_record(phase, FIRST, 2)
    [(rid, marker)] = finish_ranges(str(phase), TABLES, False, CHAIN).items()
    assert rid == sf.range_id(*FIRST) and marker["pages"] == 2 and marker["tables"] == {DECISIONS: 2, DOCS: 1}
    assert {(ns, name): v for ns, name, v in marker["counters"]} == {
        ("read", "pages"): 2, ("read", "records.response"): 2, ("read", "kept"): 2, ("extract", "kept"): 2,
        ("heuristics", "rejected.gopher.too_few_words"): 1, ("heuristics", "kept"): 1,
    }
    assert sf.finished_ranges(FileSystems, str(phase)) == {rid: marker}
    # The rejected document a decision row carried was not staged.
    [path] = sf.staged_files(FileSystems, str(phase / DECISIONS))
    staged = list(sf.read_unit(FileSystems, f"0:{path}"))
    assert [r.document for r in staged] == [None, None]


def test_a_range_short_of_a_page_is_removed_with_its_read_record_to_be_read_again(tmp_path):
    phase = tmp_path / "0-read"
    docs, _ = _stagers(phase)
    _feed(docs, [_document(FIRST, 10), _document(SECOND, 1010)])
    docs.finish_bundle()
    _read_record(phase, FIRST, 2)  # a page of it never reached its files: the run was killed
    _read_record(phase, SECOND, 1)
    assert list(whole_ranges(str(phase), TABLES, False, CHAIN)[0]) == [sf.range_id(*SECOND)]
    finished = finish_ranges(str(phase), TABLES, False, CHAIN)
    assert list(finished) == [sf.range_id(*SECOND)]
    assert _files(phase, DOCS) == [_name(SECOND, "documents", _document(SECOND, 1010))]
    assert list(sf.read_records(FileSystems, str(phase))) == [sf.range_id(*SECOND)]


def test_files_of_a_range_never_read_to_its_end_are_removed(tmp_path):
    phase = tmp_path / "0-read"
    docs, _ = _stagers(phase)
    _feed(docs, [_document(FIRST, 10)])
    docs.finish_bundle()  # no read record: the reader was killed inside the range
    assert finish_ranges(str(phase), TABLES, False, CHAIN) == {}
    assert _files(phase, DOCS) == []


def test_a_record_no_staged_reader_stamped_goes_on_to_beams_sink(tmp_path):
    phase = tmp_path / "0-read"
    docs, _ = _stagers(phase)
    loose = Document("p1", "http://x/1", Provenance(WARC, offset=1))
    assert _feed(docs, [loose]) == [loose]
    docs.finish_bundle()
    assert _files(phase, DOCS) == []


def test_a_retried_bundle_replaces_its_files_instead_of_adding_to_them(tmp_path):
    phase = tmp_path / "0-read"
    for _ in range(2):
        docs, _ = _stagers(phase)
        _feed(docs, [_document(FIRST, 10), _document(FIRST, 20)])
        docs.finish_bundle()
    _read_record(phase, FIRST, 2)
    assert _files(phase, DOCS) == [_name(FIRST, "documents", _document(FIRST, 10))]
    assert list(finish_ranges(str(phase), TABLES, False, CHAIN)) == [sf.range_id(*FIRST)]


def test_two_runs_of_one_range_that_start_at_the_same_offset_keep_both_files(tmp_path):
    """A page's image row and its page row share the page's offset; a run of another
    range between them (a stage that batches) must not make the second run's file
    replace the first's."""
    phase = tmp_path / "0-read"
    _, rows = _stagers(phase)
    _feed(rows, [_image_row(FIRST, 10), _page_row(SECOND, 1010), _page_row(FIRST, 10)])
    rows.finish_bundle()
    _read_record(phase, FIRST, 1)
    _read_record(phase, SECOND, 1)
    assert len(_files(phase, DECISIONS)) == 3
    assert sorted(finish_ranges(str(phase), TABLES, False, CHAIN)) == sorted([sf.range_id(*FIRST), sf.range_id(*SECOND)])
