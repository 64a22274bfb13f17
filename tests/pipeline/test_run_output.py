"""``report`` and ``inspect`` on a URL-style output directory, through Beam's
FileSystems (a fake object store registered as ``mmfake://``, tests/fakefs.py)."""

from __future__ import annotations

import os
import shutil

import pytest

import fakefs
from mmcurate.pipeline import run_output
from mmcurate.pipeline.cli import main


@pytest.fixture()
def remote_run(report_run, tmp_path):
    out, ids = report_run
    store = tmp_path / "store"
    shutil.copytree(out, store / "bucket" / "curated", ignore=shutil.ignore_patterns("report.html"))
    fakefs.FakeObjectStore.root = store
    return "mmfake://bucket/curated", store / "bucket" / "curated", ids


def test_table_files_and_local_copy_go_through_filesystems(remote_run):
    url, local, _ = remote_run
    files = run_output.table_files(url, "documents")
    assert files and all(f.startswith("mmfake://bucket/curated/documents/") for f in files)
    with run_output.local_copy(url) as copy:
        assert copy != str(local) and (local / "manifest.json").read_bytes() == open(f"{copy}/manifest.json", "rb").read()
        copied = sorted(p.name for p in (local / "documents").glob("*.parquet"))
        assert sorted(p.rsplit("/", 1)[1] for p in files) == copied
    assert not os.path.exists(copy)  # the temporary copy is gone


def test_inspect_summary_sql_and_doc_on_a_remote_output(remote_run, capsys):
    url, _, ids = remote_run
    assert main(["inspect", url]) == 0
    out = capsys.readouterr().out
    assert "pages 5 = kept 2" in out and "documents (2 rows)" in out
    assert main(["inspect", url, "--sql", "SELECT count(*) AS n FROM documents"]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "2"
    assert main(["inspect", url, "--doc", ids["harbour"]]) == 0
    assert "https://news.example.org/harbour" in capsys.readouterr().out


def test_report_on_a_remote_output_is_written_there(remote_run, capsys):
    url, local, _ = remote_run
    assert main(["report", url]) == 0
    assert f"report: {url}/report.html" in capsys.readouterr().out
    page = (local / "report.html").read_text(encoding="utf-8")
    assert f"<code>{url}</code>" in page and "harbour" in page


def test_a_remote_directory_without_a_run_names_the_url(tmp_path, capsys):
    fakefs.FakeObjectStore.root = tmp_path
    (tmp_path / "bucket" / "empty").mkdir(parents=True)
    assert main(["report", "mmfake://bucket/empty"]) == 2
    assert "mmfake://bucket/empty has no manifest.json" in capsys.readouterr().err
    assert main(["inspect", "mmfake://bucket/empty"]) == 2
    assert "mmfake://bucket/empty has no manifest.json" in capsys.readouterr().err
