"""The ``get-current-time`` tool: the right instant, the right offset, clear errors."""

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from heron.tools import LocalToolClient, ToolResult, get_current_time

# "2026-11-30T14:29:30+09:00 (Monday, Asia/Tokyo)"
ANSWER = re.compile(r"(?P<stamp>\S+) \((?P<weekday>[A-Z][a-z]+day), (?P<zone>[^)]+)\)")


async def ask(**arguments: Any) -> ToolResult:
    return await LocalToolClient([get_current_time]).call_tool("get-current-time", arguments)


async def current_time(zone: str, **arguments: Any) -> datetime:
    """Call the tool and check its answer against the clock and zoneinfo, independently."""
    before = datetime.now(UTC).replace(microsecond=0)
    result = await ask(**arguments)
    after = datetime.now(UTC)
    assert not result.is_error, result.text
    match = ANSWER.fullmatch(result.text)
    assert match, result.text
    stamp = datetime.fromisoformat(match["stamp"])
    assert stamp.microsecond == 0
    assert before <= stamp <= after
    # The offset is the one zoneinfo gives for that instant, not merely any offset.
    assert stamp.utcoffset() == stamp.astimezone(ZoneInfo(zone)).utcoffset()
    assert match["weekday"] == stamp.strftime("%A")
    assert match["zone"] == zone
    return stamp


class TestAnswer:
    async def test_utc_by_default(self) -> None:
        stamp = await current_time("UTC")
        assert stamp.utcoffset() == timedelta(0)

    @pytest.mark.parametrize(
        "zone",
        [
            "Asia/Tokyo",
            "Europe/Paris",
            "America/New_York",
            "Australia/Lord_Howe",  # a half-hour daylight-saving shift
            "Asia/Kolkata",  # +05:30
            "Asia/Kathmandu",  # +05:45
            "Pacific/Kiritimati",  # +14:00, a different date from most of the world
            "Etc/GMT+5",  # POSIX sign: five hours *behind* UTC
        ],
    )
    async def test_in_an_iana_timezone(self, zone: str) -> None:
        await current_time(zone, timezone=zone)

    async def test_known_offsets(self) -> None:
        tokyo = await current_time("Asia/Tokyo", timezone="Asia/Tokyo")
        assert tokyo.isoformat().endswith("+09:00")
        kolkata = await current_time("Asia/Kolkata", timezone="Asia/Kolkata")
        assert kolkata.isoformat().endswith("+05:30")
        behind = await current_time("Etc/GMT+5", timezone="Etc/GMT+5")
        assert behind.isoformat().endswith("-05:00")

    @pytest.mark.parametrize("spelling", ["utc", "UTC", "", "  "])
    async def test_utc_spellings_and_blank_mean_utc(self, spelling: str) -> None:
        await current_time("UTC", timezone=spelling)

    async def test_surrounding_spaces_are_ignored(self) -> None:
        await current_time("Europe/Paris", timezone="  Europe/Paris ")


class TestErrors:
    @pytest.mark.parametrize(
        "zone",
        [
            "Mars/Olympus_Mons",
            "Tokyo",
            "../../etc/passwd",
            "/etc/localtime",
            "Europe",  # a directory of the timezone database, not a zone
            "Europe/" + "x" * 300,  # longer than a file name may be
        ],
        ids=["made-up", "city-only", "path-escape", "absolute-path", "directory", "too-long"],
    )
    async def test_an_unknown_timezone_is_an_error_naming_it(self, zone: str) -> None:
        result = await ask(timezone=zone)
        assert result.is_error
        assert f"unknown timezone {zone!r}" in result.text
        assert "IANA" in result.text

    async def test_a_non_string_timezone_is_an_argument_error(self) -> None:
        result = await ask(timezone=9)
        assert result.is_error
        assert "timezone" in result.text

    async def test_unknown_arguments_are_refused(self) -> None:
        result = await ask(tz="Asia/Tokyo")
        assert result.is_error
        assert "tz" in result.text


async def test_schema_offers_an_optional_timezone() -> None:
    (schema,) = await LocalToolClient([get_current_time]).list_tools()
    assert schema.name == "get-current-time"
    assert "time" in schema.description.lower()
    properties = schema.input_schema["properties"]
    assert list(properties) == ["timezone"]
    assert properties["timezone"]["type"] == "string"
    assert "IANA" in properties["timezone"]["description"]
    assert "timezone" not in schema.input_schema.get("required", [])
