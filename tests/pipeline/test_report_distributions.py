"""report.distributions: which histograms a run gets, with which thresholds, from
its tables and the config stamped in its manifest (no pipeline run: a DuckDB table
stands for the documents view)."""

from __future__ import annotations

import duckdb
from lxml import html as lxml_html

from mmcurate.pipeline.report.distributions import distributions

MANIFEST = {
    "stages": {"heuristics": {"enabled": True}, "scoring": {"enabled": True}, "recycle": {"enabled": False}},
    "config": {
        "heuristics": {"min_words": 50, "language": {"allowed": ["en", "ja"], "min_score": 0.5}},
        "scoring": {"image_min_similarity": 0.2, "share_threshold": 0.25, "pair_min_similarity": 0.3},
    },
}


def _documents() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE documents AS SELECT * FROM (VALUES "
        "([{'key': 'content.word_count', 'value': 120.0}], 2, [{'clip_score': 0.31}, NULL, {'clip_score': 0.18}], 'en'),"
        "([{'key': 'content.word_count', 'value': 80.0}], 1, [{'clip_score': 0.27}], 'ja')"
        ") AS t(signals, num_images, image_meta, language)"
    )
    return con


def test_a_scored_run_gets_a_clip_histogram_with_the_scoring_thresholds():
    figures = {}
    for markup in distributions(_documents(), ["documents"], MANIFEST):
        figure = lxml_html.fragment_fromstring(markup)
        figures[figure.xpath("string(figcaption/b)")] = figure
    assert list(figures) == [
        "word count (content.word_count)",
        "images per document",
        "CLIP image-text similarity (per kept image)",
        "kept documents by language",
    ]
    clip = figures["CLIP image-text similarity (per kept image)"]
    assert clip.xpath("string(div[@class='caption'])").startswith("3 kept, 0 rejected images")
    drawn = [t.text_content() for t in clip.xpath(".//*[local-name()='text'][@class='thr']")]
    assert drawn == ["┆ scoring.image_min_similarity = 0.2", "┆ scoring.share_threshold = 0.25"]
    # The pair threshold belongs to recycle, which did not run: no pairs histogram either.
    assert "CLIP similarity of recycled pairs" not in figures
    assert figures["kept documents by language"].xpath("string(div[@class='caption'])") == "allowed: en, ja"
