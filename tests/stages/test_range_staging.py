"""Staging per input range (stages/range_staging.py), driven directly: a range is
marked finished only when every record of it was staged into its own files, also
when a record of it reaches a stager after its reading ended or on another thread
(what a rerun would otherwise skip, the record living only in the dead run's loose
output)."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from mmcurate.schemas import KIND_REJECTED, SUBJECT_IMAGE, Decision, Document, Page, Provenance
from mmcurate.stages.engines import staging_files as sf
from mmcurate.stages.engines.staging_files import record_key
from mmcurate.stages.range_staging import DECISIONS, DOCS, RangeStaging, StageRecordsFn, staged_row, without_document

WARC = "/w/a.warc.gz"
FIRST = (WARC, 0, 1000)
SECOND = (WARC, 1000, -1)


class _Counter:
    def __init__(self):
        self.value = 0

    def inc(self) -> None:
        self.value += 1


def _staging(phase: Path) -> RangeStaging:
    return RangeStaging(str(phase), {DOCS: str(phase / DOCS), DECISIONS: str(phase / DECISIONS)}, {}, needs_captured=False)


def _page(offset: int) -> Page:
    return Page(f"p{offset}", f"http://x/{offset}", "<p>text</p>", Provenance(WARC, offset=offset))


def _document(page: Page) -> Document:
    return Document(page.doc_id, page.url, page.provenance)


def _image_row(offset: int) -> Decision:
    """The decision row of an image node taken out of the page at ``offset``."""
    return Decision(
        f"img{offset}", f"http://x/{offset}.png", "safety", KIND_REJECTED, "url.blocklisted_domain",
        Provenance(WARC, offset=offset), detail=f"document p{offset}", subject=SUBJECT_IMAGE,
    )


def _stagers(phase: Path) -> tuple[StageRecordsFn, StageRecordsFn]:
    docs = StageRecordsFn(str(phase), DOCS, staged_row(record_key))
    decisions = StageRecordsFn(str(phase), DECISIONS, staged_row(lambda d: d.doc_id), without_document)
    return docs, decisions


def _read(phase: Path, chunk, offsets, during=None) -> None:
    """Reads ``chunk``'s pages at ``offsets``, each page's document staged as it is
    read (as the fused steps of a run stage it); ``during()`` runs after the first."""
    docs, _ = _stagers(phase)
    pages = [_page(o) for o in offsets]
    for i, page in enumerate(_staging(phase).staged(chunk, iter(pages), _Counter())):
        assert list(docs.process(_document(page))) == []
        if i == 0 and during is not None:
            during()


def _marked(phase: Path) -> list[list]:
    return sorted(m["range"] for m in sf.finished_ranges(FileSystems, str(phase)).values())


def test_a_range_whose_records_were_all_staged_is_marked_with_its_rows_keyed(tmp_path):
    phase = tmp_path / "0-read"
    _read(phase, FIRST, [10, 20])
    assert _marked(phase) == [list(FIRST)]
    staged = pq.read_table(sf.range_file(FileSystems, str(phase / DOCS), sf.range_id(*FIRST))).column("key").to_pylist()
    assert staged == [record_key(_document(_page(10))), record_key(_document(_page(20)))]


def test_a_row_staged_after_its_range_was_read_unmarks_the_range_so_a_rerun_reads_it_again(tmp_path):
    phase = tmp_path / "0-read"
    _read(phase, FIRST, [10, 20])
    assert _marked(phase) == [list(FIRST)]
    _, decisions = _stagers(phase)
    late = _image_row(20)
    assert list(decisions.process(late)) == [late]  # to Beam's sink (loose)
    assert _marked(phase) == []
    # What a rerun of a run killed now would do: the range's files go, it is read again.
    stale = sf.stale_files(FileSystems, str(phase), (DOCS, DECISIONS), sf.finished_ranges(FileSystems, str(phase)))
    assert stale == [sf.range_file(FileSystems, str(phase / DOCS), sf.range_id(*FIRST))]


def test_a_late_row_arriving_while_another_range_is_read_leaves_neither_marked(tmp_path):
    phase = tmp_path / "0-read"
    _, decisions = _stagers(phase)
    late = _image_row(20)
    loose = []
    _read(phase, FIRST, [10, 20])
    _read(phase, SECOND, [1010, 1020], during=lambda: loose.extend(decisions.process(late)))
    assert loose == [late]
    assert _marked(phase) == []


def test_a_row_staged_on_another_thread_while_its_range_is_read_keeps_the_range_unmarked(tmp_path):
    phase = tmp_path / "0-read"
    _, decisions = _stagers(phase)
    row = _image_row(10)
    loose = []

    def elsewhere():
        worker = threading.Thread(target=lambda: loose.extend(decisions.process(row)))
        worker.start()
        worker.join()

    _read(phase, FIRST, [10, 20], during=elsewhere)
    assert loose == [row]
    assert _marked(phase) == []
    _read(phase, SECOND, [1010])  # a range of its own, untouched, is still marked
    assert _marked(phase) == [list(SECOND)]


class _Files:
    """What the ledger reads of a range's files."""

    def __init__(self, phase: Path, chunk):
        self.phase_dir = str(phase)
        self.path, self.start, self.end = chunk

    def owns(self, warc_file: str, offset: int) -> bool:
        return sf.in_range((self.path, self.start, self.end), warc_file, offset)


class _Done:
    def __init__(self, files: _Files):
        self.files = files

    def complete(self) -> bool:
        return True


def test_a_range_is_finished_outside_the_lock_and_a_row_spilled_meanwhile_waits_for_its_marker(tmp_path):
    """Finishing one range (its files and marker, remote on a cluster) holds up no other
    thread; a row of it spilled while it finishes returns only once the marker that
    finish wrote is gone."""
    from mmcurate.stages.range_staging import _Ledger

    ledger = _Ledger()
    phase = tmp_path / "0-read"
    marker = Path(sf.marker_path(FileSystems, str(phase), sf.range_id(*FIRST)))
    writing, release = threading.Event(), threading.Event()

    def finish(complete: bool) -> None:
        assert complete
        writing.set()
        release.wait(10)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("{}")

    first = _Done(_Files(phase, FIRST))
    ledger.begin(first)
    ending = threading.Thread(target=ledger.end, args=(first, finish))
    ending.start()
    assert writing.wait(10)
    other = _Done(_Files(phase, SECOND))
    ledger.begin(other)  # the lock is free while the first range finishes
    spilled = threading.Event()
    spilling = threading.Thread(target=lambda: (ledger.spill(str(phase), WARC, 10), spilled.set()))
    spilling.start()
    assert not spilled.wait(0.3)  # it waits for the marker being written
    release.set()
    ending.join(10)
    spilling.join(10)
    assert spilled.is_set() and not marker.exists()
    ledger.end(other, lambda complete: None)
