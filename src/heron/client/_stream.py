"""Node event streams: ``client.nodes.stream(...)`` and ``client.nodes.events(id)``.

``stream(...)`` creates the node when it is called, as the seed's SDK does: on
``Heron`` the call returns once the node exists (a create error is raised by the
call); on ``AsyncHeron`` it returns at once with the create already sent on the
running loop (its error is raised where the stream is first awaited). Either
way a stream that is never read still made its node, and ``stream.node`` is
that node. Events are opened when the stream is first read; nothing is lost by
the wait: the stream starts at the node's first event (the daemon keeps them).
``events(id)`` sends nothing until used. The stream objects are in
:mod:`._node_stream`; the logic (resume, de-duplication, errors) is one flow
(:mod:`._stream_flow`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, Unpack, overload

from .. import api
from ._drivers import AsyncDriver, SyncDriver
from ._node_stream import AsyncNodeStream, NodeStream, Plan
from ._options import RequestOptions
from ._params import NodeCreateParams, create_body
from ._resource import Async, M, Resource, Sync, check_id
from ._stream_flow import Reconnect

__all__ = ["NodeStreams"]

P = ParamSpec("P")

_MAX_CURSOR = 10**18 - 1
"""The largest cursor the daemon accepts (18 digits)."""


class _streaming(Generic[P]):
    """Turns a stream builder into a method returning :class:`NodeStream` on ``Heron``
    and :class:`AsyncNodeStream` on ``AsyncHeron`` (like ``endpoint``, without I/O)."""

    def __init__(self, build: Callable[Concatenate[Any, P], Plan]) -> None:
        self._build = build
        functools.update_wrapper(self, build)  # type: ignore[arg-type]

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _streaming[P]: ...
    @overload
    def __get__(self, obj: Resource[Sync], owner: type[Any]) -> Callable[P, NodeStream]: ...
    @overload
    def __get__(self, obj: Resource[Async], owner: type[Any]) -> Callable[P, AsyncNodeStream]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        build = self._build
        driver = obj._driver

        @functools.wraps(build)
        def method(*args: Any, **kwargs: Any) -> Any:
            plan = build(obj, *args, **kwargs)  # bad arguments raise here, nothing sent
            if isinstance(driver, AsyncDriver):
                return AsyncNodeStream(driver, plan)
            assert isinstance(driver, SyncDriver)
            return NodeStream(driver, plan)

        return method


class NodeStreams(Resource[M]):
    """The streaming half of ``client.nodes`` (``stream`` and ``events``)."""

    @_streaming
    def stream(
        self,
        params: NodeCreateParams | api.NodeCreateRequest | None = None,
        /,
        *,
        reconnect: Reconnect | None = None,
        options: RequestOptions | None = None,
        **fields: Unpack[NodeCreateParams],
    ) -> Plan:
        """Create a node (``POST /v1/nodes``, never retried) and stream its events from
        the first one.

        The node is created by this call: ``Heron`` returns once it exists (a create
        error is raised here), ``AsyncHeron`` returns at once with the create sent on
        the running loop (``await stream.node``; an error is raised where the stream is
        first awaited). A stream that is never read still made its node. Its events
        are opened when first read, and replayed from the first one however late. ``options``
        apply to the create and to opening the stream — its ``timeout`` too, but
        never to reading it (a stream has no wall-clock limit). ``reconnect`` bounds
        resuming after a dropped connection (default: :class:`Reconnect`).
        """
        body = create_body(params, fields)
        return Plan(
            start=lambda opts: self._call("POST", "/v1/nodes", api.Node, body=body, options=opts),
            after=0,
            reconnect=_reconnect(reconnect),
            options=options or RequestOptions(),
            eager=True,
        )

    @_streaming
    def events(
        self,
        node_id: str,
        *,
        after: int | None = None,
        reconnect: Reconnect | None = None,
        options: RequestOptions | None = None,
    ) -> Plan:
        """Watch an existing node: retrieve it, then stream its events.

        ``after=None`` joins as the daemon sees fit (a running node: its reports and
        messages so far, then live; a settled one: what is retained, ending with
        ``node.settled``); ``after=N`` resumes after sequence number ``N``. An invalid
        id raises ``TypeError`` here, at the call, and sends nothing.
        """
        check_id(node_id)
        if after is not None:
            if isinstance(after, bool) or not isinstance(after, int):
                raise TypeError(f"after must be an int sequence number, got {after!r}")
            if not 0 <= after <= _MAX_CURSOR:
                raise ValueError(f"after must be between 0 and {_MAX_CURSOR}, got {after}")
        path = f"/v1/nodes/{node_id}"
        return Plan(
            start=lambda opts: self._call("GET", path, api.Node, options=opts),
            after=after,
            reconnect=_reconnect(reconnect),
            options=options or RequestOptions(),
        )


def _reconnect(value: Reconnect | None) -> Reconnect:
    if value is None:
        return Reconnect()
    if not isinstance(value, Reconnect):
        raise TypeError(f"reconnect must be a Reconnect, got {type(value).__name__}")
    return value
