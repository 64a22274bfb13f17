"""trafilatura's XPath expressions screened per page (xpath_screen) select exactly what
the plain expressions select: on random trees with class, id and style values made
from the expressions' own patterns, on trees derived from a page the way trafilatura
derives them, and in whole extractions of the fixture pages."""

import copy
from html import escape
import random
from pathlib import Path

import pytest
import trafilatura
from lxml import etree

from mmcurate.pipeline.config import ExtractConfig, load_config
from mmcurate.schemas import Page
from mmcurate.stages.engines.extraction import trafilatura_adapter, xpath_screen
from mmcurate.stages.engines.extraction.html_tree import parse_html
from mmcurate.stages.engines.extraction.xpath_screen import AttributeTest, ScreenedXPath, screening
from mmcurate.stages.read import ReadWarcFileFn
from pagebuild import labelled_pages

WARC_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "warc"
HTML_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "html"
# values made from pieces of trafilatura's patterns, near misses, case and Unicode
# case-folding variants (U+212A KELVIN SIGN folds to "k"), newlines inside a value
PIECES = [
    "footer", "Footer", "cookie-banner", "COO\u212aIE_consent", "cookiebot", "comments", "Comment-list", "commentary",
    "comment", "comol", "disqus_thread", "social", "share-buttons", "shareable", "nav", "navbar", "subnav", "menu",
    "sidebar", "hidden", "hide-print", "message", "article-body", "articleBody", "post-content", "post_text",
    "story-body", "content-main", "byline", "author", "tags", "tag-list", "related", "elated", "widget", "ad",
    "-ad-", "bottom", "link", "caption", "teaser", "primary", "fulltext", "infinite-scroll", "mvp-post-add-box",
    "main", "entry-content", "display:none", "display: none", "border:1px", "x", "", "\nprimary", "nav\n",
]
TAGS = ["div", "section", "article", "main", "aside", "footer", "header", "p", "span", "ul", "ol", "li", "a",
        "h1", "h2", "script", "style", "details", "figure", "nav", "table", "td"]


def _value(rng: random.Random, pieces: list[str]) -> str:
    if rng.random() < 0.3:  # a literal of an equality test, whole
        return rng.choice(pieces)
    return (rng.choice([" ", "-", "_", "\n", ""])).join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))


def _element(rng: random.Random, depth: int, pieces: list[str], names: list[str]) -> str:
    tag = rng.choice(TAGS)
    attributes = [(name, _value(rng, pieces)) for name in names if rng.random() < 0.6 * 4 / len(names)]
    rng.shuffle(attributes)  # re:test(@id|@class, ...) reads whichever comes first
    attrs = "".join(f' {name}="{escape(value)}"' for name, value in attributes)
    children = "".join(_element(rng, depth + 1, pieces, names) for _ in range(rng.randint(0, 4 if depth < 4 else 0)))
    return f"<{tag}{attrs}>{rng.choice(PIECES)} text {children}</{tag}>{rng.choice(['', ' tail'])}"


def _random_tree(seed: int, pieces: list[str] = PIECES, names: tuple[str, ...] = ("class", "id", "style", "role")):
    rng = random.Random(seed)
    body = "".join(_element(rng, 0, pieces, list(names)) for _ in range(rng.randint(1, 6)))
    return parse_html(f"<html><head><title>t</title></head><body>{body}</body></html>")


@pytest.fixture(scope="module")
def screened() -> list[ScreenedXPath]:
    trafilatura_adapter._prepare_trafilatura()
    found = list(xpath_screen._installed.values())
    assert len(found) >= 15  # the content, boilerplate, comment and metadata expressions
    return found


def test_each_screened_expression_selects_what_the_plain_one_selects(screened):
    # every attribute the expressions test, with values from the patterns' pieces and
    # every literal the expressions compare with
    literals = sorted({test.operand for expression in screened for _, test in expression._calls if test.kind != "re:test"})
    names = ("role", *sorted(xpath_screen._paths))
    possible = impossible = 0
    for seed in range(150):
        root = _random_tree(seed, PIECES + literals, names)
        derived = copy.deepcopy(root)  # trafilatura's trees: copies with parts removed and renamed
        for element in list(derived.iter("aside", "script", "h2")):
            element.getparent().remove(element)
        for element in derived.iter("span"):
            element.tag = "hi"
            element.set("rend", "#b")
        with screening(root):
            page = xpath_screen._local.page
            for expression in screened:
                for tree in (root, derived, root.find("body")):
                    assert expression(tree) == expression.plain(tree), (seed, expression.path)
                for _, test in expression._calls:
                    if page.possible(test):
                        possible += 1
                    else:
                        impossible += 1
    assert possible > 500 and impossible > 500  # both rewrites were exercised


def test_first_attribute_is_the_one_tested():
    plain = etree.XPath(".//div[re:test(@id|@class, '^nav')]", namespaces={"re": xpath_screen.EXSLT_REGEXP})
    expression = ScreenedXPath(plain)
    root = parse_html('<html><body><div class="nav" id="x">a</div><div id="x" class="nav">b</div></body></html>')
    with screening(root):
        assert [e.text for e in expression(root)] == [e.text for e in plain(root)] == ["a"]


def test_tests_decided_per_page():
    plain = etree.XPath(
        ".//*[re:test(@class, 'cookie', 'i') or re:test(@id, '^[Cc]omment(?!ary)') or re:test(@class, 'x*')]",
        namespaces={"re": xpath_screen.EXSLT_REGEXP},
    )
    expression = ScreenedXPath(plain)
    cookie, comment, empty = (test for _, test in expression._calls)
    assert comment.joined is None and cookie.joined is not None  # the lookahead is searched value by value
    assert empty.matches_empty and not cookie.matches_empty
    root = parse_html('<html><body><p class="COO\u212aIE">a</p><p id="commentary">b</p><p>c</p></body></html>')
    with screening(root):
        page = xpath_screen._local.page
        assert page.possible(cookie) and not page.possible(comment)
        assert [e.text for e in expression(root)] == [e.text for e in plain(root)]
    assert "false()" in expression.rewritten((True, False, True))
    assert "((@class) and re:test(@class, 'cookie', 'i'))" in expression.rewritten((True, False, True))
    assert "re:test(@class, 'x*')" in expression.rewritten((True, False, False))  # matches "": left as is


def test_patterns_that_read_across_a_value_are_searched_value_by_value():
    # joined, "x\ny" would hide that "x" alone is not followed by a newline; (?-m:...)
    # turns off the MULTILINE the joined search relies on
    for pattern in ("x(?!\\n)", "(?-m:^cd)"):
        plain = etree.XPath(f".//p[re:test(@a, '{pattern}')]", namespaces={"re": xpath_screen.EXSLT_REGEXP})
        root = parse_html('<html><body><p a="zz">1</p><p a="x">2</p><p a="cd">3</p></body></html>')
        with screening(root):
            assert ScreenedXPath(plain)(root) == plain(root) != []


def test_a_pattern_python_rejects_is_left_to_lxml():
    assert xpath_screen._tests(".//p[re:test(@class, '[') or @id='x']")[0][1].kind == "="


def test_plain_outside_a_page_and_with_variables():
    plain = etree.XPath(".//p[re:test(@class, 'a')]", namespaces={"re": xpath_screen.EXSLT_REGEXP})
    expression = ScreenedXPath(plain)
    root = parse_html('<html><body><p class="a">x</p></body></html>')
    other = parse_html('<html><body><p class="b">y</p><p class="a">z</p></body></html>')
    # screened against ``root``, a tree with a value root lacks would be missed: so
    # screening applies only to trees derived from the page, inside its block
    assert [e.text for e in expression(other)] == ["z"]
    with screening(root):
        assert [e.text for e in expression(root)] == ["x"]
        assert expression(root, unused=1) == plain(root, unused=1)
    assert xpath_screen.screenable(plain.path)
    assert not xpath_screen.screenable(""".//p[text()="re:test(@class, 'a') or @a='b'"]""")  # inside a literal
    assert not xpath_screen.screenable(".//x:p[re:test(@class, 'a')]")
    assert xpath_screen.screenable(".//p[contains(@style, 'display:none') or re:test(@class, 'a')]")


TABLE_PAGE = (
    "<html><body><article><h1>Rates</h1><p>" + "The table below lists the rates of each year. " * 8 + "</p>"
    "<table><thead><tr><th>Year</th><th>Rate</th></tr></thead><tbody>"
    + "".join(f"<tr><th>{year}</th><td>{year % 7}.5 percent</td></tr>" for year in range(2000, 2012))
    + "</tbody></table><p>" + "Rates moved little over the decade. " * 8 + "</p></article></body></html>"
)


def _fixture_pages() -> list[tuple[str, str]]:
    pages = [(TABLE_PAGE, "https://example.org/rates/")] + [(p.html, p.url) for p in labelled_pages(3)]
    pages += [(path.read_text(encoding="utf-8"), f"https://example.org/{path.stem}/") for path in sorted(HTML_FIXTURES.glob("*.html"))]
    reader = ReadWarcFileFn(load_config(None, []).read)
    reader.setup()
    for path in sorted(WARC_FIXTURES.glob("*.warc*")):
        with open(path, "rb") as raw:
            pages += [(x.html, x.url) for batch in reader.read_stream(str(path), raw) for x in batch if isinstance(x, Page)]
    return pages


CONFIGS = [ExtractConfig(), ExtractConfig(mode="precision", with_metadata=True), ExtractConfig(mode="recall", fallback=True)]


@pytest.mark.parametrize("config", CONFIGS, ids=["balanced", "precision-metadata", "recall-fallback"])
def test_extractions_are_the_same_with_and_without_screening(screened, config):
    compared = 0
    for html, url in _fixture_pages():
        root = parse_html(html)
        if root is None:
            continue
        options = trafilatura_adapter._page_options(url, config)
        plain = trafilatura.bare_extraction(copy.deepcopy(root), url=url or None, options=options)
        with screening(root):
            got = trafilatura.bare_extraction(root, url=url or None, options=trafilatura_adapter._page_options(url, config))
        assert (got is None) == (plain is None), url
        if got is None:
            continue
        assert etree.tostring(got.body) == etree.tostring(plain.body), url
        for name in ("title", "author", "date", "sitename", "description", "categories", "tags", "license"):
            assert getattr(got, name) == getattr(plain, name), (url, name)
        compared += 1
    assert compared >= 60


def test_regex_test_compiles_as_lxml_does():
    test = AttributeTest("re:test", "@id | @class", "Nav", "i")
    assert test.attributes == ("id", "class")
    assert test.regex.search("navbar") and test.joined.search("x\nNAV")


def test_equality_screened_only_as_a_whole_operand():
    plain = etree.XPath(".//p[@a='x' or @b|@c='y' or (@d = 'z')][not(@e='w')][@r='v' = false()]")
    tests = [(plain.path[a:b], t.kind) for (a, b), t in xpath_screen._tests(plain.path)]
    assert tests == [("@a='x'", "="), ("@b|@c='y'", "="), ("@d = 'z'", "="), ("@e='w'", "=")]
    # trafilatura sets rend to values of its own (tag names): not screened; role only to
    # "head", which is screened as one of the page's values
    assert xpath_screen._tests(".//p[@rend='x' or contains(@rend, 'y')]") == []
    role = [t for _, t in xpath_screen._tests(".//p[@role='head' or @role='article']")]
    with screening(parse_html("<html><body><p>1</p></body></html>")):
        assert [xpath_screen._local.page.possible(t) for t in role] == [True, False]
    root = parse_html('<html><body><p a="x" c="y" e="q">1</p><p d="z" e="w">2</p><p b="y">3</p></body></html>')
    expression = ScreenedXPath(plain)
    with screening(root):
        assert [e.text for e in expression(root)] == [e.text for e in plain(root)] == ["1", "3"]


def test_contains_and_starts_with_decided_per_page():
    plain = etree.XPath(".//p[contains(@class, 'ab') or starts-with(@id|@class, 'cd') or contains(@style, '')]")
    expression = ScreenedXPath(plain)
    contains, starts, empty = (test for _, test in expression._calls)
    assert empty.matches_empty and not contains.matches_empty
    root = parse_html('<html><body><p class="xab">1</p><p id="xcd">2</p><p class="q" id="cdx">3</p></body></html>')
    with screening(root):
        page = xpath_screen._local.page
        assert page.possible(contains) and page.possible(starts)
        assert [e.text for e in expression(root)] == [e.text for e in plain(root)] == ["1", "2", "3"]
    other = parse_html('<html><body><p class="x">1</p><p id="d\ncd">2</p></body></html>')
    with screening(other):
        page = xpath_screen._local.page
        assert not page.possible(contains) and page.possible(starts)  # a value's own newline: possible, never missed
        assert expression(other) == plain(other)


def test_queried_trees_hold_only_the_pages_values(screened, monkeypatch):
    """What screening rests on: every tree a screened expression is asked about while
    trafilatura extracts a page holds, for each screened attribute, only values the
    page has (trafilatura's own attributes, WRITTEN_BY_TRAFILATURA, are not screened)."""
    checked = []
    call = ScreenedXPath.__call__

    def checking(self, tree, **variables):
        page = xpath_screen._local.page
        if page is not None:
            for name in xpath_screen._paths:
                values = page.values(name)
                extra = set(tree.getroottree().getroot().xpath(f"//@{name}")) - set(values)
                assert not extra, (name, extra)
            checked.append(self)
        return call(self, tree, **variables)

    monkeypatch.setattr(ScreenedXPath, "__call__", checking)
    for config in CONFIGS:
        for html, url in _fixture_pages()[::3]:
            root = parse_html(html)
            if root is not None:
                with screening(root):
                    trafilatura.bare_extraction(root, url=url or None, options=trafilatura_adapter._page_options(url, config))
    assert len(set(map(id, checked))) >= 20


def test_the_adapter_extracts_under_screening(screened, monkeypatch):
    pages = []
    call = ScreenedXPath.__call__

    def recording(self, tree, **variables):
        pages.append(xpath_screen._local.page)
        return call(self, tree, **variables)

    monkeypatch.setattr(ScreenedXPath, "__call__", recording)
    html, url = TABLE_PAGE, "https://example.org/rates/"
    trafilatura_adapter._trafilatura_document(parse_html(html), url, ExtractConfig())
    assert pages and all(page is not None for page in pages)
    assert xpath_screen._local.page is None  # the page's values are gone with its extraction
