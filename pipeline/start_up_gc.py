"""Python's cyclic garbage collector while ``mmcurate run`` starts.

Starting a run imports Beam, pyarrow, pandas, trafilatura and the stages, and builds
the pipeline: about 190,000 objects that live as long as the process. The collector
walks every one of them again in each full collection, and the start-up triggers
about 470 collections: 0.26-0.35 of the 4.4-5.2 CPU seconds of a one-page run
(the start-up ``benchmarks/bench_vs_datatrove.py`` prints). ``paused`` turns the
collector off while the command starts; ``settle``, when the pipeline is about to
be built and run, moves everything alive into the permanent generation
(``gc.freeze``: never walked again) and turns the collector back on, so the
garbage of the pages is collected as before. What became cyclic garbage while the
collector was off (about 3,000 objects at a run's start) is frozen with the rest and
freed at exit. On leaving, the frozen objects go back to the oldest generation
(``gc.unfreeze``), so a process that calls the command more than once (the tests)
keeps collecting them. A collector that someone else turned off or froze is left
as it is.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Callable, Iterator


@contextlib.contextmanager
def paused() -> Iterator[Callable[[], None]]:
    """The collector off inside the block; the block calls the function it gets
    (``settle``) when its start-up is over."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield lambda: None
        return
    frozen = False

    def settle() -> None:
        nonlocal frozen
        if not frozen:
            gc.freeze()
            frozen = True
            gc.enable()

    gc.disable()
    try:
        yield settle
    finally:
        if frozen:
            gc.unfreeze()
        gc.enable()
