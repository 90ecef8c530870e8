"""Profiles' table: the named settings nodes run under."""

from __future__ import annotations

import sqlalchemy as sa

from ..db import Schema, Text, metadata

__all__ = ["PROFILES_SCHEMA", "profiles"]

profiles = sa.Table(
    "heron_profiles",
    metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("description", Text),
    # Defaults for the profile's nodes (kind, model ...), as the profile routes define them.
    sa.Column("settings", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)


def _v1(conn: sa.Connection) -> None:
    """The profiles table."""
    metadata.create_all(conn, tables=[profiles])


PROFILES_SCHEMA = Schema("profiles", steps=(_v1,), legacy=(4,))
"""Profiles' tables."""
