"""HTML escaping and short number formatting, shared by every part of the report page."""

from __future__ import annotations

import html
from typing import Any


def esc(value: Any) -> str:
    """``value`` as HTML text (attribute-safe); None becomes the empty string."""
    return html.escape("" if value is None else str(value), quote=True)


def fmt(v: float) -> str:
    """A number as the page shows it: whole numbers without a point, else 3 significant digits."""
    if v == int(v) and abs(v) < 1e9:
        return str(int(v))
    return f"{v:.3g}"
