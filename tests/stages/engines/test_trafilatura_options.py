"""trafilatura gets one ``Extractor`` per page copied from one built per config
(``trafilatura_adapter._page_options``): it must be, slot by slot, the one that
``bare_extraction`` builds from the same settings passed one by one, and the
documents must be the same."""

import copy
import itertools
from pathlib import Path

import pytest
import trafilatura
import trafilatura.core
from lxml import etree
from trafilatura.settings import Extractor

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.stages.engines.extraction import trafilatura_adapter
from mmcurate.stages.engines.extraction.html_tree import parse_html
from pagebuild import labelled_pages

HTML_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "html"
URLS = ["https://example.org/a/page.html", "", "https://example.org/caf\udce9"]
CONFIGS = [
    ExtractConfig(mode=mode, include_tables=tables, with_metadata=metadata, fallback=fallback)
    for mode, tables, metadata, fallback in itertools.product(
        ("balanced", "precision", "recall"), (True, False), (False, True), (False, True)
    )
]


def _arguments(config: ExtractConfig) -> dict[str, object]:
    """The settings as the adapter passed them to ``bare_extraction`` one by one."""
    return dict(
        favor_precision=config.mode == "precision",
        favor_recall=config.mode == "recall",
        include_comments=False,
        include_tables=config.include_tables,
        include_images=False,
        include_formatting=False,
        include_links=False,
        deduplicate=False,
        with_metadata=config.with_metadata,
        output_format="xml",
        fast=not config.fallback,
    )


def _built_by_bare_extraction(monkeypatch, url: str, config: ExtractConfig) -> Extractor:
    built: list[Extractor] = []

    class Recording(Extractor):
        __slots__ = ()

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            built.append(self)

    monkeypatch.setattr(trafilatura.core, "Extractor", Recording)
    trafilatura.bare_extraction(parse_html("<html><body><p>x</p></body></html>"), url=url or None, **_arguments(config))
    monkeypatch.undo()
    assert len(built) == 1
    return built[0]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.mode}-t{c.include_tables:d}-m{c.with_metadata:d}-f{c.fallback:d}")
def test_page_options_are_the_ones_bare_extraction_builds(monkeypatch, config):
    for url in URLS:
        expected = _built_by_bare_extraction(monkeypatch, url, config)
        got = trafilatura_adapter._page_options(url, config)
        assert type(got) is Extractor
        for name in Extractor.__slots__:
            assert getattr(got, name) == getattr(expected, name), (url, name)
        # What trafilatura may change is the page's own.
        again = trafilatura_adapter._page_options(url, config)
        for name in ("date_params", "author_blacklist", "url_blacklist"):
            assert getattr(again, name) is not getattr(got, name)


def test_documents_match_those_of_the_settings_passed_one_by_one():
    pages = [(p.html, p.url) for p in labelled_pages(2)]
    pages += [(path.read_text(encoding="utf-8"), f"https://example.org/{path.stem}/") for path in sorted(HTML_FIXTURES.glob("*.html"))]
    compared = 0
    for config in (ExtractConfig(), ExtractConfig(mode="precision", with_metadata=True), ExtractConfig(mode="recall", include_tables=False)):
        for html, url in pages:
            root = parse_html(html)
            expected = trafilatura.bare_extraction(copy.deepcopy(root), url=url, **_arguments(config))
            got = trafilatura_adapter._trafilatura_document(root, url, config)
            assert (got is None) == (expected is None)
            if got is None:
                continue
            assert etree.tostring(got.body) == etree.tostring(expected.body)
            for name in ("title", "author", "date", "sitename", "description", "hostname", "categories", "tags", "license", "url"):
                assert getattr(got, name) == getattr(expected, name), (url, name)
            compared += 1
    assert compared >= 20
