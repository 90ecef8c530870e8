"""Cron expressions and their ticks in an IANA timezone (pure functions, no I/O).

Five fields (``minute hour day-of-month month day-of-week``), six with a leading seconds
field, or a name (``@hourly`` ... ``@annually``); ``L`` and ``#`` (``mon#2``) too. Ticks are
DST-correct (ARCHITECTURE.md, crons, says how skipped and repeated times fire)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterError, croniter

__all__ = ["MAX_EXPRESSION", "Schedule", "parse_schedule", "parse_timezone"]

MAX_EXPRESSION = 256
"""The longest expression accepted (characters)."""

NICKNAMES = ("@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually")
"""The ``@`` shorthands accepted."""

_HOUR = 1
"""Index of the hour field in croniter's expansion (seconds, if any, come last there)."""

_SEARCH = 4096
"""How many candidates a search may skip (repeated hours) before it gives up."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed cron expression (see the module docstring)."""

    expression: str
    """The expression as given (trimmed)."""
    seconds: bool
    """Whether it has the leading seconds field."""
    every_hour: bool
    """Whether it matches every hour (keeps firing through a repeated DST hour)."""

    def _iter(self, start: datetime) -> croniter[datetime]:
        return croniter(self.expression, start, ret_type=datetime, second_at_beginning=self.seconds)

    def _skipped(self, moment: datetime, zone: ZoneInfo) -> bool:
        """Whether ``moment`` is the second occurrence of a repeated wall-clock time that
        this schedule fires only once."""
        if self.every_hour:
            return False
        local = moment.astimezone(zone)
        return local.fold == 1 and local.replace(fold=0).utcoffset() != local.utcoffset()

    def next_after(self, after: float, zone: ZoneInfo) -> float:
        """The first tick strictly later than the Unix time ``after``.

        ``ValueError`` if the expression never fires again (``0 0 30 2 *``).
        """
        moment = datetime.fromtimestamp(after, zone)
        for _ in range(_SEARCH):
            try:
                moment = self._iter(moment).get_next(datetime)
            except CroniterError:
                raise ValueError(f"{self.expression!r} never fires") from None
            if not self._skipped(moment, zone):
                return moment.timestamp()
        raise ValueError(f"{self.expression!r} never fires")

    def latest_until(self, until: float, zone: ZoneInfo) -> float | None:
        """The last tick at or before the Unix time ``until`` (``None``: there is none)."""
        # croniter's previous tick is strictly earlier: start a hair after ``until``.
        moment = datetime.fromtimestamp(until, zone) + timedelta(microseconds=1)
        for _ in range(_SEARCH):
            try:
                moment = self._iter(moment).get_prev(datetime)
            except CroniterError:
                return None
            if not self._skipped(moment, zone):
                return moment.timestamp()
        return None


def parse_schedule(expression: str) -> Schedule:
    """The schedule ``expression`` describes; ``ValueError`` saying what is wrong."""
    text = " ".join(expression.split())
    if not text:
        raise ValueError("the schedule is empty: give a cron expression such as '0 9 * * mon-fri'")
    if len(text) > MAX_EXPRESSION:
        raise ValueError(f"the schedule is longer than {MAX_EXPRESSION} characters")
    if text.startswith("@"):
        if text.lower() not in NICKNAMES:
            raise ValueError(f"unknown shorthand {text!r}: use one of {', '.join(NICKNAMES)}")
        text = text.lower()
        fields = 5
    else:
        fields = len(text.split(" "))
        if fields not in (5, 6):
            raise ValueError(
                f"{text!r} has {fields} field{'s' if fields != 1 else ''}: a schedule has 5 "
                "(minute hour day month weekday) or 6 (second minute hour day month weekday)"
            )
    seconds = fields == 6
    try:
        expanded = croniter(text, second_at_beginning=seconds).expanded
    except CroniterError as exc:
        raise ValueError(f"{text!r} is not a valid cron expression: {exc}") from None
    hours = expanded[_HOUR]
    schedule = Schedule(
        expression=text, seconds=seconds, every_hour=hours == ["*"] or len(hours) == 24
    )
    # Refused now, not at its first firing: a date that never comes (``0 0 30 2 *``).
    schedule.next_after(0.0, ZoneInfo("UTC"))
    return schedule


def parse_timezone(name: str) -> ZoneInfo:
    """The IANA timezone ``name`` (``Europe/Berlin``, ``UTC``); ``ValueError`` otherwise."""
    if name not in _known_zones():
        raise ValueError(f"unknown timezone {name!r}: give an IANA name such as 'Europe/Berlin'")
    return ZoneInfo(name)


@functools.cache
def _known_zones() -> frozenset[str]:
    # The IANA names only: a system file such as ``localtime`` means different zones
    # on different machines (two daemons sharing PostgreSQL must agree).
    return frozenset(available_timezones()) - {"localtime", "posixrules", "Factory"}
