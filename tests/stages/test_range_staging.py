"""Staging per input range (stages/range_staging.py), driven directly: ``StageRangesFn``
marks a range finished only when, inside the bundle that opened it, every page its
closing edge counted was staged into the range's own files; records outside an open
range go on to Beam's sink, and a record of a range already marked removes the
marker (a rerun reads that range again)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from mmcurate.schemas import KIND_REJECTED, SUBJECT_IMAGE, SUBJECT_PAGE, Decision, Document, Provenance
from mmcurate.stages.engines import staging_files as sf
from mmcurate.stages.engines.staging_files import record_key
from mmcurate.stages.range_staging import (
    DECISIONS,
    DOCS,
    RangeEdge,
    RangeStaging,
    StageRangesFn,
    without_document,
)

WARC = "/w/a.warc.gz"
FIRST = (WARC, 0, 1000)
SECOND = (WARC, 1000, -1)
CHAIN = ("read", "extract", "heuristics")


def _stager(phase: Path) -> StageRangesFn:
    staging = RangeStaging(str(phase), {DOCS: str(phase / DOCS), DECISIONS: str(phase / DECISIONS)}, {}, needs_captured=False)
    rows = {DOCS: _row(record_key), DECISIONS: _row(lambda d: d.doc_id)}
    fn = StageRangesFn(staging, DOCS, rows, CHAIN, without_document)
    fn.setup()
    fn.start_bundle()
    return fn


def _row(key):
    return lambda record: sf.to_row(record, key=key)


def _document(offset: int) -> Document:
    return Document(f"p{offset}", f"http://x/{offset}", Provenance(WARC, offset=offset))


def _page_row(offset: int, stage: str = "heuristics", reason: str = "gopher.too_few_words") -> Decision:
    return Decision(f"p{offset}", f"http://x/{offset}", stage, KIND_REJECTED, reason, Provenance(WARC, offset=offset),
                    subject=SUBJECT_PAGE)


def _image_row(offset: int) -> Decision:
    """The decision row of an image node taken out of the page at ``offset``."""
    return Decision(
        f"img{offset}", f"http://x/{offset}.png", "extract", KIND_REJECTED, "url.blocklisted_domain",
        Provenance(WARC, offset=offset), detail=f"document p{offset}", subject=SUBJECT_IMAGE,
    )


def _feed(fn: StageRangesFn, items) -> list:
    out = []
    for item in items:
        out.extend(fn.process(item))
    return out


def _marked(phase: Path) -> dict[str, dict]:
    return {tuple(m["range"]): m for m in sf.finished_ranges(FileSystems, str(phase)).values()}


def _closed(chunk, pages: int) -> RangeEdge:
    return RangeEdge(chunk, True, pages, 0, (("read", "pages", pages), ("read", "records.response", pages)))


def test_a_range_whose_pages_all_arrived_is_marked_as_it_closes_with_its_rows_keyed_and_counted(tmp_path):
    phase = tmp_path / "0-read"
    fn = _stager(phase)
    loose = _feed(fn, [RangeEdge(FIRST), _document(10), _page_row(20), _image_row(10), _closed(FIRST, 2)])
    assert loose == []
    [(chunk, marker)] = _marked(phase).items()  # marked before the bundle ends
    assert chunk == FIRST and marker["pages"] == 2
    counters = {(ns, name): v for ns, name, v in marker["counters"]}
    assert counters == {
        ("read", "pages"): 2, ("read", "records.response"): 2, ("read", "kept"): 2, ("extract", "kept"): 2,
        ("heuristics", "rejected.gopher.too_few_words"): 1, ("heuristics", "kept"): 1,
    }
    staged = pq.read_table(sf.range_file(FileSystems, str(phase / DOCS), sf.range_id(*FIRST))).column("key").to_pylist()
    assert staged == [record_key(_document(10))]
    rows = pq.read_table(sf.range_file(FileSystems, str(phase / DECISIONS), sf.range_id(*FIRST))).column("key").to_pylist()
    assert rows == ["p20", "img10"]


def test_records_held_back_past_the_closing_edge_complete_the_range_when_they_arrive(tmp_path):
    phase = tmp_path / "0-read"
    fn = _stager(phase)
    _feed(fn, [RangeEdge(FIRST), _document(10), _closed(FIRST, 2)])
    assert _marked(phase) == {}
    _feed(fn, [_document(20)])  # a stage that batches lets it go later in the bundle
    assert list(_marked(phase)) == [FIRST]


def test_a_range_still_short_of_pages_when_its_bundle_ends_keeps_its_files_without_a_marker(tmp_path):
    phase = tmp_path / "0-read"
    fn = _stager(phase)
    _feed(fn, [RangeEdge(FIRST), _document(10), _closed(FIRST, 2)])
    fn.finish_bundle()
    assert _marked(phase) == {}
    # Its file is in place, read by the next phase; a rerun removes it and reads the range again.
    path = sf.range_file(FileSystems, str(phase / DOCS), sf.range_id(*FIRST))
    assert sf.staged_files(FileSystems, str(phase / DOCS)) == [path]
    assert sf.stale_files(FileSystems, str(phase), (DOCS, DECISIONS), {}) == [path]


def test_records_of_a_range_opened_in_another_bundle_go_on_to_beams_sink(tmp_path):
    phase = tmp_path / "0-read"
    fn = _stager(phase)
    doc, row = _document(1010), _page_row(1020)
    loose = _feed(fn, [doc, row, RangeEdge(SECOND), _closed(SECOND, 2)])
    assert [(o.tag, o.value) for o in loose] == [(DOCS, doc), (DECISIONS, row)]
    assert all(isinstance(o, TaggedOutput) for o in loose)
    fn.finish_bundle()
    assert _marked(phase) == {}


def test_a_record_of_a_marked_range_arriving_later_removes_the_marker(tmp_path):
    phase = tmp_path / "0-read"
    fn = _stager(phase)
    _feed(fn, [RangeEdge(FIRST), _document(10), _closed(FIRST, 1)])
    assert list(_marked(phase)) == [FIRST]
    late = _image_row(10)
    loose = _feed(fn, [late])
    assert [o.value for o in loose] == [late]
    assert _marked(phase) == {}


def test_two_ranges_open_at_once_each_take_their_own_records(tmp_path):
    phase = tmp_path / "0-read"
    fn = _stager(phase)
    _feed(fn, [RangeEdge(FIRST), RangeEdge(SECOND), _document(1010), _document(10), _closed(SECOND, 1)])
    assert list(_marked(phase)) == [SECOND]
    _feed(fn, [_closed(FIRST, 1)])
    assert sorted(_marked(phase)) == [FIRST, SECOND]
    for chunk, offset in ((FIRST, 10), (SECOND, 1010)):
        path = sf.range_file(FileSystems, str(phase / DOCS), sf.range_id(*chunk))
        assert pq.read_table(path).column("key").to_pylist() == [record_key(_document(offset))]


def test_the_rejected_document_a_decision_row_carries_is_not_staged(tmp_path):
    phase = tmp_path / "0-read"
    fn = _stager(phase)
    row = Decision("p10", "http://x/10", "heuristics", KIND_REJECTED, "gopher.too_few_words", Provenance(WARC, offset=10),
                   document=_document(10))
    _feed(fn, [RangeEdge(FIRST), row, _closed(FIRST, 1)])
    path = sf.range_file(FileSystems, str(phase / DECISIONS), sf.range_id(*FIRST))
    [record] = list(sf.read_unit(FileSystems, f"0:{path}"))
    assert record.document is None and record.reason == "gopher.too_few_words"
