"""The full pipeline on a real distributed engine: a dask.distributed LocalCluster
(2 worker processes on 127.0.0.1) through the ``dask`` preset, against DirectRunner."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mmcurate.pipeline.cli import main

distributed = pytest.importorskip("distributed")

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "demo.warc.gz"


def outcome(out: Path):
    """(kept ids, decision rows, totals) of a finished run."""
    kept = sorted(pq.read_table(out / "documents").column("doc_id").to_pylist())
    rows = sorted(
        (r["doc_id"], r["stage"], r["kind"], r["reason"])
        for r in pq.read_table(out / "decisions", columns=["doc_id", "stage", "kind", "reason"]).to_pylist()
    )
    manifest = json.loads((out / "manifest.json").read_text())
    return kept, rows, manifest


@pytest.fixture(scope="module")
def direct(tmp_path_factory):
    out = tmp_path_factory.mktemp("direct")
    assert main(["run", str(DEMO), "--output", str(out), "--runner-preset", "direct", "--quiet"]) == 0
    return outcome(out)


@pytest.fixture(scope="module")
def cluster():
    import dask

    # The extract stage runs each page in a child process (its time limit); dask's
    # worker processes are daemons, which may not have children, unless told so.
    with dask.config.set({"distributed.worker.daemon": False}), distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        yield cluster


def test_dask_cluster_gives_the_same_ids_rows_and_counts(direct, cluster, tmp_path):
    out = tmp_path / "out"
    args = ["run", str(DEMO), "--output", str(out), "--runner-preset", "dask", "--quiet"]
    assert main(args + ["--runner-opt", f"address={cluster.scheduler_address}"]) == 0
    kept, rows, manifest = outcome(out)
    want_kept, want_rows, want = direct
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
