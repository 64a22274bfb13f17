"""trafilatura's XML body as text nodes (``NodeBuilder``) and each node located in
the page's text (``index_page`` + ``locate_text``): exact nodes, needles and places."""

from lxml import etree

from mmcurate.pipeline.config import ExtractConfig
from mmcurate.schemas import TextNode
from mmcurate.stages.engines.extraction.html_tree import noscript_images, parse_html
from mmcurate.stages.engines.extraction.page_index import index_page
from mmcurate.stages.engines.extraction.text_nodes import NodeBuilder, locate_text

NBSP, IDEOGRAPHIC_SPACE, THIN_SPACE = "\u00a0", "\u3000", "\u2009"  # whitespace to str.split


def _items(xml: str):
    builder = NodeBuilder()
    builder.block(etree.fromstring(xml), "p")
    return builder.items


def test_blocks_lists_tables_and_whitespace():
    items = _items(
        "<body>"
        f"<p>  One{NBSP}two \n\n three{IDEOGRAPHIC_SPACE}four </p>"
        "<p> \n\t </p>"
        f"<p>{NBSP}{THIN_SPACE}</p>"
        '<head rend="h3">A <hi>bold</hi> title</head>'
        "<list><item>first</item><item> </item><item>second<lb/>line</item></list>"
        "<code>  x = 1\n\n    y = 2  \n\n</code>"
        "<table><row><cell>a</cell><cell> </cell><cell>b</cell></row><row><cell/></row><row><cell>c</cell></row></table>"
        "<quote><p>quoted</p></quote>"
        "</body>"
    )
    assert [i.node for i in items] == [
        TextNode(text="One two\nthree four", tag="p"),
        TextNode(text="A bold title", tag="h3"),
        TextNode(text="first", tag="li"),
        TextNode(text="second\nline", tag="li"),
        TextNode(text="  x = 1\n\n    y = 2", tag="pre"),
        TextNode(text="a | b\nc", tag="table"),
        TextNode(text="quoted", tag="blockquote"),
    ]
    assert [i.needle for i in items] == ["Onetwothreefour", "Aboldtitle", "first", "secondline", "x=1y=2", "a", "quoted"]


def test_text_around_a_nested_block_is_split_there():
    items = _items("<body><p>before <hi>inline</hi><list><item>inner</item></list> after\n</p></body>")
    assert [(i.node.tag, i.node.text) for i in items] == [("p", "before inline"), ("li", "inner"), ("p", "after")]


def test_located_in_the_page_text_in_order():
    root = parse_html(
        "<html><head><title>T</title><script>var skipped = 'One two';</script></head><body>"
        f"<div id='a'>Intro <b>One</b>{NBSP}two</div><!-- a comment -->"
        "<svg><text>One two</text></svg>"
        "<p id='b'>three four<img src='x.jpg'>tail text</p>"
        "</body></html>"
    )
    index = index_page(root, "https://example.org/", ExtractConfig())
    assert index.flat == "IntroOnetwothreefourtailtext"
    assert [owner.get("id") or owner.tag for owner in index.piece_owners] == ["a", "b", "a", "b", "b"]
    assert [index.flat[s:] [:5] for s in index.piece_starts] == ["Intro", "Onetw", "twoth", "three", "tailt"]
    assert [r.element.get("src") for r in index.images] == ["x.jpg"]
    items = _items("<body><p>One two</p><p>tail text</p><p>not in the page</p></body>")
    locate_text(items, index)
    one, tail, missing = items
    assert (one.start_offset, one.end_offset) == (len("Intro"), len("IntroOnetwo"))
    assert one.owner.tag == "b" and one.end_owner.get("id") == "a"
    assert tail.owner.get("id") == "b" and tail.order > index.images[0].order > one.end_order
    assert missing.order is None and missing.start_offset == -1


def _index_by_iterwalk(root):
    """The page index by lxml's start and end events: (flat text, pieces as (start,
    order, owner), images as (order, flat offset, element), a ``<noscript>``'s own
    pictures at its start)."""
    skip = {"head", "script", "style", "noscript", "template", "svg", "math", "iframe", "object"}
    pieces, images, flat, order = [], [], "", 0
    walker = etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        order += 1
        if event == "start":
            if el.tag in skip:
                if el.tag == "noscript":  # a picture whose only copy is there
                    images.extend((order, len(flat), img) for img in noscript_images(el))
                walker.skip_subtree()
                continue
            if el.tag == "img":
                images.append((order, len(flat), el))
                continue
            text, owner = el.text, el
        else:
            text, owner = el.tail, el.getparent()
        squeezed = "".join((text or "").split())
        if squeezed and owner is not None:
            pieces.append((len(flat), order, owner))
            flat += squeezed
    return flat, pieces, images


def test_page_index_orders_are_those_of_start_and_end_events():
    import random

    rng = random.Random(3)
    tags = ["div", "p", "span", "b", "svg", "script", "noscript", "template", "object", "section", "a", "td"]
    words = ["", " ", "\n  ", "word", f"two{NBSP}words ", "x"]

    def element(depth):
        tag = rng.choice(tags)
        inner = "".join(
            element(depth + 1) if depth < 5 and rng.random() < 0.5 else rng.choice(["<img src='i.jpg'>", "<br>", rng.choice(words)])
            for _ in range(rng.randint(0, 4))
        )
        return f"<{tag}>{rng.choice(words)}{inner}</{tag}>{rng.choice(words)}"

    for _ in range(300):
        root = parse_html(f"<html><head><title>t</title></head><body>{rng.choice(words)}{element(0)}{element(0)}</body></html>")
        index = index_page(root, "https://example.org/", ExtractConfig())
        flat, pieces, images = _index_by_iterwalk(root)
        assert index.flat == flat
        assert list(zip(index.piece_starts, index.piece_orders, index.piece_owners)) == pieces
        assert [(r.order, r.flat_offset, r.element) for r in index.images] == images
