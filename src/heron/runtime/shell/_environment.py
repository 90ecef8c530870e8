"""What of the daemon's environment the commands it runs inherit: all but its secrets
(:data:`WITHHELD_VARIABLES`)."""

from __future__ import annotations

import os

from ..models import KEY_VARIABLES

__all__ = ["WITHHELD_VARIABLES", "command_environment"]

WITHHELD_VARIABLES = frozenset({"HERON_TOKEN", "HERON_DATABASE_URL", *KEY_VARIABLES.values()})
"""Variables of the daemon's environment a command does not inherit (its secrets)."""


def command_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a command runs in: the daemon's without :data:`WITHHELD_VARIABLES`,
    then ``extra`` on top (a variable given there is passed, withheld or not)."""
    inherited = {
        name: value for name, value in os.environ.items() if name not in WITHHELD_VARIABLES
    }
    return {**inherited, **(extra or {})}
