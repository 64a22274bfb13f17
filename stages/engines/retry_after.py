"""The ``Retry-After`` header of a 429 or 503 answer, as seconds to wait.

RFC 9110, section 10.2.3: the value is either a delay in whole seconds or an
HTTP date. A date is turned into the time left until it (0 when it is past). A
fractional delay is accepted too (some servers send one; the tests use them).
Anything else (empty, a word, a negative number) asks for no wait, so the
caller's own backoff applies.
"""

from __future__ import annotations

import math
import time
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Optional


def retry_after_seconds(value: Optional[str], now: Optional[float] = None) -> float:
    """Seconds the server asked to wait; ``now`` is a Unix time (default: the clock)."""
    value = (value or "").strip()
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds > 0 else 0.0
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return 0.0
    if when.tzinfo is None:  # asctime form: no zone written, GMT by definition (RFC 9110, 5.6.7)
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
