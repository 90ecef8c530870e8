"""Profiles: the store and defaults (kind, model) a node runs under; ``default`` exists
without being ensured."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ... import api
from ...mcp import FileStorage
from .. import kinds
from ..kinds import DEFAULT_KIND, Kind
from ..nodes import Feature, Kernel, NodeRow, RunSetup, when
from ..server import ApiError
from ._routes import add_profile_routes
from ._store import ProfileRow, ProfileStore
from ._tables import PROFILES_SCHEMA

if TYPE_CHECKING:
    from fastapi import FastAPI


__all__ = ["DEFAULT_PROFILE", "Profiles", "given_model"]

DEFAULT_PROFILE = "default"
"""The profile of nodes whose create names none (it needs no ``ensure``)."""


def given_model(row: NodeRow) -> str | None:
    """The model the node's create (or a PATCH) named, not one its kind or profile
    implied: what a fork or a child passes on. (A row from before the distinction
    was kept has only its resolved model.)"""
    extra = row["extra"] or {}
    given: str | None = extra["model_given"] if "model_given" in extra else row["model"]
    return given


def check_profile_name(name: str) -> str:
    """``name`` if it is a valid profile name, else ``400 invalid_profile_name``."""
    if not api.is_valid_id(name):
        raise ApiError(
            400,
            "invalid_profile_name",
            f"not a valid profile name: {name!r} (letters, digits, _ . -; up to 128)",
        )
    return name


class Profiles(Feature):
    """Ensures, reads and applies profiles."""

    schema = PROFILES_SCHEMA

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self.store = ProfileStore(engine.db)
        """The profiles' rows."""
        self.kinds = engine.features.get(kinds.Kinds)
        """The kinds (profiles name a default one; creates pick one)."""

    def setup(self, run: RunSetup) -> None:
        """A run's tool storage (a planner's todo list ...) is its profile's."""
        run.storage = self.storage(run.plan.get("profile"))

    def routes(self, app: FastAPI) -> None:
        """Serve the profile routes."""
        add_profile_routes(app, self)

    async def complete(self, row: NodeRow) -> None:
        """A new node's profile, kind and the model they imply (see :meth:`apply`)."""
        await self.apply(row)

    def store_path(self, name: str) -> Path:
        """The folder of the profile's tool storage."""
        return self.engine.config.home / "profiles" / name / "store"

    def storage(self, name: str | None) -> FileStorage:
        """The tool storage of a node running under profile ``name``."""
        return FileStorage(self.store_path(name or DEFAULT_PROFILE))

    # -- routes ---------------------------------------------------------------

    async def ensure(self, request: api.ProfileEnsureRequest) -> api.Profile:
        """Create the profile, or set the fields the request gives on the existing one."""
        name = check_profile_name(request.name)
        given = request.model_fields_set - {"name"}
        if "default_kind" in given and request.default_kind is not None:
            await self.kinds.find(request.default_kind, status=422)
        if "default_model" in given and request.default_model is not None:
            try:
                await self.engine.providers.prepare(request.default_model, reread=True)
            except Exception as exc:  # an unknown provider, a missing key or script
                raise ApiError(422, "invalid_model", str(exc)) from None
        values = {field: getattr(request, field) for field in given}
        row, created = await self.store.ensure(name, values)
        return self._profile(row, created=created)

    async def get(self, name: str) -> api.Profile:
        """The profile; ``404 profile_not_found`` if it was never ensured."""
        row = await self._existing(name, 404, "profile_not_found")
        return self._profile(row, created=False)

    async def listing(self) -> list[api.Profile]:
        """Every profile, by name (``default`` among them)."""
        await self._row(DEFAULT_PROFILE)  # made on first use: listed as it can be used
        rows = await self.store.profiles()
        return [self._profile(row, created=False) for row in rows]

    async def require(self, name: str | None) -> str:
        """The name of an existing profile (``None``: ``default``): ``400
        invalid_profile_name`` for a malformed one, ``422 unknown_profile`` for one never
        ensured (as a node create answers)."""
        row = await self._existing(name or DEFAULT_PROFILE, 422, "unknown_profile")
        return str(row["name"])

    async def _existing(self, name: str, status: int, code: str) -> ProfileRow:
        """The profile's row; ``status``/``code`` (say how to ensure it) if there is none."""
        row = await self._row(check_profile_name(name))
        if row is None:
            message = (
                f"no profile {name!r}: create it first (heron profiles ensure {name}, "
                "or POST /v1/profiles/ensure)"
            )
            raise ApiError(status, code, message)
        return row

    async def _row(self, name: str) -> ProfileRow | None:
        """The profile's row, ``None`` if never ensured (``default`` is made on first use)."""
        if name == DEFAULT_PROFILE:
            row, _ = await self.store.ensure(name, {})
            return row
        return await self.store.profile(name)

    def _profile(self, row: ProfileRow, *, created: bool) -> api.Profile:
        """A profile row on the wire."""
        settings = row["settings"] or {}
        return api.Profile(
            name=row["name"],
            description=row["description"],
            default_kind=settings.get("default_kind"),
            default_model=settings.get("default_model"),
            store_path=str(self.store_path(row["name"])),
            created=created,
            created_at=when(row["created_at"]),
            updated_at=when(row["updated_at"]),
        )

    # -- creates ----------------------------------------------------------------

    async def apply(self, row: NodeRow) -> None:
        """Settle a new node's profile, kind and model in its ``row``, or refuse the create.

        ``row`` holds what the create chose (or a fork inherited). The kind is that,
        else the profile's default, else ``general``. The model is the one given
        (kept in ``extra["model_given"]``: a fork or a child passes on only that one
        and runs this precedence again for its own kind), else the kind's (a kind is
        a deliberate persona choice per node), else the profile's default, else
        ``None`` (the daemon's).
        """
        name = row["profile"] or DEFAULT_PROFILE
        found = await self._existing(name, 422, "unknown_profile")
        settings = found["settings"] or {}
        if row["kind"] is not None:
            kind = await self.kinds.find(row["kind"], status=422)
        else:
            kind = await self._default_kind(name, settings.get("default_kind"))
        row["profile"] = name
        row["kind"] = kind.name
        row["extra"] = {**row["extra"], "model_given": row["model"]}
        row["model"] = row["model"] or kind.model or settings.get("default_model")

    async def _default_kind(self, profile: str, name: str | None) -> Kind:
        """The kind a node of ``profile`` takes when its create names none; a default
        kind that is gone (its file deleted or broken) is a ``422`` saying whose it is."""
        if name is None:
            return await self.kinds.find(DEFAULT_KIND, status=422)
        try:
            return await self.kinds.find(name, status=422)
        except ApiError as exc:
            raise ApiError(
                422,
                exc.code,
                f"the default kind of profile {profile!r} is not usable: {exc.message} "
                f"(name a kind on the create, or change the profile's default_kind)",
                exc.details,
            ) from None
