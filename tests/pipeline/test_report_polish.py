"""The report's plots, legend, fonts and title, read from the HTML (no browser), and
a rerun's removal of a stale report.html."""

from __future__ import annotations

import shutil

from lxml import etree
from lxml import html as lxml_html

from mmcurate.pipeline.report import charts, command, funnel, manifest_view, page, samples
from mmcurate.pipeline.cli import main

SVG = "{http://www.w3.org/2000/svg}"


def _svg(markup: str) -> etree._Element:
    figure = lxml_html.fragment_fromstring(markup)
    return etree.fromstring(etree.tostring(figure.xpath("//*[local-name()='svg']")[0]))


def test_nice_ticks_are_round_and_inside_the_range():
    assert charts.nice_ticks(0, 10, 6) == [0, 2, 4, 6, 8, 10]
    assert charts.nice_ticks(0.12, 0.97, 5) == [0.2, 0.4, 0.6, 0.8]
    assert charts.nice_ticks(0, 3, 4, integer=True) == [0, 1, 2, 3]
    assert charts.nice_ticks(5, 5) == [5]


def test_every_histogram_has_axis_titles_and_ticks_on_both_axes():
    dist = charts.Distribution("word count (content.word_count)", [60, 120, 300, 80], [10, 20],
                               [(50.0, "heuristics.min_words")], integer=True)
    svg = _svg(charts.histogram_svg(dist, "d"))
    texts = {t.get("class"): [] for t in svg.iter(f"{SVG}text")}
    for t in svg.iter(f"{SVG}text"):
        texts[t.get("class")].append(t.text)
    assert texts["axistitle xtitle"] == ["word count (content.word_count)"]
    assert texts["axistitle ytitle"] == ["pages"]
    xticks = [float(v) for v in texts["axis xtick"]]
    assert len(xticks) >= 3 and xticks == sorted(xticks) and xticks[0] >= 0 and xticks[-1] <= 320
    yticks = [float(v) for v in texts["axis ytick"]]
    assert yticks[0] == 0 and len(yticks) >= 2
    assert len([e for e in svg.iter(f"{SVG}line") if "tick" in (e.get("class") or "")]) == len(xticks) + len(yticks)
    clip = _svg(charts.histogram_svg(charts.Distribution("CLIP", [0.2, 0.3], [], unit="images"), "c"))
    assert [t.text for t in clip.iter(f"{SVG}text") if t.get("class") == "axistitle ytitle"] == ["images"]


def test_legend_names_each_reason_colour_of_the_funnel():
    manifest = {
        "totals": {"pages": 10},
        "stages": {
            "read": {"enabled": True, "in": 10, "kept": 8, "rejected": {"http.status_not_ok": 2}, "errors": {}},
            "heuristics": {"enabled": True, "in": 8, "kept": 5, "rejected": {"gopher.too_few_words": 3}, "errors": {"ValueError": 1}},
        },
    }
    rows = manifest_view.funnel_rows(manifest)
    colours = funnel.reason_colours(rows)
    legend = lxml_html.fragment_fromstring(f"<div>{funnel.funnel_legend_html(manifest)}</div>")
    keys = {k.get("data-key"): k for k in legend.xpath("//span[@class='key']")}
    assert list(keys) == ["kept", *colours, "error"]
    for reason, colour in colours.items():
        assert keys[reason].xpath("string(.)") == f"rejected: {reason}"
        assert f"background:{colour}" in keys[reason].xpath("span/@style")[0]
    # The same colours fill the funnel's segments.
    svg = funnel.funnel_svg(manifest)
    for reason, colour in colours.items():
        assert f'fill="{colour}"><title>heuristics: {reason}' in svg or f'fill="{colour}"><title>read: {reason}' in svg


def test_font_stack_has_a_cjk_fallback():
    body = next(line for line in page.STYLE.splitlines() if line.startswith("body{"))
    assert "Noto Sans CJK SC" in body and "Hiragino Sans" in body and body.index("Noto Sans CJK") < body.index("sans-serif")


def test_a_heading_that_repeats_the_title_is_not_shown_twice():
    assert samples.repeats_title("The harbour", "h1", "The harbour")
    assert samples.repeats_title("The  Harbour", "h1", "The harbour | Coastal News")
    assert samples.repeats_title("港の歴史", "h2", "ニュース - 港の歴史")
    assert not samples.repeats_title("The harbour", "p", "The harbour")  # not a heading
    assert not samples.repeats_title("Harbour", "h1", "The harbour at dawn")


def test_report_page_has_one_title_heading_and_the_legend(report_run, tmp_path):
    out, ids = report_run
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    page = lxml_html.parse(command.write_report(str(copy))).getroot()
    assert [h.text_content() for h in page.xpath("//h1")] == ["mmcurate run report"]
    legend = [k.get("data-key") for k in page.xpath("//div[@class='legend']/span[@class='key']")]
    assert legend[0] == "kept" and legend[-1] == "error" and "dedup.exact_text" in legend
    harbour = page.get_element_by_id(f"doc-{ids['harbour']}")
    assert harbour.xpath("string(.//header/h3)") == "The harbour"
    assert "The harbour" not in [el.text_content() for el in harbour.xpath(".//div[@class='body']/*")]


def test_a_rerun_removes_the_previous_report(report_run, tmp_path):
    out, _ = report_run
    warc = out.parent / "in.warc.gz"
    target = tmp_path / "out"
    shutil.copytree(out, target)
    command.write_report(str(target))
    assert (target / "report.html").is_file()
    assert main(["run", str(warc), "--output", str(target), "--stages", "heuristics", "--quiet"]) == 0
    assert not (target / "report.html").exists()
