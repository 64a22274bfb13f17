"""How an exception is written on its error row (the `detail` column)."""

from __future__ import annotations

import traceback


def error_detail(exc: BaseException, limit: int = 2000) -> str:
    """The message and the innermost frames of an exception, for the decision row."""
    message = f"{exc}"
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = " <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in reversed(frames))
    text = f"{message} [at {where}]" if where else message
    return text[:limit]
