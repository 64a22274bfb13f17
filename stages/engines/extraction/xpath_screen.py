"""trafilatura's XPath expressions with their regular-expression tests screened per page.

trafilatura selects content and boilerplate with XPath expressions that test ``class``,
``id`` and ``style`` values against regular expressions (EXSLT ``re:test``). libxml2
cannot run those itself, so lxml calls back into Python for every element a test is
asked about, with or without the attribute: most of trafilatura's XPath time.

Most of those tests cannot succeed anywhere on a given page: no ``class`` of the page
contains "cookie", no ``id`` reads "comments". Every tree trafilatura queries while it
extracts one page is the page's own tree, a copy of it or a part of one, with elements
removed, renamed or given trafilatura's own attributes (``rend``, ``role``, ``target``,
``href``, ``src``, ``alt``, ``title``, ``type``); no ``class``, ``id`` or ``style``
value appears that the page did not have. So, while a page is screened
(:func:`screening`), each ``re:test(@attr, 'pattern'[, 'flags'])`` of an expression is
decided once against all of the page's values of those attributes:

- no value matches: the test is false on every element, and the expression is run
  with ``false()`` in its place;
- some value matches: the test runs as before, behind ``(@attr) and``, so elements
  without the attribute are not asked (the test is false on them, since its pattern
  cannot match an empty string).

Union branches that the ``false()`` tests leave selecting nothing are dropped, and an
expression left with none is not run (xpath_fold), since libxml2 would still visit
every element to find nothing.

A pattern that can match an empty string is left as it is. The values are joined by
newlines and searched once (with ``re.MULTILINE``, so ``^`` and ``$`` still see each
value's ends); a pattern with a lookaround, ``\\A`` or ``\\Z``, which could read across
a value's end, is searched in each value instead. Either way a value that matches alone
makes the page's test possible, so a screened expression selects what the plain one
selects. Outside :func:`screening`, or called with XPath variables, a screened
expression is the plain one. Each rewritten expression is compiled once per
combination of possible tests and kept.

``tests/stages/engines/test_xpath_screen.py`` compares each screened expression with
its plain one on random trees, and whole extractions with and without screening.
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
# re:test over attributes of the context element, with a literal pattern and flags
_RE_TEST = re.compile(r"re:test\(\s*(@[\w-]+(?:\s*\|\s*@[\w-]+)*)\s*,\s*'([^']*)'\s*(?:,\s*'([^']*)'\s*)?\)")
# constructs whose match in one value might not be one in the newline-joined values
_READS_ACROSS = re.compile(r"\(\?<?[=!]|\\[AZ]")
# a namespace prefix (``re:``), not an axis (``self::``), outside string literals
_PREFIX = re.compile(r"(?<![:\w.-])([A-Za-z_][\w.-]*):(?![:=])")
_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"")
_local = threading.local()
_NOTHING = object()  # a variant that selects nothing on any tree: not run


class RegexTest:
    """One ``re:test`` call of an expression, compiled as lxml's EXSLT extension
    compiles it (``re.UNICODE``, plus ``re.IGNORECASE`` when the flags hold ``i``)."""

    __slots__ = ("attributes", "key", "regex", "joined", "matches_empty")

    def __init__(self, attributes: str, pattern: str, flags: str) -> None:
        self.attributes = tuple(a.strip()[1:] for a in attributes.split("|"))
        ignore_case = re.IGNORECASE if "i" in flags else 0
        self.key = (self.attributes, pattern, ignore_case)
        self.regex = re.compile(pattern, re.UNICODE | ignore_case)
        self.joined = None if _READS_ACROSS.search(pattern) else re.compile(pattern, re.UNICODE | ignore_case | re.MULTILINE)
        self.matches_empty = self.regex.search("") is not None


class PageValues:
    """A page's values of the attributes screened expressions test, and which tests
    some value passes (each decided once per page)."""

    __slots__ = ("_values", "_joined", "_possible")

    def __init__(self, root: etree._Element) -> None:
        self._values = {name: list(dict.fromkeys(path(root))) for name, path in _paths.items()}
        self._joined: dict[str, str] = {}
        self._possible: dict[tuple, bool] = {}

    def possible(self, test: RegexTest) -> bool:
        """Whether some value of ``test``'s attributes on this page matches its pattern."""
        found = self._possible.get(test.key)
        if found is None:
            found = any(self._matches(test, name) for name in test.attributes)
            self._possible[test.key] = found
        return found

    def _matches(self, test: RegexTest, name: str) -> bool:
        values = self._values.get(name)
        if values is None:  # an attribute no installed expression tests: cannot decide
            return True
        if test.joined is None:
            return any(map(test.regex.search, values))
        joined = self._joined.get(name)
        if joined is None:
            joined = self._joined[name] = "\n".join(values)
        return test.joined.search(joined) is not None


class ScreenedXPath:
    """Drop-in for an ``etree.XPath`` whose ``re:test`` calls are decided per page."""

    def __init__(self, plain: etree.XPath) -> None:
        self.plain = plain
        self.path = plain.path
        self._calls = [(m.span(), RegexTest(*m.groups(default=""))) for m in _RE_TEST.finditer(plain.path)]
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
    """An expression this module can rewrite: it has a ``re:test`` call of the form
    above and uses no namespace prefix but ``re``."""
    return bool(_RE_TEST.search(path)) and set(_PREFIX.findall(_LITERAL.sub("''", path))) == {"re"}


_installed: dict[int, ScreenedXPath] = {}
_paths: dict[str, etree.XPath] = {}


def install(module_prefix: str = "trafilatura") -> int:
    """Replaces every screenable XPath of the loaded ``module_prefix`` modules, as a
    module attribute or an item of a module-level list, by its :class:`ScreenedXPath`
    (the same one wherever it is bound). Returns how many expressions are screened."""
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
