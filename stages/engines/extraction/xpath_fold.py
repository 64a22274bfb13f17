"""Union branches of an XPath expression that select nothing because a predicate is
constantly false, as after xpath_screen writes ``false()`` for a regular-expression
test no value of the page passes: ``.//*[self::div][false() or false()]`` selects no
element, and libxml2 would still visit every element to find that out.

:func:`without_empty_branches` drops such branches from a top-level union and says
when none is left. It is conservative: a branch counts as empty only when it is a
plain location path (steps, name tests, predicates, a parenthesised group, no
operator or function at its top level) one of whose top-level predicates, or one of
whose groups, is empty for certain. A predicate is false for certain when it is
``false()``, a ``not()`` of something true for certain, an ``or`` of parts all false
for certain or an ``and`` with one part false for certain (``true()`` likewise); any
other part is unknown. What is inside a function call (``not(.//p[false()])``,
``count(...)``) is never taken for empty.
"""

from __future__ import annotations

import re

_MASK = "_"
# what a location path's top level may hold once predicates and groups are cut out
# in a branch's outline a predicate is "[]" and a group "()": a step is ".", ".." or an
# optional axis, an optional "@" and a name or "*", then its predicates; steps are joined
# by "/" or "//". Anything else (an operator: "a[false()]*2", "1-a[false()]") is not a
# plain path.
_NAME = r"[A-Za-z_][\w.-]*"
_STEP = rf"(?:\.{{1,2}}|(?:{_NAME}::)?@?(?:\*|{_NAME}))(?:\[\])*"
_PATH = re.compile(rf"\s*(?:\(\)(?:\[\])*(?:/{{1,2}}{_STEP})*|/{{0,2}}{_STEP}(?:/{{1,2}}{_STEP})*|/)?\s*")
_UNION = re.compile(r"\|")
_OR = re.compile(r"\sor\s")
_AND = re.compile(r"\sand\s")


def masked(text: str) -> str:
    """``text`` with every character inside a literal, a parenthesis or a bracket
    replaced by ``_`` (the outermost parentheses and brackets themselves kept), so
    what is left is the expression's top level, at the same positions."""
    out = list(text)
    depth, quote = 0, ""
    for i, char in enumerate(text):
        if quote:
            out[i] = _MASK
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            out[i] = _MASK
        elif char in "([":
            depth += 1
            if depth > 1:
                out[i] = _MASK
        elif char in ")]":
            depth -= 1
            if depth > 0:
                out[i] = _MASK
        elif depth > 0:
            out[i] = _MASK
    return "".join(out)


def _pieces(text: str, top: str, separator: re.Pattern) -> list[str]:
    pieces, last = [], 0
    for match in separator.finditer(top):
        pieces.append(text[last : match.start()])
        last = match.end()
    pieces.append(text[last:])
    return pieces


def constant(expression: str) -> bool | None:
    """True or False when the boolean ``expression`` is so whatever it is evaluated on,
    None when that depends on the element."""
    top = masked(expression)
    terms = [_conjunction(term) for term in _pieces(expression, top, _OR)]
    if True in terms:
        return True
    return False if all(term is False for term in terms) else None


def _conjunction(text: str) -> bool | None:
    factors = [_factor(factor) for factor in _pieces(text, masked(text), _AND)]
    if False in factors:
        return False
    return True if all(factor is True for factor in factors) else None


def _factor(text: str) -> bool | None:
    text = text.strip()
    if text in ("false()", "true()"):
        return text == "true()"
    top = masked(text)
    for opening, negate in (("not(", True), ("(", False)):
        # one call or group spanning the whole factor: its top level is just its ends
        if text.startswith(opening) and top == opening + _MASK * (len(text) - len(opening) - 1) + ")":
            inner = constant(text[len(opening) : -1])
            return inner if inner is None or not negate else not inner
    return None


def _empty_branch(branch: str) -> bool | None:
    """True when ``branch`` selects nothing for certain, False when it is a plain
    location path that may select something, None when it is not a plain path."""
    top = masked(branch)
    outline, empty, i = [], False, 0
    while i < len(top):
        char = top[i]
        if char in "([":
            end = top.index(")" if char == "(" else "]", i)
            inner = branch[i + 1 : end]
            if char == "[":
                empty = empty or constant(inner) is False
            elif re.search(r"[\w-]\s*$", "".join(outline)):
                return None  # a function call at the top level
            elif without_empty_branches(inner) is None:
                empty = True
            outline.append("[]" if char == "[" else "()")
            i = end + 1
            continue
        outline.append(char)
        i += 1
    if not _PATH.fullmatch("".join(outline)):
        return None
    return empty


def without_empty_branches(expression: str) -> str | None:
    """``expression`` without the top-level union branches that select nothing for
    certain (the others in their order; a union's result is in document order
    whatever the order of its branches), or None when no branch is left."""
    branches = _pieces(expression, masked(expression), _UNION)
    kept = [branch for branch in branches if _empty_branch(branch) is not True]
    if not kept:
        return None
    return expression if len(kept) == len(branches) else "|".join(kept)
