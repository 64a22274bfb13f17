"""The live progress line (pipeline/progress.py): what workers count and how the
launcher renders it. A whole run's progress is checked in test_run_scale.py."""

import io
import time

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from mmcurate.pipeline import progress
from mmcurate.schemas import KIND_ERROR, KIND_REJECTED, SUBJECT_IMAGE, SUBJECT_PAGE, Decision, Provenance


def monitor(total_bytes=4_000_000, **messages) -> progress.ProgressMonitor:
    m = progress.ProgressMonitor(total_bytes=total_bytes, run_id="r", out=io.StringIO())
    m._socket.close()
    m._started = time.monotonic() - 10
    m.latest = messages
    return m


def test_line_gives_each_stage_in_and_kept_summed_over_workers_with_share_and_eta():
    m = monitor(
        a={"counts": {"read.kept": 25, "read.rejected": 5, "extract.kept": 20, "extract.errors": 5}, "bytes": 1_000_000},
        b={"counts": {"read.kept": 10, "extract.kept": 9, "heuristics.kept": 4, "heuristics.rejected": 3}, "bytes": 1_000_000},
    )
    assert m.line() == (
        "read 40 pages (50% of 4.0 MB, ETA 10s) | extract 34->29 | heuristics 7->4 | 4.0 pages/s, 10s elapsed"
    )


def test_line_gives_write_its_documents_and_no_share_without_a_size():
    m = monitor(0, a={"counts": {"read.kept": 3, "extract.kept": 3, "write.kept": 2}, "bytes": 0})
    assert m.line().startswith("read 3 pages | extract 3->3 | write 2 | ")


def test_stage_figures_follow_the_funnel_order():
    counts = {"quality.kept": 1, "dedup.kept": 2, "dedup.rejected": 1, "heuristics.errors": 2, "heuristics.kept": 3}
    assert list(progress.stage_figures(counts).items()) == [("heuristics", (5, 3)), ("dedup", (3, 2)), ("quality", (1, 1))]


def test_span_counts_records_and_the_small_gaps_between_them_once():
    span = progress._Span()
    span.add("a.warc", 1000, 1100, gap=500)
    span.add("a.warc", 0, 100, gap=500)  # out of order, far: its own range
    assert span.total == 200
    span.add("a.warc", 1300, 1400, gap=500)  # skipped records 1100..1300 were read
    assert span.total == 100 + 400
    span.add("a.warc", 1050, 1350, gap=500)  # read again (a retried bundle): nothing new
    assert span.total == 500
    span.add("a.warc", 450, 600, gap=500)  # joins both ranges
    assert span.total == 1400
    span.add("b.warc", 0, 10, gap=0)
    span.add("b.warc", 20, 30, gap=0)  # an index read: only the records themselves
    assert span.total == 1420


def decision(stage, kind, subject=SUBJECT_PAGE, offset=0, length=10):
    return Decision(
        doc_id=f"{stage}-{kind}-{subject}-{offset}",
        url="",
        stage=stage,
        kind=kind,
        reason="x",
        provenance=Provenance("f.warc", offset=offset, length=length),
        subject=subject,
    )


def test_count_fn_passes_everything_through_and_tallies_page_decisions_by_their_stage(monkeypatch):
    sent = []
    monkeypatch.setenv(progress.ENV, "127.0.0.1:9/test-run")
    monkeypatch.setattr(progress._Reporter, "send", lambda self: sent.append(dict(self.counts)))
    monkeypatch.setattr(progress, "_reporter", None)
    rows = [
        decision("extract", KIND_REJECTED),
        decision("extract", KIND_ERROR, offset=10),
        decision("images", KIND_REJECTED, SUBJECT_IMAGE, offset=20),
    ]
    with TestPipeline() as p:
        out = p | beam.Create(rows) | "Count" >> beam.ParDo(progress.CountFn(read_gap=0))
        assert_that(out, equal_to(rows))
    reporter = progress._current()
    assert dict(reporter.counts) == {"extract.rejected": 1, "extract.errors": 1}
    assert reporter.span.total == 30 and sent  # every row's bytes; sent at the bundle's end


def test_count_fn_does_nothing_without_a_launcher(monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.setattr(progress, "_reporter", None)
    assert list(progress.CountFn("heuristics").process("doc")) == ["doc"]
    assert progress._reporter is None
