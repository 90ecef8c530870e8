"""Fixtures shared by the agent tests.

Shared helpers are fixtures rather than an importable module: pytest runs with
``--import-mode=importlib``, under which ``from tests.agents.helpers import ...``
works on pytest 8.4 but not on 8.3.0, and the project supports ``pytest>=8.3``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from heron import Message


def _assert_consistent(messages: Sequence[Message]) -> None:
    pending: list[str] = []
    for m in messages:
        if m.role == "tool":
            assert pending and m.tool_call_id == pending.pop(0), "result without its call"
        else:
            assert not pending, f"calls left unanswered: {pending}"
            pending = [c.id for c in m.tool_calls]
    assert not pending, f"calls left unanswered: {pending}"


@pytest.fixture
def assert_consistent() -> Callable[[Sequence[Message]], None]:
    """Check that every tool call is answered, in order, right after the message that made it.

    That is what every provider requires of a history it is sent.
    """
    return _assert_consistent
