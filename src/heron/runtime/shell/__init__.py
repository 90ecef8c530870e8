"""Commands: ``/v1/bash``, the sandbox node commands run in, their environment.

Other packages use these names (loaded on first use, so importing a module of this
package never imports the others first)."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._environment import command_environment
    from ._ledger import JobLedger, group_lives, start_ticks
    from ._sandbox import NodeSandbox
    from ._service import Commands

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._environment": ("command_environment",),
            "._ledger": ("JobLedger", "group_lives", "start_ticks"),
            "._sandbox": ("NodeSandbox",),
            "._service": ("Commands",),
        },
    )

__all__ = [
    "Commands",
    "JobLedger",
    "NodeSandbox",
    "command_environment",
    "group_lives",
    "start_ticks",
]
