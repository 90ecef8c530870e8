"""The profiles' own store: ``heron_profiles``, a row of settings per profile."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TypedDict, cast

import sqlalchemy as sa

from ..db import Database
from ..server import ApiError
from ._tables import profiles

__all__ = ["SETTINGS", "ProfileRow", "ProfileSettings", "ProfileStore"]

SETTINGS = ("default_kind", "default_model")
"""The keys of a profile's ``settings``."""


class ProfileSettings(TypedDict, total=False):
    """Defaults for a profile's nodes (each key only when set)."""

    default_kind: str
    default_model: str


class ProfileRow(TypedDict):
    """A row of ``heron_profiles``."""

    name: str
    description: str | None
    settings: ProfileSettings
    created_at: float
    updated_at: float


class ProfileStore:
    """Reads and writes ``heron_profiles``."""

    def __init__(self, database: Database) -> None:
        self.db = database
        """The daemon's database."""

    async def ensure(self, name: str, values: Mapping[str, Any]) -> tuple[ProfileRow, bool]:
        """Insert the profile, or set the given ``values`` on it (``None`` clears a
        setting); its row, and whether it was inserted."""
        return await self.db.run(self._ensure, name, values)

    def _ensure(self, name: str, values: Mapping[str, Any]) -> tuple[ProfileRow, bool]:
        for _ in range(2):  # a concurrent ensure may insert between our read and insert
            try:
                with self.db.engine.begin() as conn:
                    return _upsert(conn, name, values)
            except sa.exc.IntegrityError:
                continue
        raise ApiError(409, "profile_conflict", f"profile {name!r} changed under this request")

    async def profile(self, name: str) -> ProfileRow | None:
        """The profile's row as stored, if any."""
        found = await self.db.first(sa.select(profiles).where(profiles.c.name == name))
        return cast(ProfileRow | None, found)

    async def profiles(self) -> list[ProfileRow]:
        """Every profile row, by name."""
        return cast(
            list[ProfileRow], await self.db.all(sa.select(profiles).order_by(profiles.c.name))
        )


def _upsert(conn: sa.Connection, name: str, values: Mapping[str, Any]) -> tuple[ProfileRow, bool]:
    now = time.time()
    found = conn.execute(sa.select(profiles).where(profiles.c.name == name)).first()
    if found is None:
        settings = {k: values[k] for k in SETTINGS if values.get(k) is not None}
        row: dict[str, Any] = {
            "name": name,
            "description": values.get("description"),
            "settings": settings,
            "created_at": now,
            "updated_at": now,
        }
        conn.execute(profiles.insert().values(**row))
        return cast(ProfileRow, row), True
    row = dict(found._mapping)
    settings = dict(row["settings"] or {})
    for key in SETTINGS:
        if key in values:
            if values[key] is None:
                settings.pop(key, None)
            else:
                settings[key] = values[key]
    description = values.get("description", row["description"])
    if settings != row["settings"] or description != row["description"]:
        row.update(settings=settings, description=description, updated_at=now)
        conn.execute(
            profiles.update()
            .where(profiles.c.name == name)
            .values(settings=settings, description=description, updated_at=now)
        )
    return cast(ProfileRow, row), False
