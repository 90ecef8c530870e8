"""Cron expressions and their ticks: fields, shorthands, seconds, and DST in Europe/Berlin."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from heron.runtime.crons._schedule import parse_schedule, parse_timezone
from heron.runtime.crons._service import tick_node_id

BERLIN = parse_timezone("Europe/Berlin")


def at(*parts: int) -> float:
    """A Berlin wall-clock time as a Unix time."""
    return datetime(*parts, tzinfo=BERLIN).timestamp()  # type: ignore[misc]


def ticks(expression: str, start: float, count: int, zone: str = "Europe/Berlin") -> list[str]:
    """The next ``count`` ticks after ``start``, as local ISO times with their offset."""
    schedule, tz = parse_schedule(expression), parse_timezone(zone)
    found: list[str] = []
    for _ in range(count):
        start = schedule.next_after(start, tz)
        found.append(datetime.fromtimestamp(start, tz).isoformat())
    return found


class TestDst:
    def test_a_daily_time_skipped_by_spring_forward_fires_once_just_after_the_gap(self) -> None:
        # 2026-03-29: Berlin jumps from 02:00 CET to 03:00 CEST; 02:30 never happens.
        assert ticks("30 2 * * *", at(2026, 3, 27, 12), 4) == [
            "2026-03-28T02:30:00+01:00",
            "2026-03-29T03:00:00+02:00",
            "2026-03-30T02:30:00+02:00",
            "2026-03-31T02:30:00+02:00",
        ]

    def test_a_daily_time_repeated_by_fall_back_fires_only_once(self) -> None:
        # 2026-10-25: 02:00-03:00 happens twice (CEST, then CET); the job runs once.
        assert ticks("30 2 * * *", at(2026, 10, 23, 12), 3) == [
            "2026-10-24T02:30:00+02:00",
            "2026-10-25T02:30:00+02:00",
            "2026-10-26T02:30:00+01:00",
        ]

    def test_an_hourly_schedule_keeps_its_pace_through_the_repeated_hour(self) -> None:
        found = ticks("0 * * * *", at(2026, 10, 25, 0, 30), 4)
        assert found == [
            "2026-10-25T01:00:00+02:00",
            "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:00:00+01:00",
            "2026-10-25T03:00:00+01:00",
        ]
        # 25 hourly ticks in that 25-hour day, an hour apart in real time.
        day = parse_schedule("0 * * * *")
        start, end = at(2026, 10, 25, 0, 0) - 1, at(2026, 10, 26, 0, 0) - 1
        moments = []
        while (start := day.next_after(start, BERLIN)) <= end:
            moments.append(start)
        assert len(moments) == 25
        assert {b - a for a, b in itertools.pairwise(moments)} == {3600.0}

    def test_every_30_minutes_skips_only_the_missing_hour_in_spring(self) -> None:
        assert ticks("*/30 * * * *", at(2026, 3, 29, 1, 10), 3) == [
            "2026-03-29T01:30:00+01:00",
            "2026-03-29T03:00:00+02:00",
            "2026-03-29T03:30:00+02:00",
        ]

    def test_the_latest_tick_before_a_moment_respects_the_repeat(self) -> None:
        daily = parse_schedule("30 2 * * *")
        latest = daily.latest_until(at(2026, 10, 25, 12), BERLIN)
        assert latest is not None
        assert datetime.fromtimestamp(latest, BERLIN).isoformat() == "2026-10-25T02:30:00+02:00"
        # Exactly on a tick: that tick.
        assert daily.latest_until(latest, BERLIN) == latest

    def test_the_same_expression_in_two_zones_fires_at_different_instants(self) -> None:
        start = datetime(2026, 5, 31, 12, tzinfo=UTC).timestamp()
        nine = parse_schedule("0 9 * * *")
        berlin = nine.next_after(start, BERLIN)
        tokyo = nine.next_after(start, parse_timezone("Asia/Tokyo"))
        assert berlin - tokyo == 7 * 3600


class TestExpressions:
    def test_a_leading_seconds_field_fires_every_two_seconds(self) -> None:
        found = ticks("*/2 * * * * *", at(2026, 1, 1, 12, 0, 1), 3, "UTC")
        assert [t[11:19] for t in found] == ["11:00:02", "11:00:04", "11:00:06"]

    @pytest.mark.parametrize(
        ("shorthand", "first"),
        [
            ("@hourly", "2026-01-01T13:00:00+00:00"),
            ("@daily", "2026-01-02T00:00:00+00:00"),
            ("@weekly", "2026-01-04T00:00:00+00:00"),
            ("@monthly", "2026-02-01T00:00:00+00:00"),
            ("@yearly", "2027-01-01T00:00:00+00:00"),
        ],
    )
    def test_shorthands(self, shorthand: str, first: str) -> None:
        start = datetime(2026, 1, 1, 12, 30, tzinfo=UTC).timestamp()
        assert ticks(shorthand, start, 1, "UTC") == [first]

    def test_names_ranges_and_the_last_day(self) -> None:
        start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
        assert ticks("0 9 * * mon-fri", start, 2, "UTC") == [
            "2026-01-01T09:00:00+00:00",
            "2026-01-02T09:00:00+00:00",
        ]
        assert ticks("0 0 L feb *", start, 1, "UTC") == ["2026-02-28T00:00:00+00:00"]

    @pytest.mark.parametrize(
        ("expression", "says"),
        [
            ("", "empty"),
            ("* * *", "has 3 fields"),
            ("* * * * * * *", "has 7 fields"),
            ("61 * * * *", "not a valid cron expression"),
            ("0 0 * * funday", "not a valid cron expression"),
            ("@reboot", "unknown shorthand"),
            ("0 0 30 2 *", "never fires"),
        ],
    )
    def test_bad_expressions_say_what_is_wrong(self, expression: str, says: str) -> None:
        with pytest.raises(ValueError, match=says):
            parse_schedule(expression)

    @pytest.mark.parametrize("name", ["Mars/Olympus", "", "localtime", "../etc/passwd", "utc "])
    def test_bad_timezones(self, name: str) -> None:
        with pytest.raises(ValueError, match="unknown timezone"):
            parse_timezone(name)

    def test_a_ticks_node_id_is_a_valid_id_fixed_by_the_tick(self) -> None:
        tick = datetime(2026, 11, 30, 17, 0, tzinfo=UTC).timestamp()
        assert tick_node_id("cron_ab", tick) == "cron_ab.20261130T170000"
