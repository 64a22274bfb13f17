"""`mmcurate report`: the page's content read back from its HTML, and the page
rendered by a real headless Chromium (Debian's `chromium`), driven over the
DevTools protocol: no console error, no request beyond the file itself, the funnel
drawn."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import aiohttp
import pyarrow.parquet as pq
import pytest
from lxml import html as lxml_html

from mmcurate.filters import reasons
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.report.command import REPORT, write_report
from mmcurate.pipeline.report.page import CSP
from mmcurate.schemas.tables import PAIRS, PAIRS_SCHEMA, to_table
from shared_runs import copy_run

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def report(report_run, tmp_path_factory):
    out, ids = report_run
    path = write_report(str(out))
    return Path(path), lxml_html.parse(path).getroot(), ids


def test_report_is_self_contained(report):
    _, page, _ = report
    assert page.xpath("//meta[@http-equiv='Content-Security-Policy']/@content") == [CSP]
    assert not page.xpath("//script | //link | //iframe")
    sources = page.xpath("//img/@src")
    assert sources and all(s.startswith("data:image/") for s in sources)


def test_funnel_plot_and_table_show_each_stage_and_reason(report):
    _, page, _ = report
    plot = page.get_element_by_id("funnel-plot")
    kept = {r.get("data-stage"): int(r.get("data-count")) for r in plot.xpath(".//*[local-name()='rect'][contains(@class,'kept')]")}
    assert kept == {"read": 4, "extract": 4, "heuristics": 3, "dedup": 2, "images": 2, "write": 2}
    removed = sorted(
        (r.get("data-stage"), r.xpath("string(*[local-name()='title'])"))
        for r in plot.xpath(".//*[local-name()='rect'][contains(@class,'rejected')]")
    )
    assert removed == [
        ("dedup", f"dedup: {reasons.DEDUP_EXACT_TEXT} removed 1"),
        ("heuristics", f"heuristics: {reasons.CONTENT_TOO_FEW_WORDS} removed 1"),
        ("read", f"read: {reasons.HTTP_STATUS_NOT_OK} removed 1"),
    ]
    rows = {
        tuple(td.text_content() for td in tr.xpath("td"))[-5:-1]
        for tr in page.get_element_by_id("funnel-table").xpath(".//tbody/tr")
    }
    # 1 of the 5 pages read: 20% of the stage's input and of all pages; 1 of the 3
    # pages dedup saw: 33.3% of its input, 20% of all pages.
    assert (reasons.HTTP_STATUS_NOT_OK, "1", "20.0%", "20.0%") in rows
    assert (reasons.CONTENT_TOO_FEW_WORDS, "1", "25.0%", "20.0%") in rows
    assert (reasons.DEDUP_EXACT_TEXT, "1", "33.3%", "20.0%") in rows
    assert page.get_element_by_id("totals").text_content() == "5 = kept 2 + rejected 3 + errors 0"


def test_distributions_draw_the_configured_thresholds(report):
    _, page, _ = report
    titles = page.xpath("//figure[@class='dist']/figcaption/b/text()")
    assert "word count (content.word_count)" in titles and "images per document" in titles
    assert "quality score (quality_score)" not in titles  # quality did not run: no such signal
    lines = {t for t in page.xpath("//*[local-name()='line'][@class='threshold']/*[local-name()='title']/text()")}
    assert {"heuristics.min_words = 50", "obelics.min_words = 10", "gopher_quality.min_words = 50"} <= lines
    assert {"heuristics.min_images = 1", "images.min_images = 1"} <= lines
    images = page.xpath("//figure[@class='dist'][figcaption/b='images per document']/div[@class='caption']")[0]
    assert "obelics.max_images = 30, images.max_images = 30" in images.text_content()
    # Far beyond the data: named in the caption instead of squashing the plot.
    caption = page.xpath("string(//figure[@class='dist'][1]/div[@class='caption'])")
    # obelics.max_words defaults to Gopher's 100,000 (OBELICS's own cap is 2,000)
    assert "beyond the plot: gopher_quality.max_words = 100000, obelics.max_words = 100000" in caption


def test_kept_documents_are_interleaved_with_their_stored_images(report):
    _, page, ids = report
    articles = page.xpath("//article[contains(@class,'kept-doc')]")
    assert sorted(a.get("id") for a in articles) == sorted(f"doc-{ids[n]}" for n in ("harbour", "orchard"))
    harbour = page.get_element_by_id(f"doc-{ids['harbour']}")
    order = [el.tag for el in harbour.xpath(".//div[@class='body']/*")]
    # The page's <h1> repeats its title, which the header already shows: not twice.
    assert order == ["p", "figure", "p"]
    assert harbour.xpath("string(.//header/h3)") == "The harbour"
    assert harbour.xpath(".//figure/img/@src")[0].startswith("data:image/jpeg;base64,")


def test_rejected_pages_by_reason_with_their_text(report):
    _, page, ids = report
    sections = {s.get("data-reason"): s for s in page.xpath("//section[@class='reason']")}
    assert set(sections) == {reasons.HTTP_STATUS_NOT_OK, reasons.CONTENT_TOO_FEW_WORDS, reasons.DEDUP_EXACT_TEXT}
    short = sections[reasons.CONTENT_TOO_FEW_WORDS]
    assert ids["short"] in short.text_content()
    assert short.xpath("string(.//div[@class='pagetext'])") == "Back soon."
    assert "value 2 vs threshold 50" in short.text_content()
    assert reasons.IMAGE_NOT_CAPTURED in page.xpath("string(//table[@class='imgdec'])")


def test_pairs_shown_when_the_run_has_a_pairs_table(report_run, tmp_path):
    out, ids = report_run
    page = Path(write_report(str(out))).read_text()
    assert "the pairs table is empty (the recycle stage did not run)" in page
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    shutil.rmtree(copy / "pairs")
    assert "no pairs table in this run" in Path(write_report(str(copy))).read_text()
    metas = [m for row in pq.read_table(copy / "documents").to_pylist() for m in row["image_meta"] if m]
    (copy / "pairs").mkdir()
    row = {name: None for name in PAIRS_SCHEMA.names}
    row.update(
        url="https://news.example.org/img/harbour.jpg",
        caption="The harbour, photographed in spring.",
        caption_source="figcaption",
        similarity=0.31,
        image_id=metas[0]["image_id"],
        doc_id=ids["copy"],
        source_kept=False,
        source_stage="dedup",
        rejection_reason=reasons.DEDUP_EXACT_TEXT,
    )
    pq.write_table(to_table([row], PAIRS), copy / "pairs" / "part-00000-of-00001.parquet")
    page = lxml_html.parse(write_report(str(copy))).getroot()
    table = page.get_element_by_id("pairs-table")
    assert "The harbour, photographed in spring." in table.text_content()
    assert reasons.DEDUP_EXACT_TEXT in table.text_content()
    assert "bytes" not in table.xpath(".//th/text()")
    assert table.xpath(".//img/@src")[0].startswith("data:image/")
    assert "CLIP similarity of recycled pairs" in page.xpath("//figure[@class='dist']/figcaption/b/text()")


def test_run_without_images_table_shows_url_placeholders(demo_run, tmp_path):
    # The default stages do not retrieve images: the images table stays empty.
    copy = copy_run(demo_run.output, tmp_path / "demo")  # the session's demo run (tests/conftest.py)
    assert main(["report", str(copy)]) == 0
    page = lxml_html.parse(str(copy / REPORT)).getroot()
    assert not page.xpath("//img")
    placeholders = page.xpath("//div[@class='imgph']/code/text()")
    assert placeholders and all(p.startswith("http") for p in placeholders)


def test_cli_report_errors_on_a_directory_that_is_not_a_run(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no manifest.json" in capsys.readouterr().err


# ---------------------------------------------------------------- headless Chromium


def chromium_binary() -> str:
    found = os.environ.get("MMCURATE_CHROMIUM") or shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    )
    if found:
        return found
    message = (
        "headless Chromium is needed to render the report: install Debian's chromium "
        "(apt-get install --no-install-recommends chromium; `make test` does it as root) "
        "or point MMCURATE_CHROMIUM at a Chromium binary"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


async def _devtools_session(port: int, url: str) -> dict:
    """Loads `url` in the page target; returns what the page logged, requested and shows."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
            targets = await resp.json()
        target = next(t for t in targets if t["type"] == "page")
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            counter = 0
            events: list[dict] = []

            async def call(method: str, **params) -> dict:
                nonlocal counter
                counter += 1
                await ws.send_json({"id": counter, "method": method, "params": params})
                while True:
                    message = json.loads((await ws.receive(timeout=30)).data)
                    if message.get("id") == counter:
                        assert "error" not in message, message
                        return message["result"]
                    events.append(message)

            for domain in ("Page", "Runtime", "Log", "Network"):
                await call(f"{domain}.enable")
            await call("Page.navigate", url=url)
            while not any(e.get("method") == "Page.loadEventFired" for e in events):
                events.append(json.loads((await ws.receive(timeout=30)).data))
            probe = """JSON.stringify({
                bars: document.querySelectorAll('#funnel-plot rect.bar').length,
                box: (() => { const r = document.getElementById('funnel-plot').getBoundingClientRect();
                              return [r.width, r.height]; })(),
                heading: document.querySelector('#funnel').textContent,
                images: Array.from(document.images).map(i => [i.complete, i.naturalWidth]),
                totals: document.getElementById('totals').textContent,
            })"""
            shown = await call("Runtime.evaluate", expression=probe, returnByValue=True)
            await asyncio.sleep(0.2)  # late console messages (CSP reports arrive as Log entries)
            await call("Runtime.evaluate", expression="1")
    return {"events": events, "shown": json.loads(shown["result"]["value"])}


def test_chromium_renders_the_report_without_errors_and_shows_the_funnel(report, tmp_path):
    binary = chromium_binary()
    path, _, _ = report
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [binary, *CHROMIUM_FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, f"chromium exited with {proc.returncode}"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        result = asyncio.run(_devtools_session(port, path.as_uri()))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    events = result["events"]
    errors = [e for e in events if e.get("method") == "Runtime.exceptionThrown"]
    errors += [e for e in events if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]
    errors += [e for e in events if e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error"]
    errors += [e for e in events if e.get("method") == "Network.loadingFailed"]
    assert errors == []
    requested = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    assert [u for u in requested if not u.startswith("data:")] == [path.as_uri()]
    shown = result["shown"]
    assert shown["heading"] == "Funnel"
    assert shown["bars"] == 9  # 6 stages' kept segments + 3 reasons
    assert shown["box"][0] > 500 and shown["box"][1] > 100
    assert shown["images"] and all(done and width > 0 for done, width in shown["images"])
    assert shown["totals"] == "5 = kept 2 + rejected 3 + errors 0"
