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
Beam's own introspection. Installed, it stays for the life of the process (a
program that calls ``run_curation`` gets it too), and it is installed only on the
Beam release it was checked against (``BEAM_VERSION``, the pinned one): on another,
Beam's own function runs unchanged.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

_Answer = tuple[list[str], list[Any]]


def memoized(original: Callable[[Any], _Answer]) -> Callable[[Any], _Answer]:
    memo: dict[Any, tuple[tuple[str, ...], tuple[Any, ...]]] = {}

    def get_function_args_defaults(f):
        function = getattr(f, "__func__", None)
        if not (inspect.ismethod(f) and inspect.isfunction(function)):
            return original(f)
        known = memo.get(function)
        if known is None:
            args, defaults = original(f)
            known = memo[function] = (tuple(args), tuple(defaults))
        return list(known[0]), list(known[1])

    get_function_args_defaults.__wrapped__ = original
    return get_function_args_defaults


# The Beam release whose callers this memo was checked against (pyproject.toml pins it).
BEAM_VERSION = "2.77.0"


def install() -> bool:
    """Memoize ``apache_beam.transforms.core.get_function_args_defaults`` (its callers
    in Beam look it up in that module at each call); whether the memo is in place."""
    import apache_beam
    from apache_beam.transforms import core

    if apache_beam.__version__ != BEAM_VERSION or not hasattr(core, "get_function_args_defaults"):
        return False
    if not hasattr(core.get_function_args_defaults, "__wrapped__"):
        core.get_function_args_defaults = memoized(core.get_function_args_defaults)
    return True
