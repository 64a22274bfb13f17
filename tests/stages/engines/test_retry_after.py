"""Retry-After values as servers send them: seconds, HTTP dates, and junk."""

import time
from datetime import datetime, timezone
from email.utils import format_datetime

import pytest

from mmcurate.stages.engines.retry_after import retry_after_seconds

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("120", 120.0),
        ("0.5", 0.5),
        ("  7 ", 7.0),
        ("Sun, 01 Mar 2026 12:00:30 GMT", 30.0),  # IMF-fixdate, the preferred form
        ("Sunday, 01-Mar-26 12:01:00 GMT", 60.0),  # obsolete RFC 850 form
        ("Sun Mar  1 12:00:05 2026", 5.0),  # asctime form, GMT without saying so
        ("Sun, 01 Mar 2026 11:59:00 GMT", 0.0),  # already past
        ("", 0.0),
        (None, 0.0),
        ("soon", 0.0),
        ("-5", 0.0),
        ("nan", 0.0),
        ("inf", 0.0),
    ],
)
def test_retry_after_in_seconds_or_as_an_http_date(value, seconds):
    assert retry_after_seconds(value, now=NOW) == pytest.approx(seconds)


def test_a_date_is_measured_from_the_clock_by_default():
    later = format_datetime(datetime.fromtimestamp(int(time.time()) + 3, timezone.utc), usegmt=True)
    assert 2.0 <= retry_after_seconds(later) <= 3.0
