"""xpath_fold drops only union branches that select nothing: the folded expression
selects what the whole one selects, on random expressions and random trees."""

import random

import pytest
from lxml import etree

from mmcurate.stages.engines.extraction.html_tree import parse_html
from mmcurate.stages.engines.extraction.xpath_fold import constant, masked, without_empty_branches

ATOMS = ["false()", "true()", "self::div", "self::p", "@class", "@id='a'", "contains(@class, 'x')", ".//p",
         "not(.//p[false()])", "count(.//span[false()]) = 0", "'false() or ]'", "1", "count(p[false()])*2 = 0",
         "p[false()]-1 = p"]


@pytest.mark.parametrize(
    ("expression", "folded"),
    [
        (".//*[self::div or self::p][false() or false()]", None),
        (".//a|.//*[self::div][false() or false()]|.//b", ".//a|.//b"),
        ("(.//*[self::div][false() or false()])[1]", None),
        ("//div[false()]//a[@href]", None),
        (".//*[x][\n false() or not(self::ol or self::ul) and false()]", None),
        (".//*[not(true())]", None),
        (".//*[not(false())]", ".//*[not(false())]"),
        # inside a function call, a false predicate says nothing of the call's value
        (".//*[not(.//p[false()])]", ".//*[not(.//p[false()])]"),
        ("count(.//x[false()])", "count(.//x[false()])"),
        ("count (.//x[false()])", "count (.//x[false()])"),
        # literals are text, not syntax
        (".//x[@a=\"]|[false()\"]", ".//x[@a=\"]|[false()\"]"),
        (".//*[1 = 0 or false()]", ".//*[1 = 0 or false()]"),
        ("re:x(.//p[false()])|.//q", "re:x(.//p[false()])|.//q"),
        # operators around a path: not a plain path (a union binds tighter than * or -)
        ("a[false()]*2", "a[false()]*2"),
        ("1-a[false()]|b", "1-a[false()]|b"),
        ("b|a[false()]*2", "b|a[false()]*2"),
        ("-a[false()]", "-a[false()]"),
        # a name may hold "-" and ".": a name test
        (".//a-1[false()]|.//b", ".//b"),
    ],
)
def test_folds(expression, folded):
    assert without_empty_branches(expression) == folded


def test_constant_and_mask():
    assert constant("false() or (false() and self::p)") is False
    assert constant("self::p or not(false())") is True
    assert constant("self::p and true()") is None
    assert masked("a[b(c)]|'|'") == "a[____]|___"


def _expression(rng: random.Random, depth: int = 0) -> str:
    if depth > 2 or rng.random() < 0.35:
        return rng.choice(ATOMS)
    kind = rng.choice(["or", "and", "not", "group"])
    if kind == "not":
        return f"not({_expression(rng, depth + 1)})"
    if kind == "group":
        return f"({_expression(rng, depth + 1)})"
    return f" {kind} ".join(_expression(rng, depth + 1) for _ in range(rng.randint(2, 3)))


def _path(rng: random.Random) -> str:
    step = rng.choice([".//*", ".//div", "//p", ".//span"])
    predicates = "".join(f"[{_expression(rng)}]" for _ in range(rng.randint(1, 2)))
    path = step + predicates + rng.choice(["", "//span", "/p[true()]"])
    return f"({path})[1]" if rng.random() < 0.2 else path


def test_folded_expressions_select_the_same_elements():
    rng = random.Random(7)
    trees = [parse_html("<html><body><div class='x' id='a'><p><span>1</span></p></div><p id='a'>2</p>"
                        "<span class='x'><div><p>3</p></div></span></body></html>")]
    for seed in range(40):
        local = random.Random(seed)
        body = "".join(
            f"<{tag} class='{local.choice(['x', 'y'])}' id='{local.choice('ab')}'><p><span>{i}</span></p>{'<span>t</span>' * local.randint(0, 2)}</{tag}>"
            for i, tag in enumerate(local.choice(["div", "p", "span"]) for _ in range(local.randint(1, 6)))
        )
        trees.append(parse_html(f"<html><body>{body}</body></html>"))
    folded_some = emptied = 0
    for _ in range(600):
        expression = "|".join(_path(rng) for _ in range(rng.randint(1, 3)))
        folded = without_empty_branches(expression)
        plain = etree.XPath(expression)
        for tree in trees:
            if folded is None:
                assert plain(tree) == [], expression
            else:
                assert etree.XPath(folded)(tree) == plain(tree), (expression, folded)
        folded_some += folded is not None and folded != expression
        emptied += folded is None
    assert folded_some > 20 and emptied > 20  # both outcomes were exercised
