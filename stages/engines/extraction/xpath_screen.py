"""trafilatura's XPath expressions with their attribute tests decided once per page.

trafilatura selects content, boilerplate and metadata with XPath expressions that test
attribute values: against regular expressions (EXSLT ``re:test``), which libxml2
cannot run itself, so lxml calls back into Python for every element a test is asked
about, with or without the attribute; and against literals (``@class='post'``,
``contains(@style, 'display:none')``, ``starts-with(@id, 'reply-')``), which libxml2
checks on every element.

Most of those tests cannot succeed anywhere on a given page: no ``class`` of the page
contains "cookie", no ``id`` reads "comments". Every tree trafilatura queries while it
extracts one page is the page's own tree, a copy of it or a part of one, with elements
removed, renamed or given trafilatura's own attributes (``WRITTEN_BY_TRAFILATURA``:
``rend``, ``target``, ``href``, ``src``, ``alt``, ``title``, ``type``, and ``role``,
always "head"); no other value appears that the page did not have. So, while a page is
screened (:func:`screening`), each ``re:test``, ``contains`` or ``starts-with`` of
attributes with literal arguments, and each equality of attributes with a literal (as a
whole operand of ``or``/``and``, a predicate or a group), is decided once against all of
the page's values of those attributes (``role``'s with "head" added), unless it reads
one that trafilatura sets to values of its own:

- no value passes: the test is false on every element, and the expression is run with
  ``false()`` in its place;
- some value passes: the test runs as before; a ``re:test`` behind ``(@attr) and``, so
  elements without the attribute are not asked (the test is false on them, since its
  pattern cannot match an empty string).

Union branches that the ``false()`` tests leave selecting nothing are dropped, and an
expression left with none is not run (xpath_fold), since libxml2 would still visit
every element to find nothing.

A test that holds for an element without the attribute (a pattern that matches an empty
string, ``contains(@a, '')``) is left as it is. The values are joined by newlines and
searched once (a regular expression with ``re.MULTILINE``, so ``^`` and ``$`` still see
each value's ends); a pattern with a lookaround, ``\\A`` or ``\\Z``, which could read
across a value's end, is searched in each value instead. Either way a value that passes
alone makes the page's test possible, so a screened expression selects what the plain
one selects. Outside :func:`screening`, or called with XPath variables, a screened
expression is the plain one. Each rewritten expression is compiled once per combination
of possible tests and kept.

``tests/stages/engines/test_xpath_screen.py`` compares each screened expression with its
plain one on random trees, compares whole extractions with and without screening, and
checks on the fixture pages that every tree a screened expression is asked about holds
only the page's values.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Iterator

from lxml import etree

from mmcurate.stages.engines.extraction.xpath_fold import without_empty_branches

EXSLT_REGEXP = "http://exslt.org/regular-expressions"
_ATTRIBUTES = r"@[\w-]+(?:\s*\|\s*@[\w-]+)*"
# the tests screened: re:test, contains and starts-with of attributes of the context
# element with literal arguments, and an attribute's equality with a literal
_TEST = re.compile(
    rf"(?<![\w:.-])re:test\(\s*(?P<attributes>{_ATTRIBUTES})\s*,\s*'(?P<pattern>[^']*)'\s*(?:,\s*'(?P<flags>[^']*)'\s*)?\)"
    rf"|(?<![\w:.-])(?P<function>contains|starts-with)\(\s*(?P<searched>{_ATTRIBUTES})\s*,\s*'(?P<text>[^']*)'\s*\)"
    rf"|(?P<compared>{_ATTRIBUTES})\s*=\s*'(?P<value>[^']*)'"
)
# an equality is screened only as a whole operand of "or"/"and", a predicate or a group
# (``@b|@a='x'`` compares the union, not ``@a``)
_BEFORE = re.compile(r"(?:[\[(]|(?<![\w.-])(?:or|and))\s*$")
_AFTER = re.compile(r"\s*(?:[\])]|(?:or|and)(?![\w.-]))")
# attributes trafilatura sets while it extracts, with the values it sets where they are
# fixed (role="head" on table header cells: main_extractor.handle_table and
# external.sanitize_tree), None where they come from elsewhere (a tag name, a link);
# tests/stages/engines/test_xpath_screen.py checks on the fixture pages that queried
# trees hold no other value of a screened attribute than the page's and these
WRITTEN_BY_TRAFILATURA: dict[str, frozenset[str] | None] = {
    "alt": None, "href": None, "rend": None, "role": frozenset({"head"}), "src": None, "target": None,
    "title": None, "type": None,
}
# constructs whose match in one value might not be one in the newline-joined values:
# lookarounds, absolute anchors, inline flags (which can turn re.MULTILINE off)
_READS_ACROSS = re.compile(r"\(\?<?[=!]|\\[AZ]|\(\?[aiLmsux-]+[:)]")
# a namespace prefix (``re:``), not an axis (``self::``), outside string literals
_PREFIX = re.compile(r"(?<![:\w.-])([A-Za-z_][\w.-]*):(?![:=])")
_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"")
_local = threading.local()
_NOTHING = object()  # a variant that selects nothing on any tree: not run


class AttributeTest:
    """One test of an expression on attribute values: ``re:test`` (compiled as lxml's
    EXSLT extension compiles it: ``re.UNICODE``, plus ``re.IGNORECASE`` when the flags
    hold ``i``), ``contains``, ``starts-with`` or ``=`` with a literal."""

    __slots__ = ("kind", "attributes", "operand", "key", "regex", "joined", "matches_empty")

    def __init__(self, kind: str, attributes: str, operand: str, flags: str = "") -> None:
        self.kind = kind
        self.attributes = tuple(a.strip()[1:] for a in attributes.split("|"))
        self.operand = operand
        self.regex = self.joined = None
        if kind == "re:test":
            ignore_case = re.IGNORECASE if "i" in flags else 0
            self.regex = re.compile(operand, re.UNICODE | ignore_case)
            if not _READS_ACROSS.search(operand):
                self.joined = re.compile(operand, re.UNICODE | ignore_case | re.MULTILINE)
            self.matches_empty = self.regex.search("") is not None
        else:
            # an element without the attribute: contains('', x) and starts-with('', x)
            # hold only for x = ''; an empty node-set equals nothing
            self.matches_empty = kind != "=" and operand == ""
        self.key = (kind, self.attributes, operand, flags)

    @classmethod
    def of(cls, match: re.Match) -> AttributeTest:
        if match["attributes"]:
            return cls("re:test", match["attributes"], match["pattern"], match["flags"] or "")
        if match["function"]:
            return cls(match["function"], match["searched"], match["text"])
        return cls("=", match["compared"], match["value"])


def _tests(path: str) -> list[tuple[tuple[int, int], AttributeTest]]:
    """The screenable tests of ``path`` with their spans, in order."""
    literals = [m.span() for m in _LITERAL.finditer(path)]
    found = []
    for match in _TEST.finditer(path):
        start, end = match.span()
        if any(a < start < b for a, b in literals):
            continue  # inside a string literal
        if match["compared"] and not (_BEFORE.search(path, 0, start) and _AFTER.match(path, end)):
            continue
        try:
            test = AttributeTest.of(match)
        except re.error:  # a pattern Python's re rejects: lxml fails only when it runs
            continue
        if all(WRITTEN_BY_TRAFILATURA.get(name, ()) is not None for name in test.attributes):
            found.append(((start, end), test))
    return found


class PageValues:
    """A page's values of the attributes screened expressions test, and which tests
    some value passes (each decided once per page)."""

    __slots__ = ("_root", "_values", "_joined", "_possible")

    def __init__(self, root: etree._Element) -> None:
        self._root = root
        self._values: dict[str, dict[str, None]] = {}
        self._joined: dict[str, str] = {}
        self._possible: dict[tuple, bool] = {}

    def possible(self, test: AttributeTest) -> bool:
        """Whether some value of ``test``'s attributes on this page passes it."""
        found = self._possible.get(test.key)
        if found is None:
            found = any(self._matches(test, name) for name in test.attributes)
            self._possible[test.key] = found
        return found

    def values(self, name: str) -> dict[str, None] | None:
        """The distinct values of attribute ``name`` on the page, with those trafilatura
        may set (in a dict, for the equality tests), collected when first asked for;
        None for an attribute no installed expression tests."""
        values = self._values.get(name)
        if values is None and name in _paths:
            values = self._values[name] = dict.fromkeys([*_paths[name](self._root), *WRITTEN_BY_TRAFILATURA.get(name, ())])
        return values

    def _matches(self, test: AttributeTest, name: str) -> bool:
        values = self.values(name)
        if values is None:  # cannot decide
            return True
        if test.kind == "=":
            return test.operand in values
        if test.kind == "re:test" and test.joined is None:
            return any(map(test.regex.search, values))
        joined = self._joined.get(name)
        if joined is None:
            # a leading newline, so that each value starts after one
            joined = self._joined[name] = "\n" + "\n".join(values)
        if test.kind == "re:test":
            return test.joined.search(joined) is not None
        if test.kind == "contains":
            return test.operand in joined
        return "\n" + test.operand in joined  # starts-with


class ScreenedXPath:
    """Drop-in for an ``etree.XPath`` whose attribute tests are decided per page."""

    def __init__(self, plain: etree.XPath) -> None:
        self.plain = plain
        self.path = plain.path
        self._calls = _tests(plain.path)
        self._variants: dict[tuple[bool, ...], etree.XPath | object] = {}

    @property
    def attributes(self) -> set[str]:
        return {name for _, test in self._calls for name in test.attributes}

    def __call__(self, tree, **variables):
        page = getattr(_local, "page", None)
        if page is None or variables:
            return self.plain(tree, **variables)
        key = tuple(test.matches_empty or page.possible(test) for _, test in self._calls)
        variant = self._variants.get(key)
        if variant is None:
            path = without_empty_branches(self.rewritten(key))
            variant = self._variants[key] = _NOTHING if path is None else etree.XPath(path, namespaces={"re": EXSLT_REGEXP})
        return [] if variant is _NOTHING else variant(tree)

    def rewritten(self, possible: tuple[bool, ...]) -> str:
        """The expression with each impossible test as ``false()`` and each possible one
        behind its attributes' presence."""
        parts, last = [], 0
        for ((start, end), test), can in zip(self._calls, possible):
            parts.append(self.path[last:start])
            call = self.path[start:end]
            if test.matches_empty:
                parts.append(call)
            elif can:
                parts.append(f"(({' or '.join('@' + a for a in test.attributes)}) and {call})")
            else:
                parts.append("false()")
            last = end
        parts.append(self.path[last:])
        return "".join(parts)


def screenable(path: str) -> bool:
    """An expression this module can rewrite: it has a test of the forms above and uses
    no namespace prefix but ``re``."""
    return bool(_tests(path)) and set(_PREFIX.findall(_LITERAL.sub("''", path))) <= {"re"}


_installed: dict[int, ScreenedXPath] = {}
_paths: dict[str, etree.XPath] = {}


def install(module_prefix: str = "trafilatura") -> int:
    """Replaces every screenable XPath of the loaded ``module_prefix`` modules, as a
    module attribute or an item of a module-level list, by its :class:`ScreenedXPath`
    (the same one wherever it is bound). Returns how many expressions are screened.
    The rewritten expressions are compiled with lxml's default options and ``re`` bound
    to EXSLT's regular expressions, as trafilatura compiles its own."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == module_prefix or name.startswith(module_prefix + ".")):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, etree.XPath) and screenable(value.path):
                setattr(module, attr, _screened(value))
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, etree.XPath) and screenable(item.path):
                        value[i] = _screened(item)
    for screened in _installed.values():
        for attribute in screened.attributes:
            _paths.setdefault(attribute, etree.XPath(f"//@{attribute}", smart_strings=False))
    return len(_installed)


def _screened(plain: etree.XPath) -> ScreenedXPath:
    screened = _installed.get(id(plain))
    if screened is None:
        screened = _installed[id(plain)] = ScreenedXPath(plain)
    return screened


@contextlib.contextmanager
def screening(root: etree._Element) -> Iterator[None]:
    """Screens the installed expressions against ``root``'s document in this thread,
    for the trees derived from it, until the block ends."""
    previous = getattr(_local, "page", None)
    _local.page = PageValues(root)
    try:
        yield
    finally:
        _local.page = previous
