"""Profiles: ``/v1/profiles``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Path

from ... import api
from ..server import errors

if TYPE_CHECKING:
    from ._service import Profiles

__all__ = ["add_profile_routes"]

ProfileName = Annotated[
    str,
    Path(
        description="The profile's name (letters, digits, `_`, `.`, `-`; up to 128).",
        # Documented, but checked by the profiles: a bad name answers 400 invalid_profile_name.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""A ``{name}`` path parameter naming a profile."""


def add_profile_routes(app: FastAPI, profiles: Profiles) -> None:
    """Serve profile ensure, listing and lookup."""

    @app.post("/v1/profiles/ensure", tags=["profiles"], responses=errors(400, 413, 415, 422))
    async def ensure_profile(body: api.ProfileEnsureRequest) -> api.Profile:
        """Create the profile, or set the given fields on the existing one (idempotent)."""
        return await profiles.ensure(body)

    @app.get("/v1/profiles", tags=["profiles"], responses=errors())
    async def list_profiles() -> list[api.Profile]:
        """Every profile, by name (a plain list; ``default`` always among them)."""
        return await profiles.listing()

    @app.get("/v1/profiles/{name}", tags=["profiles"], responses=errors(400, 404))
    async def get_profile(name: ProfileName) -> api.Profile:
        """One profile (``default`` always exists)."""
        return await profiles.get(name)
