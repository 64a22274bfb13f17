"""The full pipeline through the portability layer, as Flink and Dataflow run it:
Beam's own local job service in a subprocess on 127.0.0.1, PortableRunner with
LOOPBACK workers, against the session's DirectRunner runs of the same WARC
(tests/conftest.py): the small WARC in ``make test``, the demo WARC in ``make test-slow``.

(Beam's Python job service has no PROCESS environment: it fails with
KeyError 'beam:env:process:v1', so PROCESS is for a Flink job server only.)
"""

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmcurate.pipeline.cli import main
from shared_runs import SMALL_STAGES, run_outcome

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "demo.warc.gz"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def job_service():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the job service did not start")
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def assert_portable_run(inputs, direct: Path, job_service: str, out: Path, *extra: str) -> None:
    args = ["run", *map(str, inputs), "-o", str(out), "--runner-preset", "portable", "--quiet", *extra]
    assert main(args + ["--runner-opt", f"endpoint={job_service}", "--runner-opt", "environment=LOOPBACK"]) == 0
    kept, rows, manifest = run_outcome(out)
    want_kept, want_rows, want = run_outcome(direct)
    assert kept == want_kept and len(kept) > 0
    assert rows == want_rows
    assert manifest["runner"] == "PortableRunner"
    assert manifest["totals"] == want["totals"] and manifest["totals"]["conserved"]
    assert manifest["counters_source"] == "runner metrics"
    assert manifest["records"] == want["records"]
    assert manifest["counter_mismatches"] == []


@pytest.mark.slow
def test_portable_loopback_gives_the_same_ids_rows_and_counts(demo_run, job_service, tmp_path):
    assert_portable_run([DEMO], demo_run.output, job_service, tmp_path / "portable")


def test_portable_loopback_on_a_small_warc_gives_the_same_ids_rows_and_counts(small_run, job_service, tmp_path):
    """The quick check of the portability layer (the demo WARC's run above is slow)."""
    assert_portable_run(small_run.inputs, small_run.output, job_service, tmp_path / "portable", "--stages", SMALL_STAGES)
