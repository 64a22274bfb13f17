"""The full pipeline on a real distributed engine: a dask.distributed LocalCluster
(2 worker processes on 127.0.0.1) through the ``dask`` preset, against the session's
DirectRunner runs (tests/conftest.py): the small WARC in ``make test``, the demo WARC
in ``make test-slow``."""

from pathlib import Path

import pytest

from mmcurate.pipeline.cli import main
from shared_runs import SMALL_STAGES, run_outcome

distributed = pytest.importorskip("distributed")

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "demo.warc.gz"




@pytest.fixture(scope="module")
def cluster():
    import dask

    # The extract stage runs each page in a child process (its time limit); dask's
    # worker processes are daemons, which may not have children, unless told so.
    with dask.config.set({"distributed.worker.daemon": False}), distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        yield cluster


def assert_same_as_direct(out: Path, direct: Path) -> None:
    kept, rows, manifest = run_outcome(out)
    want_kept, want_rows, want = run_outcome(direct)
    assert kept == want_kept and len(kept) > 0
    assert rows == want_rows
    assert manifest["totals"] == want["totals"] and manifest["totals"]["conserved"]
    assert manifest["runner"].endswith("DaskRunner")
    # DaskRunner collects no metrics: the funnel comes from the rows, and says so.
    assert manifest["counters_source"].startswith("output rows")
    for stage, entry in want["stages"].items():
        if entry.get("enabled"):
            for key in ("in", "kept", "rejected", "errors", "rejected_by_reason", "errors_by_type"):
                assert manifest["stages"][stage][key] == entry[key], (stage, key)
    assert manifest["counter_mismatches"] == []


def dask_run(inputs, out: Path, cluster, *extra: str) -> None:
    args = ["run", *map(str, inputs), "--output", str(out), "--runner-preset", "dask", "--quiet", *extra]
    assert main(args + ["--runner-opt", f"address={cluster.scheduler_address}"]) == 0


@pytest.mark.slow
def test_dask_cluster_gives_the_same_ids_rows_and_counts(demo_run, cluster, tmp_path):
    dask_run([DEMO], tmp_path / "out", cluster)
    assert_same_as_direct(tmp_path / "out", demo_run.output)


def test_dask_cluster_on_a_small_warc_gives_the_same_ids_rows_and_counts(small_run, cluster, tmp_path):
    """The quick check of the Dask path (the demo WARC's run above is slow)."""
    dask_run(small_run.inputs, tmp_path / "out", cluster, "--stages", SMALL_STAGES)
    assert_same_as_direct(tmp_path / "out", small_run.output)



def _note(value, directory: str) -> None:
    Path(directory, f"{value}").write_text("")


def test_beams_own_dask_runner_still_hands_every_output_of_a_pardo_to_each_consumer(cluster, tmp_path):
    """Why runners/dask_runner.py exists: Beam's DaskRunner (2.77) drops the tags of a
    ParDo's outputs, so a consumer of one tagged output sees the main output too. When
    this fails, Beam has fixed it: the module's ParDo translation can go."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.dask.dask_runner import DaskRunner as BeamsDaskRunner

    class SplitFn(beam.DoFn):
        def process(self, n):
            yield n if n % 2 else beam.pvalue.TaggedOutput("even", n)

    options = PipelineOptions([f"--dask_client_address={cluster.scheduler_address}"])
    p = beam.Pipeline(runner=BeamsDaskRunner(), options=options)
    split = p | beam.Create(range(6)) | beam.ParDo(SplitFn()).with_outputs("even", main="odd")
    _ = split["even"] | beam.Map(_note, str(tmp_path))
    p.run().wait_until_finish()
    seen = sorted(int(f.name) for f in tmp_path.iterdir())
    assert seen == [0, 1, 2, 3, 4, 5], seen  # the evens alone, once Beam keeps the tags
