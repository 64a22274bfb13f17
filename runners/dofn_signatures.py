"""Beam's introspection of a DoFn's methods, computed once per function and process
instead of at every use.

Each ``ParDo`` Beam builds, translates or runs asks ``inspect.signature`` about every
method of its DoFn (``userstate.get_dofn_specs`` walks ``dir(dofn)``), several times
per pipeline: about 35,000 signatures for a one-phase ``--stages heuristics`` run,
about 0.55 CPU s of its start-up (a third of the CPU of a test's small run). The
answer (``core.get_function_args_defaults``: argument names and defaults) depends
only on the function, so ``mmcurate run`` (``pipeline.run``) and the tests
(tests/conftest.py) install this memo, keyed by the function behind a bound method.
Nothing else changes: the same names and defaults come back (fresh lists, as from
Beam), and every other callable goes to Beam's own code. Worker processes that
Beam starts (the ``local`` preset's, a Portable or Flink runner's SDK harness) run
Beam's own introspection.

``userstate.get_dofn_specs`` (the state and timer specs of a DoFn, asked about
1,100 times in such a run, each a ``MethodWrapper`` per method: about 0.15 CPU s)
is memoized the same way, keyed by what its answer is made of: the functions
behind the DoFn's bound methods, by name (the walk over ``dir(dofn)`` Beam does
is still done, the ``MethodWrapper``s are not). A DoFn with its own
``__getattr__``/``__getattribute__`` (Beam's type-check wrappers), or with a
bound method that has an ``_inspect_`` hook (``beam.FlatMap`` of a bound method) or
is of anything but a plain function, goes to Beam's own code. The answer's sets are fresh copies; its specs are the same
objects. Installed, it stays for the life of the process (a
program that calls ``run_curation`` gets it too), and it is installed only on the
Beam release it was checked against (``BEAM_VERSION``, the pinned one): on another,
Beam's own function runs unchanged.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

_Answer = tuple[list[str], list[Any]]


def _keyed(original: Callable, key_of: Callable, kind: type, frozen: type) -> Callable:
    """``original`` (one argument, answering a pair of collections), remembered by
    ``key_of(argument)`` (None: not remembered); each caller gets fresh ``kind``s."""
    memo: dict[Any, tuple] = {}

    def remembered(argument):
        key = key_of(argument)
        if key is None:
            return original(argument)
        known = memo.get(key)
        if known is None:
            known = memo[key] = tuple(map(frozen, original(argument)))
        return kind(known[0]), kind(known[1])

    remembered.__wrapped__ = original
    return remembered


def _function_of(f: Any) -> Any:
    """The plain function behind the bound method ``f``; None for anything else."""
    function = getattr(f, "__func__", None)
    return function if inspect.ismethod(f) and inspect.isfunction(function) else None


def memoized(original: Callable[[Any], _Answer]) -> Callable[[Any], _Answer]:
    """``get_function_args_defaults`` remembered by the function behind a bound method."""
    return _keyed(original, _function_of, list, tuple)


_Specs = tuple[set, set]


def _methods(dofn: Any) -> tuple | None:
    """(name, function) of every bound method of the DoFn ``dofn`` that
    ``get_dofn_specs`` reads, in ``dir`` order; None where its answer may depend on
    more than that, or ``dofn`` is no DoFn."""
    from apache_beam.transforms.core import DoFn

    kind = type(dofn)
    if not isinstance(dofn, DoFn) or kind.__getattribute__ is not object.__getattribute__ or hasattr(kind, "__getattr__"):
        return None
    methods = []
    for name in dir(dofn):
        method = getattr(dofn, name, None)
        if isinstance(method, types.MethodType):
            # Beam reads a method's parameters from its _inspect_ hook when it has one
            if not inspect.isfunction(method.__func__) or hasattr(dofn, "_inspect_" + name):
                return None
            methods.append((name, method.__func__))
    return tuple(methods)


def memoized_specs(original: Callable[[Any], _Specs]) -> Callable[[Any], _Specs]:
    """``get_dofn_specs`` remembered by the functions behind the DoFn's bound methods."""
    return _keyed(original, _methods, set, frozenset)


# The Beam release whose callers this memo was checked against (pyproject.toml pins it).
BEAM_VERSION = "2.77.0"


def install() -> bool:
    """Memoize ``apache_beam.transforms.core.get_function_args_defaults`` and
    ``apache_beam.transforms.userstate.get_dofn_specs`` (their callers in Beam look
    them up in those modules at each call); whether the memos are in place."""
    import apache_beam
    from apache_beam.transforms import core, userstate

    if apache_beam.__version__ != BEAM_VERSION or not hasattr(core, "get_function_args_defaults"):
        return False
    if not hasattr(core.get_function_args_defaults, "__wrapped__"):
        core.get_function_args_defaults = memoized(core.get_function_args_defaults)
    if not hasattr(userstate.get_dofn_specs, "__wrapped__"):
        userstate.get_dofn_specs = memoized_specs(userstate.get_dofn_specs)
    return True
