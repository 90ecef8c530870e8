"""Kinds: the personas a node can take (instruction, tools, skills, model)."""

from __future__ import annotations

from typing import Literal

from ._common import WireModel

__all__ = ["Kind", "KindList", "KindProblem"]


class Kind(WireModel):
    """A persona a node takes: ``kind`` on create picks it (``GET /v1/kinds/{name}``)."""

    name: str
    """The kind's name, as ``kind`` on create names it."""
    description: str
    """What the kind is for."""
    instruction: str
    """What the node is told about its role, joined into its system prompt."""
    model: str | None
    """The model (a provider spec) its nodes use unless the create names one."""
    tools: list[str] | None
    """Tool names (``*`` wildcards allowed) the kind keeps; ``None``: every tool scopes allow."""
    skills: list[str]
    """``heron.skills`` factories whose instructions and tools the node gets."""
    source: Literal["builtin", "file"]
    """Built into the daemon, or read from ``$HERON_HOME/kinds/<name>.toml``."""
    path: str | None
    """The TOML file it was read from (``source == "file"``)."""
    overrides_builtin: bool
    """Whether a TOML file replaces the built-in kind of the same name."""


class KindProblem(WireModel):
    """A kind file the daemon could not use (the other kinds still work)."""

    name: str
    """The kind the file would define (its name without ``.toml``)."""
    path: str
    """The file."""
    message: str
    """What is wrong with it."""


class KindList(WireModel):
    """``GET /v1/kinds``: every usable kind, and the kind files that are broken."""

    kinds: list[Kind]
    """Usable kinds, by name."""
    problems: list[KindProblem]
    """Kind files that could not be read (a create naming one answers ``422 invalid_kind``)."""
