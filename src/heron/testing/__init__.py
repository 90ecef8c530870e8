"""Deterministic stand-ins for tests and examples: no network, no model.

::

    from heron import SimpleAgent
    from heron.testing import ScriptedProvider, call

    agent = SimpleAgent(
        provider=ScriptedProvider([call("get-current-time"), "It is noon."]),
        tools=[get_current_time],
    )
"""

from .._core.compaction import is_compaction_request
from ..providers.scripted import Reply, ScriptedProvider, ScriptedRequest, Step, call

__all__ = [
    "Reply",
    "ScriptedProvider",
    "ScriptedRequest",
    "Step",
    "call",
    "is_compaction_request",
]
