"""Resources written once for both clients.

A resource method is written as a *flow builder*: a function returning a
:data:`~._flow.Flow`. The :class:`endpoint` descriptor turns it into a plain
method on ``Heron`` (``Resource[Sync]``) and a coroutine method on
``AsyncHeron`` (``Resource[Async]``), with the same signature and docstring —
so the two clients cannot drift apart, and the type checker sees both::

    class Nodes(Resource[M]):
        @endpoint
        def retrieve(self, node_id: str, *, options: Options = None) -> Flow[api.Node]:
            \"""One node.\"""
            return self._call("GET", f"/v1/nodes/{check_id(node_id)}", api.Node, options=options)

    client.nodes.retrieve("n1")          # Heron: api.Node
    await aclient.nodes.retrieve("n1")   # AsyncHeron: api.Node
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from ..api import is_valid_id
from ._flow import Flow, Send, parse_as, request_flow
from ._options import RequestOptions

if TYPE_CHECKING:
    from ._drivers import Driver

__all__ = ["Async", "M", "Mode", "Resource", "Sync", "check_id", "endpoint"]

P = ParamSpec("P")
T = TypeVar("T")


class Mode:
    """Marks a resource as belonging to the blocking or the ``asyncio`` client."""


class Sync(Mode):
    """The blocking client (``Heron``): methods return their result."""


class Async(Mode):
    """The ``asyncio`` client (``AsyncHeron``): methods return awaitables."""


M = TypeVar("M", bound=Mode)


class Resource(Generic[M]):
    """A group of related methods (``client.nodes``, ``client.nodes.jobs`` ...)."""

    def __init__(self, driver: Driver[M]) -> None:
        self._driver = driver

    def _call(
        self,
        method: str,
        path: str,
        result: Any,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        options: RequestOptions | None = None,
        min_timeout: float | None = None,
    ) -> Flow[Any]:
        """One request whose JSON answer is validated as ``result`` (``None``: ignored)."""
        send = Send(
            method=method.upper(),
            path=path,
            query=dict(query or {}),
            body=body,
            options=options or RequestOptions(),
            min_timeout=min_timeout,
        )
        response = yield from request_flow(send, max_retries=self._driver.settings.max_retries)
        return parse_as(result, response)


class endpoint(Generic[P, T]):
    """Turns a flow builder into a method of both clients (see the module docstring)."""

    def __init__(self, build: Callable[Concatenate[Any, P], Flow[T]]) -> None:
        if inspect.isgeneratorfunction(build):
            # Its body would only run when driven: arguments must be checked at the call.
            raise TypeError(
                f"{build.__qualname__}: an endpoint builder returns a flow, it is not one "
                "(check the arguments, then return self._call(...) or a helper generator)"
            )
        self._build = build
        functools.update_wrapper(self, build)  # type: ignore[arg-type]

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> endpoint[P, T]: ...
    @overload
    def __get__(self, obj: Resource[Sync], owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Resource[Async], owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Resource[Any] | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        build = self._build
        run = obj._driver.run  # type: ignore[attr-defined]

        @functools.wraps(build)
        def method(*args: Any, **kwargs: Any) -> Any:
            # Built here, so a bad argument raises at the call, before anything is sent.
            return run(build(obj, *args, **kwargs))

        return method


def check_id(value: object, what: str = "node id") -> str:
    """``value`` if it is a well-formed identifier; ``TypeError`` (nothing sent) otherwise."""
    if not is_valid_id(value):
        raise TypeError(
            f"invalid {what} {value!r}: 1-128 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return value  # type: ignore[return-value]
