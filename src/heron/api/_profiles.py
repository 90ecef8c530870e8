"""Profiles: the store, defaults and (later) memory a node runs under."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import StringConstraints

from ._common import KindName, ModelSpec, ProfileName, RequestModel, WireModel

__all__ = ["Profile", "ProfileEnsureRequest"]

_Text = Annotated[str, StringConstraints(max_length=64 * 1024)]


class ProfileEnsureRequest(RequestModel):
    """``POST /v1/profiles/ensure``: create the profile, or bring an existing one in line.

    Fields given replace the stored ones; fields left out keep their stored value
    (on a new profile: none). Sending the same request twice changes nothing.
    """

    name: ProfileName
    """The profile's name (an id: letters, digits, ``_``, ``.``, ``-``; up to 128)."""
    description: _Text | None = None
    """What the profile is for."""
    default_kind: KindName | None = None
    """The kind its nodes take when a create names none (must be a known kind)."""
    default_model: ModelSpec | None = None
    """The model its nodes use when neither the create nor their kind names one."""


class Profile(WireModel):
    """A profile as the daemon keeps it."""

    name: str
    """Identifier, as ``profile`` on create names it."""
    description: str | None
    """What the profile is for."""
    default_kind: str | None
    """The kind its nodes take by default (``None``: ``general``)."""
    default_model: str | None
    """The model its nodes use by default (``None``: their kind's, else the daemon's)."""
    store_path: str
    """The folder holding its nodes' tool storage (todo lists ...)."""
    created: bool
    """Whether this request created it (``ensure``); ``False`` on reads."""
    created_at: datetime
    """When it was first ensured."""
    updated_at: datetime
    """When it last changed."""
