"""Ctrl-C in a run's main process, noted so that it is never lost.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives;
inside a weakref callback or a ``__del__`` (which the garbage collector runs at any
moment, e.g. between two phases) the exception cannot propagate: Python prints it
as "Exception ignored in ..." and the run would go on to the end. While ``noted``
is active such a lost interrupt is not printed but delivered again to the main
thread a moment later (as if SIGINT had arrived once more), and recorded: ``check``, called
between phases, raises it should it be lost again.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
import threading

_lost = threading.Event()
# How soon a lost interrupt is delivered again: once the main thread has left the
# callback it was lost in (ours; the callbacks are short).
_REDELIVER_SECONDS = 0.1


@contextlib.contextmanager
def noted():
    """While active, a KeyboardInterrupt that cannot propagate is raised again, silently."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            _lost.set()
            # Not from here: a signal delivered now would interrupt this hook itself.
            threading.Timer(_REDELIVER_SECONDS, _thread.interrupt_main).start()
        else:
            previous(unraisable)

    _lost.clear()
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def check() -> None:
    """Raises KeyboardInterrupt if one was lost (see ``noted``)."""
    if _lost.is_set():
        _lost.clear()
        raise KeyboardInterrupt
