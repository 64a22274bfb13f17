"""A run killed inside its images phase resumes without fetching again the image
bodies it had already fetched: ``mmcurate run`` stages them under the run's staging
(``fetched/``, kept across its phases and reruns), against servers on 127/8."""

from __future__ import annotations

from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from mmcurate.pipeline.build import plan_phases
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.phases import COMPLETE, run_phases
from warcbuild import WarcBuilder
from webhosts import Web

PARAGRAPH = ("The harbour wall was rebuilt in the spring after the storms of the winter had broken it in three "
             "places, and the fishermen who moor their boats there watched the work from the quay every morning. ")


@pytest.fixture
def web():
    web = Web(hosts=2, delay=0.01)
    yield web
    web.stop()


def _pages(web: Web, path: Path) -> list[str]:
    urls = []
    with WarcBuilder.open(path) as warc:
        for i in range(4):
            src = web.url(i % 2, f"/img/p{i}.jpg")
            urls.append(src)
            body = "".join(f"<p>{PARAGRAPH}{j}</p>" for j in range(6))
            html = (f"<html><head><title>Harbour {i}</title></head><body><article><h1>Harbour {i}</h1>{body}"
                    f"<img src='{src}' width='640' height='480' alt='the harbour wall'>{body}</article></body></html>")
            warc.response(f"https://news.example.org/harbour-{i}", html.encode(), "text/html; charset=utf-8")
    return urls


def test_a_rerun_of_the_images_phase_reads_the_bodies_it_fetched_instead_of_fetching_them(web, tmp_path):
    urls = _pages(web, tmp_path / "pages.warc.gz")
    config = load_config(None, ["run.stages=[images]", "images.http=true", "images.allowed_networks=[127.0.0.0/8]",
                                "images.min_side=1"])
    phases = plan_phases(config)
    root = tmp_path / "staging"
    options = PipelineOptions(["--runner=DirectRunner"])

    def image_gets() -> int:
        return sum(len(web.requests(web.host(h), "/img/")) for h in range(2))

    counters, _ = run_phases(phases, str(root), options, [str(tmp_path / "pages.warc.gz")], config, None)
    assert image_gets() == len(urls) and counters[("images", "image.ok")] == len(urls)
    assert len([p for p in (root / "fetched").rglob("*") if p.is_file()]) == len(urls)

    # Killed inside the images phase: its pipeline had fetched every body, nothing was marked finished.
    (root / phases[1].dirname / COMPLETE).unlink()
    again, report = run_phases(phases, str(root), options, [str(tmp_path / "pages.warc.gz")], config, None)
    assert [p["resumed"] for p in report] == [True, False]
    assert image_gets() == len(urls)  # none fetched again
    assert again[("images", "image.ok")] == len(urls)
