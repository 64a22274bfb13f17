"""benchmarks/bench_web.py's inputs and its reading of each tool's outcomes: the
pages hold exactly the planned URLs (the hangless variant all but the hanging ones),
and each tool's answer for a URL is classified as the kind of failure it is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_web  # noqa: E402
from localweb import KIND_HANG, plan_web  # noqa: E402
from warcbuild import html_responses  # noqa: E402

from mmcurate.pipeline.config import ExtractConfig  # noqa: E402
from mmcurate.schemas import ImageNode  # noqa: E402
from mmcurate.stages.engines.extraction.trafilatura_adapter import extract_trafilatura  # noqa: E402


@pytest.mark.parametrize(
    "status, error, outcome",
    [
        ("success", None, "ok"),
        ("failed_to_download", "HTTP Error 404: Not Found", "http_404"),
        ("failed_to_download", "HTTP Error 500: Internal Server Error", "http_500"),
        ("failed_to_download", "The read operation timed out", "timeout"),
        ("failed_to_download", "<urlopen error timed out>", "timeout"),
        ("failed_to_download", "<urlopen error [Errno 111] Connection refused>", "refused"),
        ("failed_to_download", "<urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed>", "tls"),
        ("failed_to_resize", "cannot identify image", "other:cannot identify image"),
    ],
)
def test_img2dataset_outcomes(status, error, outcome):
    assert bench_web.i2d_outcome(status, error) == outcome


@pytest.mark.parametrize(
    "status, reason, value, detail, outcome",
    [
        ("ok", None, None, None, "ok"),
        ("failed", "image.http_status", 404.0, "HTTP 404", "http_404"),
        ("failed", "image.http_status", 500.0, "HTTP 500 after 2 attempts", "http_500"),
        ("failed", "image.timeout", None, "no complete answer within 10.0s", "timeout"),
        ("failed", "image.connection_failed", None,
         "ClientConnectorError: Cannot connect to host 127.10.1.28:26692 ssl:default [Connect call failed ('127.10.1.28', 26692)]",
         "refused"),
        ("rejected", "image.robots_disallowed", None,
         "robots.txt of http://127.10.1.28:26692 unreachable (ClientConnectorError: Cannot connect to host 127.10.1.28:26692 "
         "ssl:default [Connect call failed ('127.10.1.28', 26692)]): complete disallow, RFC 9309 2.3.1.4",
         "refused (robots.txt)"),
        ("rejected", "image.robots_disallowed", None, "robots.txt of http://127.10.0.5:1 disallows /private/3.jpg", "robots"),
        ("failed", "image.connection_failed", None, "ClientConnectorCertificateError: [SSL: CERTIFICATE_VERIFY_FAILED]", "tls"),
        ("failed", "image.host_given_up", None, "3 failures in a row", "host_given_up"),
    ],
)
def test_mmcurate_outcomes(status, reason, value, detail, outcome):
    assert bench_web.mm_outcome(status, reason, value, detail) == outcome


def test_the_pages_hold_the_planned_urls_and_extraction_finds_them_all(tmp_path):
    web = plan_web(300, 30, seed=2, http_port=20001, https_port=20002)
    pages = bench_web.pages_of(web, seed=2)
    assert [i for page in pages for i in page] == list(range(300))
    assert all(2 <= len(page) <= 30 for page in pages[:-1])
    warc, url_list, n = bench_web.write_inputs(web, pages, tmp_path)
    assert n == 300 and url_list.read_text().split() == [u.url for u in web.urls]
    found = []
    for url, payload, _, _ in html_responses(warc):
        nodes = extract_trafilatura(payload.decode(), url, ExtractConfig()).nodes
        found += [node.src for node in nodes if isinstance(node, ImageNode)]
    assert found == [u.url for u in web.urls]

    hangs = {u.url for u in web.urls if u.kind == KIND_HANG}
    assert hangs
    warc, url_list, n = bench_web.write_inputs(web, pages, tmp_path, frozenset({KIND_HANG}))
    assert warc.name == "pages-without-hang.warc.gz"
    assert url_list.read_text().split() == [u.url for u in web.urls if u.url not in hangs] and n == 300 - len(hangs)


def test_a_revision_snapshot_is_what_mmcurate_imports_on_its_pythonpath(tmp_path):
    import subprocess

    commit, path = bench_web.snapshot("HEAD", tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=bench_web.ROOT, capture_output=True, text=True, check=True)
    assert commit == head.stdout.strip()
    code = "import mmcurate.stages.image_retrieval as m, mmcurate.pipeline.cli as c; print(m.__file__); print(c.__file__)"
    out = subprocess.run([bench_web.MMCURATE_PYTHON, "-c", code], env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(path / "mmcurate" / "stages" / "image_retrieval.py"), str(path / "mmcurate" / "pipeline" / "cli.py")]
    assert (tmp_path / "tree" / "stages" / "image_retrieval.py").read_bytes() == subprocess.run(
        ["git", "show", f"{commit}:stages/image_retrieval.py"], cwd=bench_web.ROOT, capture_output=True, check=True).stdout
