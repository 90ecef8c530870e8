"""Listeners of a node stream: ``stream.on(type, listener)`` / ``off``, typed per event.

Each event type has an overload, so a type checker gives a listener of
``"node.output_text.delta"`` an :class:`~heron.api.OutputTextDelta`; any other
string (``"*"`` for every event, or a type only known at run time) takes a
listener of :data:`~heron.api.NodeEvent`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Self, TypeAlias, TypeVar, overload

from .. import api
from ._stream_flow import EVENT_TYPES

__all__ = ["Listener", "Listeners"]

E = TypeVar("E")

Handler: TypeAlias = Callable[[E], object]
"""A listener of the events of type ``E``."""

Listener: TypeAlias = Handler[api.NodeEvent]
"""Called with each event of the type it listens to (an async stream awaits what it returns
when that is awaitable)."""


class Listeners:
    """The listeners registered on a stream, by event type (``"*"``: every event)."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[Callable[[Any], object]]] = {}

    @overload
    def on(
        self,
        type: Literal["node.output_text.delta"],
        listener: Handler[api.OutputTextDelta],
    ) -> Self: ...
    @overload
    def on(
        self,
        type: Literal["node.output_text.done"],
        listener: Handler[api.OutputTextDone],
    ) -> Self: ...
    @overload
    def on(
        self,
        type: Literal["node.tool_call.started"],
        listener: Handler[api.ToolCallStarted],
    ) -> Self: ...
    @overload
    def on(
        self,
        type: Literal["node.tool_call.completed"],
        listener: Handler[api.ToolCallCompleted],
    ) -> Self: ...
    @overload
    def on(
        self, type: Literal["node.turn.started"], listener: Handler[api.TurnStarted]
    ) -> Self: ...
    @overload
    def on(
        self, type: Literal["node.turn.completed"], listener: Handler[api.TurnCompleted]
    ) -> Self: ...
    @overload
    def on(
        self, type: Literal["node.report.pushed"], listener: Handler[api.ReportPushed]
    ) -> Self: ...
    @overload
    def on(
        self,
        type: Literal["node.human_request.filed"],
        listener: Handler[api.HumanRequestFiled],
    ) -> Self: ...
    @overload
    def on(
        self,
        type: Literal["node.human_request.resolved"],
        listener: Handler[api.HumanRequestResolved],
    ) -> Self: ...
    @overload
    def on(
        self,
        type: Literal["node.status.changed"],
        listener: Handler[api.NodeStatusChanged],
    ) -> Self: ...
    @overload
    def on(self, type: Literal["node.settled"], listener: Handler[api.NodeSettled]) -> Self: ...
    @overload
    def on(self, type: Literal["error"], listener: Handler[api.StreamError]) -> Self: ...
    @overload
    def on(self, type: str, listener: Listener) -> Self: ...
    def on(self, type: str, listener: Callable[[Any], object]) -> Self:
        """Call ``listener(event)`` for every event of ``type`` (``"*"``: every event)
        as the stream reads it, before iteration yields it; returns the stream."""
        self._check_listener(type, listener)
        self._listeners.setdefault(type, []).append(listener)
        return self

    @overload
    def off(
        self,
        type: Literal["node.output_text.delta"],
        listener: Handler[api.OutputTextDelta],
    ) -> Self: ...
    @overload
    def off(
        self,
        type: Literal["node.output_text.done"],
        listener: Handler[api.OutputTextDone],
    ) -> Self: ...
    @overload
    def off(
        self,
        type: Literal["node.tool_call.started"],
        listener: Handler[api.ToolCallStarted],
    ) -> Self: ...
    @overload
    def off(
        self,
        type: Literal["node.tool_call.completed"],
        listener: Handler[api.ToolCallCompleted],
    ) -> Self: ...
    @overload
    def off(
        self, type: Literal["node.turn.started"], listener: Handler[api.TurnStarted]
    ) -> Self: ...
    @overload
    def off(
        self, type: Literal["node.turn.completed"], listener: Handler[api.TurnCompleted]
    ) -> Self: ...
    @overload
    def off(
        self, type: Literal["node.report.pushed"], listener: Handler[api.ReportPushed]
    ) -> Self: ...
    @overload
    def off(
        self,
        type: Literal["node.human_request.filed"],
        listener: Handler[api.HumanRequestFiled],
    ) -> Self: ...
    @overload
    def off(
        self,
        type: Literal["node.human_request.resolved"],
        listener: Handler[api.HumanRequestResolved],
    ) -> Self: ...
    @overload
    def off(
        self,
        type: Literal["node.status.changed"],
        listener: Handler[api.NodeStatusChanged],
    ) -> Self: ...
    @overload
    def off(self, type: Literal["node.settled"], listener: Handler[api.NodeSettled]) -> Self: ...
    @overload
    def off(self, type: Literal["error"], listener: Handler[api.StreamError]) -> Self: ...
    @overload
    def off(self, type: str, listener: Listener) -> Self: ...
    def off(self, type: str, listener: Callable[[Any], object]) -> Self:
        """Stop calling ``listener`` for ``type`` (a no-op if it was not registered);
        returns the stream."""
        self._check_listener(type, listener)
        registered = self._listeners.get(type, [])
        if listener in registered:
            registered.remove(listener)
        return self

    def _check_listener(self, type: str, listener: object) -> None:
        if type != "*" and type not in EVENT_TYPES:
            raise ValueError(
                f"unknown event type {type!r}: one of {', '.join(sorted(EVENT_TYPES))}, or '*'"
            )
        if not callable(listener):
            raise TypeError(f"a listener must be callable, got {listener!r}")

    def _listeners_of(self, event: api.NodeEvent) -> list[Callable[[Any], object]]:
        return [*self._listeners.get(event.type, ()), *self._listeners.get("*", ())]
