"""Kinds: ``/v1/kinds``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Path

from ... import api
from ..server import errors

if TYPE_CHECKING:
    from ._service import Kinds

__all__ = ["add_kind_routes"]

KindName = Annotated[str, Path(description="The kind's name.")]
"""A ``{name}`` path parameter naming a kind."""


def add_kind_routes(app: FastAPI, kinds: Kinds) -> None:
    """Serve the kind listing and lookup."""

    @app.get("/v1/kinds", tags=["kinds"], responses=errors())
    async def list_kinds() -> api.KindList:
        """Every kind (built-in and ``$HERON_HOME/kinds/*.toml``), and broken kind files."""
        return await asyncio.to_thread(kinds.listing)  # reads the kinds directory

    @app.get("/v1/kinds/{name}", tags=["kinds"], responses=errors(404, 422))
    async def get_kind(name: KindName) -> api.Kind:
        """One kind; ``422 invalid_kind`` if its file is broken."""
        return (await kinds.find(name)).to_api()
