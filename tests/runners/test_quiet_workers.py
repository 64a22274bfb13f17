"""The local preset's worker processes do not repeat Beam's start-up notices."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mmcurate.runners.quiet_workers import uses_worker_processes, wanted

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "fixtures" / "warc" / "demo.warc.gz"
FORWARDED = (
    "2026-12-01 08:53:49,958 WARNING apache_beam.runners.portability.local_job_service: Worker: severity: WARN "
    "timestamp {   seconds: 1796115229 } message: \"Discarding unparseable args: [\\'--pipeline_type_check\\', "
    "\\'--direct_runner_use_stacked_bundle\\']\" log_location: \"pipeline_options.py:570\""
)


@pytest.mark.parametrize(
    "line, keep",
    [
        (b"WARNING:root:apitools not found, and bigquery client libraries are not available despite the import", False),
        (FORWARDED.encode(), False),
        (b"WARNING:apache_beam.options.pipeline_options:Discarding unparseable args: ['--direct_runner_use_stacked_bundle', '--pipeline_type_check']", False),
        (b"WARNING:__main__:No semi_persistent_directory found:  User registered objects", False),
        (b"INFO:__main__:Logging handler created.", False),
        # A flag the harness cannot place that the user gave: kept.
        (b"WARNING:apache_beam.options.pipeline_options:Discarding unparseable args: ['--my_typo_flag']", True),
        (b"2026-12-01 WARNING mmcurate.stages.images: 3 images failed", True),
    ],
)
def test_noise_and_what_is_kept(line, keep):
    assert wanted(line) is keep


def test_only_worker_processes_are_quietened():
    assert uses_worker_processes(["--runner=DirectRunner", "--direct_running_mode=multi_processing"])
    assert uses_worker_processes(["--direct_running_mode", "multi_processing"])
    assert not uses_worker_processes(["--direct_running_mode=in_memory"])


def test_child_processes_stderr_is_filtered_and_the_rest_passes(tmp_path):
    script = textwrap.dedent(
        """
        import subprocess, sys
        from mmcurate.runners.quiet_workers import QuietWorkerStartup
        child = (
            "import sys\\n"
            "for _ in range(3):\\n"
            "    print('WARNING:root:apitools not found, and bigquery client libraries are not available', file=sys.stderr)\\n"
            "    print('INFO:__main__:Logging handler created.', file=sys.stderr)\\n"
            "print('a worker error that matters', file=sys.stderr)\\n"
        )
        with QuietWorkerStartup() as quiet:
            sys.stderr.write("progress 50%\\r")
            sys.stderr.flush()
            subprocess.run([sys.executable, "-c", child], check=True)
            print("WARNING:root:apitools not found, and bigquery client libraries are not available", file=sys.stderr)
        print(f"dropped {quiet.dropped}")
        print("after the run", file=sys.stderr)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == b"dropped 7"
    assert done.stderr == b"progress 50%\ra worker error that matters\nafter the run\n"


@pytest.mark.slow
def test_a_local_preset_run_prints_no_start_up_notices(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "mmcurate.pipeline.cli", "run", str(DEMO), "-o", str(tmp_path / "out"),
         "--runner-preset", "local", "--runner-opt", "workers=2", "--quiet"],
        capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    for notice in ("apitools not found", "Discarding unparseable args", "semi_persistent_directory", "Logging handler created"):
        assert notice not in run.stderr, run.stderr[-2000:]
    assert "pages 17 = kept" in run.stdout
