"""Beam's ``PipelineOptions.view_as``, made once per options object and view class
instead of at every call.

Each call builds an argparse parser of the view class and parses the options'
flags again; building and translating a pipeline asks about 560 times in a
one-phase ``--stages heuristics`` run (mostly ``TypeOptions``, from
``Pipeline.apply`` and the type checks), about 0.2 CPU s of its start-up. A view
holds nothing of its own: its ``_flags`` and ``_all_options`` are the viewed
object's (every option value lives in ``_all_options``, shared by all views), its
``_visible_options`` is the parse of those flags by the view class, and
``PipelineOptions.__setattr__`` refuses any other attribute. So the view made
first answers every later call as a new one would, as long as the options object
still holds the same flags (the same list, with the same items; ``sys.argv``,
when the flags are None) and the same ``_all_options``: that is checked at each
call, and otherwise Beam's own ``view_as`` runs and its view is kept instead.
What Beam's ``view_as`` does besides making the view is done at every call: it
adds the view's options missing from ``_all_options`` at their parsed values, and
calls ``logging.basicConfig()`` (``PipelineOptions.__init__`` does, so a root
logger left without handlers gets one back, as with Beam's).

Installed by ``mmcurate run`` (``pipeline.run``) and the tests (tests/conftest.py)
for the life of the process, and only on the Beam release it was checked against
(``dofn_signatures.BEAM_VERSION``, the pinned one); worker processes Beam starts
run Beam's own ``view_as``.
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from typing import Any, Callable

from mmcurate.runners.dofn_signatures import BEAM_VERSION


def _flags_now(options: Any) -> tuple:
    flags = options._flags
    return (flags, tuple(sys.argv if flags is None else flags))


def memoized(original: Callable[[Any, type], Any]) -> Callable[[Any, type], Any]:
    """``view_as`` that keeps, per options object (weakly) and view class, the view
    ``original`` made and the flags it was made from."""
    views: "weakref.WeakKeyDictionary[Any, dict[type, tuple[Any, Any, tuple, list[str]]]]" = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    def view_as(self, cls):
        made = views.get(self)
        known = made.get(cls) if made is not None else None
        if known is not None:
            view, flags, snapshot, names = known
            all_options = self._all_options
            if view._all_options is all_options and self._flags is flags and _flags_now(self)[1] == snapshot:
                logging.basicConfig()
                for name in names:
                    if name not in all_options:
                        all_options[name] = getattr(view._visible_options, name)
                return view
        flags, snapshot = _flags_now(self)
        view = original(self, cls)
        with lock:
            views.setdefault(self, {})[cls] = (view, flags, snapshot, view._visible_option_list())
        return view

    view_as.__wrapped__ = original
    return view_as


def install() -> bool:
    """Memoize ``PipelineOptions.view_as``; whether the memo is in place."""
    import apache_beam
    from apache_beam.options.pipeline_options import PipelineOptions

    if apache_beam.__version__ != BEAM_VERSION:
        return False
    if not hasattr(PipelineOptions.view_as, "__wrapped__"):
        PipelineOptions.view_as = memoized(PipelineOptions.view_as)
    return True
