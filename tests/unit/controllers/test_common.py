"""The rules every controller shares: times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.common import format_time, now, parse_time

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = format_time(T0 - timedelta(minutes=5))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2026-03-01T12:00:00Z", T0, id="RFC 3339 in UTC is read"),
        pytest.param("2026-03-01T13:00:00+01:00", T0, id="an offset is converted to UTC"),
        pytest.param(
            "2026-03-01T12:00:00.250000Z", T0 + timedelta(milliseconds=250), id="fractional seconds are kept"
        ),
        pytest.param(None, None, id="None is absent"),
        pytest.param("", None, id="an empty string is absent"),
        pytest.param(17, None, id="a number is absent"),
        pytest.param("yesterday", None, id="free text is absent"),
        # No offset: which clock it means is unknown, and it cannot be compared with aware times.
        pytest.param("2026-03-01T12:00:00", None, id="a time without an offset is absent"),
    ],
)
def test_parse_time_reads_rfc3339_and_treats_anything_else_as_absent(text: Any, expected: Any) -> None:
    assert parse_time(text) == expected


def test_now_is_aware_utc_in_whole_seconds_and_round_trips() -> None:
    moment = now()
    assert moment.tzinfo is not None and moment.utcoffset() == timedelta(0)
    assert moment.microsecond == 0
    assert parse_time(format_time(moment)) == moment
    assert format_time(T0) == "2026-03-01T12:00:00Z"
