"""Which images sit in page furniture (``regions.in_boilerplate``) and the blocks'
common ancestor (``regions.common_ancestor``)."""

import random

import pytest

from mmcurate.stages.engines.extraction.html_tree import parse_html
from mmcurate.stages.engines.extraction.regions import common_ancestor, in_boilerplate


def _page(body: str):
    root = parse_html(f"<html><body>{body}</body></html>")
    return root, {el.get("id"): el for el in root.iter() if el.get("id")}


@pytest.mark.parametrize(
    "body, root_id, expected",
    [
        ("<div id=c><nav><img id=i></nav></div>", "c", True),
        ("<div id=c><div role=Navigation><img id=i></div></div>", "c", True),
        ("<nav><div id=c><img id=i></div></nav>", "c", False),  # the content itself is in the nav
        ("<div role=navigation id=c><img id=i></div>", "c", False),
        ("<div id=c><header><img id=i></header></div>", "c", True),
        ("<div id=c><article><header><img id=i></header></article></div>", "c", False),
        ("<article><div id=c><footer><img id=i></footer></div></article>", "c", False),  # article above the root
        ("<main id=c><footer><img id=i></footer></main>", "c", False),  # the root is the main
        ("<header><div id=c><img id=i></div></header>", "c", False),
        ("<div id=c></div><header><img id=i></header>", "c", True),  # outside the root
        ("<div id=c></div><article><header><img id=i></header></article>", "c", False),
        ("<header><img id=i></header>", None, True),
        ("<article><header><img id=i></header></article>", None, False),
        ("<aside><article><img id=i></article></aside>", None, True),
    ],
)
def test_in_boilerplate(body, root_id, expected):
    root, by_id = _page(body)
    assert in_boilerplate(by_id["i"], by_id.get(root_id)) is expected


def _in_boilerplate_by_every_ancestor(element, content_root):
    """in_boilerplate's answer from a look at every ancestor."""
    sectioned = bounded = False
    below = True
    for ancestor in element.iterancestors():
        if ancestor is content_root:
            below = False
        sectioned = sectioned or ancestor.tag in ("article", "main")
        if below:
            if ancestor.tag in ("nav", "aside", "form") or (ancestor.get("role") or "").lower() in (
                "navigation", "banner", "contentinfo", "complementary", "search"
            ):
                return True
            bounded = bounded or ancestor.tag in ("header", "footer")
    return bounded and not sectioned


def test_in_boilerplate_and_common_ancestor_on_random_pages():
    rng = random.Random(9)
    tags = ["div", "section", "header", "footer", "article", "main", "nav", "p", "span", "aside"]

    def element(depth):
        attrs = ' role="banner"' if rng.random() < 0.05 else ""
        inner = "".join(element(depth + 1) if depth < 6 and rng.random() < 0.6 else "<img>" for _ in range(rng.randint(1, 3)))
        return f"<{rng.choice(tags)}{attrs}>{inner}</{rng.choice(tags)}>"

    for _ in range(200):
        root = parse_html(f"<html><body>{element(0)}{element(0)}</body></html>")
        elements = list(root.iter())
        images = [el for el in elements if el.tag == "img"]
        for content_root in [None, *rng.sample(elements, min(4, len(elements)))]:
            for img in images:
                assert in_boilerplate(img, content_root) == _in_boilerplate_by_every_ancestor(img, content_root)
        some = rng.sample(images, min(len(images), rng.randint(1, 4)))
        some += some[:1]  # a repeated element
        expected = next(a for a in some[0].iterancestors() if all(a in set(x.iterancestors()) for x in some[1:] if x is not some[0]))
        if all(x is some[0] for x in some):
            expected = some[0]
        assert common_ancestor(some) is expected
