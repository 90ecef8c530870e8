"""``client.profiles``: the store, defaults and purview an application's nodes run under."""

from __future__ import annotations

import builtins
from typing import Unpack

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._params import ProfileEnsureParams
from ._resource import M, Resource, check_id, endpoint

__all__ = ["Profiles"]


class Profiles(Resource[M]):
    """``client.profiles``: an application ensures its own profile, then names it on create."""

    @endpoint
    def ensure(
        self,
        name: str,
        *,
        options: RequestOptions | None = None,
        **fields: Unpack[ProfileEnsureParams],
    ) -> Flow[api.Profile]:
        """``POST /v1/profiles/ensure``: create the profile, or set the fields given on the
        existing one (idempotent; ``None`` clears a field, one left out keeps its value).

        Example::

            client.profiles.ensure("my-app", description="Nightly reviews",
                                   default_model="anthropic:claude-sonnet-5")
            client.nodes.create(prompt="...", profile="my-app")
        """
        body = {"name": check_id(name, "profile name"), **fields}
        return self._call("POST", "/v1/profiles/ensure", api.Profile, body=body, options=options)

    @endpoint
    def list(self, *, options: RequestOptions | None = None) -> Flow[builtins.list[api.Profile]]:
        """``GET /v1/profiles``: every profile, by name (``default`` among them)."""
        return self._call("GET", "/v1/profiles", builtins.list[api.Profile], options=options)

    @endpoint
    def retrieve(self, name: str, *, options: RequestOptions | None = None) -> Flow[api.Profile]:
        """``GET /v1/profiles/{name}``: one profile (``default`` always exists)."""
        path = f"/v1/profiles/{check_id(name, 'profile name')}"
        return self._call("GET", path, api.Profile, options=options)
