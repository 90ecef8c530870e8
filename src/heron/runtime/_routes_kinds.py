"""Kinds and profiles: ``/v1/kinds`` and ``/v1/profiles``."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Path

from .. import api
from ._engine import Engine
from ._routing import errors

__all__ = ["add_kind_routes"]

KindName = Annotated[str, Path(description="The kind's name.")]
"""A ``{name}`` path parameter naming a kind."""

ProfileName = Annotated[
    str,
    Path(
        description="The profile's name (letters, digits, `_`, `.`, `-`; up to 128).",
        # Documented, but checked by the profiles: a bad name answers 400 invalid_profile_name.
        json_schema_extra={"pattern": api.ID_PATTERN},
    ),
]
"""A ``{name}`` path parameter naming a profile."""


def add_kind_routes(app: FastAPI, engine: Engine) -> None:
    """Serve the kind listing and lookup, and profile ensure and lookup."""

    @app.get("/v1/kinds", tags=["kinds"], responses=errors())
    async def list_kinds() -> api.KindList:
        """Every kind (built-in and ``$HERON_HOME/kinds/*.toml``), and broken kind files."""
        return engine.kinds.listing()

    @app.get("/v1/kinds/{name}", tags=["kinds"], responses=errors(404, 422))
    async def get_kind(name: KindName) -> api.Kind:
        """One kind; ``422 invalid_kind`` if its file is broken."""
        return engine.kinds.get(name).to_api()

    @app.post("/v1/profiles/ensure", tags=["profiles"], responses=errors(400, 413, 415, 422))
    async def ensure_profile(body: api.ProfileEnsureRequest) -> api.Profile:
        """Create the profile, or set the given fields on the existing one (idempotent)."""
        return await engine.profiles.ensure(body)

    @app.get("/v1/profiles/{name}", tags=["profiles"], responses=errors(400, 404))
    async def get_profile(name: ProfileName) -> api.Profile:
        """One profile (``default`` always exists)."""
        return await engine.profiles.get(name)
