"""``client.nodes``: create agent runs, wait for their outcomes, steer them."""

from __future__ import annotations

import builtins
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from typing_extensions import TypeVar

from .. import api
from ._errors import APIConnectionError, APIError
from ._flow import Flow, Send, Sleep, parse_as, request_flow, retry_after, retry_delay
from ._node_parts import Jobs, Reports, Result, Worktree
from ._options import RequestOptions
from ._params import (
    ForkParams,
    NodeConfigParams,
    NodeCreateParams,
    ParseParams,
    check_fields,
    create_body,
    model_body,
)
from ._parsed import ParsedOutcome, parsed_outcome
from ._resource import M, check_id, endpoint
from ._stream import NodeStreams

if TYPE_CHECKING:
    from ._drivers import Driver

__all__ = ["MAX_WAIT", "NodeList", "Nodes"]

T = TypeVar("T", default=Any)
"""``parse``'s result type: the model class given, ``Any`` for a JSON schema (so a
schema mapping or string needs no annotation under ``mypy --strict``)."""

MAX_WAIT = 25
"""The longest one ``outcome`` long poll may be held open, in seconds."""

_POLL_MARGIN = 10.0
"""Seconds a long poll's request timeout allows beyond its ``wait`` (a busy daemon)."""

_OUTAGE_STATUSES = frozenset({429, 502, 503, 504})
"""Answers a wait rides out like a refused connection: the daemon busy or briefly away."""

_MAX_PAUSE = 8.0
"""The longest pause between a wait's tries while the daemon is away (no Retry-After)."""

_MAX_WAIT_SECONDS = 7 * 86400
"""The longest ``timeout_seconds`` of ``POST …/wait`` (a week)."""


class NodeList(list[api.Node]):
    """What ``client.nodes.list`` returns: a plain list of nodes, oldest first, that also
    knows the cursor of its next page."""

    next_cursor: str | None = None
    """With ``limit``: pass it as ``after`` for the next page (``None``: no more)."""


def _path(node_id: object, suffix: str = "") -> str:
    return f"/v1/nodes/{check_id(node_id)}{suffix}"


def _check_wait(wait: object) -> int:
    if isinstance(wait, bool) or not isinstance(wait, int) or not 0 <= wait <= MAX_WAIT:
        raise ValueError(
            f"wait must be a whole number of seconds from 0 to {MAX_WAIT}, got {wait!r}"
        )
    return wait


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    # math.inf reads as "no bound" (as for asyncio): the same as None.
    return None if math.isinf(timeout) else float(timeout)


def _optional(**fields: Any) -> dict[str, Any] | None:
    """A body of the fields that are not ``None``, or no body at all."""
    body = {k: v for k, v in fields.items() if v is not None}
    return body or None


class Nodes(NodeStreams[M]):
    """``client.nodes``: a node is one durable agent run on the daemon.

    ``create`` returns as soon as the node runs; its outcome — a result or a
    failure, both returned as values — arrives through ``outcome``,
    ``wait_for_outcome`` or a stream.
    """

    reports: Reports[M]
    """``client.nodes.reports``: the progress reports a node pushed."""
    jobs: Jobs[M]
    """``client.nodes.jobs``: a node's background commands."""
    worktree: Worktree[M]
    """``client.nodes.worktree``: remove a node's managed git worktree."""
    result: Result[M]
    """``client.nodes.result``: submit a node's structured result."""

    def __init__(self, driver: Driver[M]) -> None:
        super().__init__(driver)
        self.reports = Reports(driver)
        self.jobs = Jobs(driver)
        self.worktree = Worktree(driver)
        self.result = Result(driver)

    # -- create, read, wait ----------------------------------------------------

    @endpoint
    def create(
        self,
        params: NodeCreateParams | api.NodeCreateRequest | None = None,
        /,
        *,
        options: RequestOptions | None = None,
        **fields: Unpack[NodeCreateParams],
    ) -> Flow[api.Node]:
        """``POST /v1/nodes``: start an agent run; returns as soon as it runs.

        Pass the fields as keywords, a :class:`NodeCreateParams` mapping, or an
        :class:`heron.api.NodeCreateRequest` (keywords win). A create is never
        retried: pass ``node_id`` to make it safe to repeat (a duplicate answers
        ``ConflictError`` with ``code == "node_id_exists"``).

        Example::

            node = client.nodes.create(prompt="Summarise README.md", cwd="/repo")
        """
        body = create_body(params, fields)
        return self._call("POST", "/v1/nodes", api.Node, body=body, options=options)

    @endpoint
    def retrieve(self, node_id: str, *, options: RequestOptions | None = None) -> Flow[api.Node]:
        """``GET /v1/nodes/{id}``: the node as it is now."""
        return self._call("GET", _path(node_id), api.Node, options=options)

    @endpoint
    def list(
        self,
        *,
        status: api.NodeStatus | Sequence[api.NodeStatus] | None = None,
        root: bool | None = None,
        limit: int | None = None,
        after: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[NodeList]:
        """``GET /v1/nodes``: every node, oldest first, as a plain list.

        ``status`` keeps the nodes with that status (or any of several);
        ``root`` keeps only roots (``True``) or only children (``False``).
        ``limit`` (1-1000) returns at most that many; the list's ``next_cursor``
        is then the ``after`` of the next page (``None``: this was the last)::

            page = client.nodes.list(limit=50)
            while page.next_cursor is not None:
                page = client.nodes.list(limit=50, after=page.next_cursor)
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000
        ):
            raise ValueError(f"limit must be a whole number from 1 to 1000, got {limit!r}")
        if after is not None and (not isinstance(after, str) or not after):
            raise TypeError(f"after must be a cursor (a page's next_cursor), not {after!r}")
        statuses = [status] if isinstance(status, str) else status
        query = {
            "status": builtins.list(statuses) if statuses else None,
            "root": root,
            "limit": limit,
            "after": after,
        }
        return self._list(query, options)

    def _list(self, query: dict[str, Any], options: RequestOptions | None) -> Flow[NodeList]:
        options = options or RequestOptions()
        send = Send(method="GET", path="/v1/nodes", query=query, options=options)
        response = yield from request_flow(send, max_retries=self._driver.settings.max_retries)
        nodes = NodeList(parse_as(builtins.list[api.Node], response))
        nodes.next_cursor = response.headers.get("heron-next-cursor")
        return nodes

    @endpoint
    def outcome(
        self, node_id: str, *, wait: int = 0, options: RequestOptions | None = None
    ) -> Flow[api.OutcomePoll]:
        """``GET /v1/nodes/{id}/outcome``: one long poll, held up to ``wait`` seconds (0-25).

        Answers as soon as the node settles, or after ``wait`` with
        ``state == "pending"`` and ``outcome`` ``None``. ``ValueError`` (nothing
        sent) unless ``wait`` is a whole number from 0 to 25.
        """
        path = _path(node_id, "/outcome")
        return self._poll(path, _check_wait(wait), options)

    @endpoint
    def wait_for_outcome(
        self,
        node_id: str,
        *,
        timeout: float | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.NodeOutcome]:
        """Long-poll until the node settles, however long it takes; its outcome.

        There is no implicit bound: bound it with ``timeout`` (seconds in all; the
        builtin ``TimeoutError`` then, the node keeps running), with
        ``options.cancel`` (``APIUserAbortError``), or with a ``deadline`` on create
        (the daemon cancels the run). Stopping the wait never stops the node: use
        :meth:`cancel` for that.

        Nodes outlive the daemon, so the wait rides out a daemon restart or outage
        (no connection, ``429``, ``502``-``504``): it keeps asking, backing off up
        to 8 s between tries, until the daemon answers again or the wait's own
        bound ends it. Any other error answer is raised.
        """
        return self._wait(check_id(node_id), _check_timeout(timeout), options, None)

    @endpoint
    def create_and_wait(
        self,
        params: NodeCreateParams | api.NodeCreateRequest | None = None,
        /,
        *,
        timeout: float | None = None,
        options: RequestOptions | None = None,
        **fields: Unpack[NodeCreateParams],
    ) -> Flow[api.NodeOutcome]:
        """:meth:`create`, then :meth:`wait_for_outcome` (``timeout`` counts from the create).

        Example::

            outcome = client.nodes.create_and_wait(prompt="What time is it in UTC?")
            if outcome.kind == "result":
                print(outcome.output_text)
        """
        body = create_body(params, fields)
        return self._outcome_of(body, _check_timeout(timeout), options)

    @endpoint
    def parse(
        self,
        params: NodeCreateParams | api.NodeCreateRequest | None = None,
        /,
        *,
        output_schema: type[T] | Mapping[str, Any] | str,
        timeout: float | None = None,
        options: RequestOptions | None = None,
        **fields: Unpack[ParseParams],
    ) -> Flow[ParsedOutcome[T]]:
        """Create a node that must submit a result matching ``output_schema``, wait, and
        return the outcome with ``output_parsed`` typed.

        ``output_schema`` is a class pydantic can validate — a model, a dataclass, a
        ``TypedDict`` (``output_parsed`` is then validated from ``structured_result``
        as that class) — or a JSON schema (a mapping or JSON string: ``output_parsed``
        is the raw value). An agent's outcome is returned, never raised: a result the
        class refuses beyond its JSON schema (a validator; the daemon checks only the
        schema) comes back as a :class:`ParsedFailure` with ``reason ==
        "invalid_result"``, the validation errors in ``detail`` and the unparsed value in
        ``structured_result``. ``output_parsed`` is set exactly when ``kind ==
        "result"``; a decline or a failure comes back as a value with ``output_parsed``
        ``None``::

            class Package(BaseModel):
                name: str
                version: str

            run = client.nodes.parse(prompt="Read pyproject.toml: name and version?",
                                     cwd="/repo", output_schema=Package)
            if run.kind == "result":
                print(run.output_parsed.version)
        """
        if not isinstance(output_schema, type | str | Mapping):
            raise TypeError(
                "output_schema must be a class (a pydantic model, a dataclass ...), a JSON "
                f"schema mapping or a JSON string, not {output_schema!r}"
            )
        body = create_body(params, {**fields, "output_schema": output_schema})
        return self._parse(body, output_schema, _check_timeout(timeout), options)

    # -- steer -------------------------------------------------------------------

    @endpoint
    def message(
        self, node_id: str, body: str, *, options: RequestOptions | None = None
    ) -> Flow[api.MessageAccepted]:
        """``POST /v1/nodes/{id}/messages``: a follow-up; a dormant node wakes to read it,
        a running one reads it at its next turn."""
        path = _path(node_id, "/messages")
        return self._call("POST", path, api.MessageAccepted, body={"body": body}, options=options)

    @endpoint
    def interrupt(self, node_id: str, *, options: RequestOptions | None = None) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/interrupt``: stop the current turn, keep the node (it can
        be messaged or revived)."""
        return self._call("POST", _path(node_id, "/interrupt"), api.Node, options=options)

    @endpoint
    def cancel(
        self, node_id: str, *, reason: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/close``: tear the node and the subtree it owns down
        (terminal; its outcome is a ``cancelled`` failure carrying ``reason``)."""
        body = _optional(reason=reason)
        return self._call("POST", _path(node_id, "/close"), api.Node, body=body, options=options)

    @endpoint
    def update(
        self,
        node_id: str,
        patch: NodeConfigParams | api.NodeConfigPatch | None = None,
        /,
        *,
        options: RequestOptions | None = None,
        **fields: Unpack[NodeConfigParams],
    ) -> Flow[api.Node]:
        """``PATCH /v1/nodes/{id}/config``: change the model, name, description or
        deadline (fields left out stay).

        Example::

            client.nodes.update(node_id, deadline="30m", name="nightly review")
        """
        path = _path(node_id, "/config")
        body = model_body(patch, api.NodeConfigPatch, fields)
        return self._call("PATCH", path, api.Node, body=body, options=options)

    # -- lineage -----------------------------------------------------------------

    @endpoint
    def fork(
        self,
        node_id: str,
        params: ForkParams | api.ForkRequest | None = None,
        /,
        *,
        options: RequestOptions | None = None,
        **fields: Unpack[ForkParams],
    ) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/fork``: a new node continuing from a copy of this one's
        saved conversation and settings; the original is untouched.

        With a ``prompt`` the fork runs at once, else it waits dormant.
        ``new_node_id`` forks to an exact id (``node_id`` in an
        :class:`heron.api.ForkRequest`).

        Example::

            fork = client.nodes.fork(node.node_id, prompt="Try the other approach")
        """
        path = _path(node_id, "/fork")
        body = model_body(params, api.ForkRequest, {}, also=("new_node_id",))
        given = dict(fields)
        if "new_node_id" in body:
            renamed = body.pop("new_node_id")
            if body.get("node_id", renamed) != renamed:
                raise TypeError(
                    "params name the fork's id twice, differently: give new_node_id only "
                    "(node_id is its name in an api.ForkRequest)"
                )
            body["node_id"] = renamed
        if "new_node_id" in given:
            given["node_id"] = given.pop("new_node_id")
        body.update(given)
        check_fields(body, api.ForkRequest, ())
        if body.get("node_id") is not None:
            check_id(body["node_id"], "new node id")
        return self._call("POST", path, api.Node, body=body or None, options=options)

    @endpoint
    def revive(
        self, node_id: str, *, message: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/revive``: a new run of a dormant, interrupted or failed node
        from its saved state, reading ``message`` first (else told to continue)."""
        body = _optional(message=message)
        return self._call("POST", _path(node_id, "/revive"), api.Node, body=body, options=options)

    @endpoint
    def revive_all(self, *, options: RequestOptions | None = None) -> Flow[api.ReviveAllResult]:
        """``POST /v1/nodes/revive-all``: revive every node that stopped involuntarily (see
        :class:`heron.api.ReviveAllResult` for which)."""
        return self._call("POST", "/v1/nodes/revive-all", api.ReviveAllResult, options=options)

    @endpoint
    def recycle(self, node_id: str, *, options: RequestOptions | None = None) -> Flow[api.Recycled]:
        """``POST /v1/nodes/{id}/recycle``: same node, fresh context — its model summarises
        the conversation and remembers only that from its next run on."""
        return self._call("POST", _path(node_id, "/recycle"), api.Recycled, options=options)

    @endpoint
    def relaunch_root(
        self, node_id: str, *, options: RequestOptions | None = None
    ) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/relaunch-root``: start this node's tree over from its
        root's original prompt; returns the root."""
        path = _path(node_id, "/relaunch-root")
        return self._call("POST", path, api.Node, options=options)

    @endpoint
    def promote(
        self, node_id: str, *, message: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/promote``: make the node an orchestrator from its next run
        (``message``, say the work to fan out, wakes a dormant node)."""
        body = _optional(message=message)
        return self._call("POST", _path(node_id, "/promote"), api.Node, body=body, options=options)

    @endpoint
    def demote(self, node_id: str, *, options: RequestOptions | None = None) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/demote``: make the node hands-on (``base``) from its next run."""
        return self._call("POST", _path(node_id, "/demote"), api.Node, options=options)

    # -- orchestration -----------------------------------------------------------

    @endpoint
    def yield_(
        self, node_id: str, *, reason: str | None = None, options: RequestOptions | None = None
    ) -> Flow[api.Node]:
        """``POST /v1/nodes/{id}/yield``: hand the turn back while children work (a running
        node goes ``dormant``; its children's outcomes wake it)."""
        body = _optional(reason=reason)
        return self._call("POST", _path(node_id, "/yield"), api.Node, body=body, options=options)

    @endpoint
    def wait(
        self,
        node_id: str,
        children: Sequence[str],
        *,
        timeout_seconds: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.WaitStatus]:
        """``POST /v1/nodes/{id}/wait``: park the node until these children of its own
        settle (with ``timeout_seconds``, 1 to a week, it wakes then with what settled).

        ``TypeError`` for a bad child id (or a single string), ``ValueError`` for no
        children or a ``timeout_seconds`` out of range; nothing is sent then.
        """
        path = _path(node_id, "/wait")
        if isinstance(children, str) or not isinstance(children, Sequence):
            raise TypeError(f"children must be a list of node ids, not {children!r}")
        if not children:
            raise ValueError("children must name at least one child node")
        ids = [check_id(child, "child node id") for child in children]
        if timeout_seconds is not None and (
            isinstance(timeout_seconds, bool)
            or not isinstance(timeout_seconds, int)
            or not 1 <= timeout_seconds <= _MAX_WAIT_SECONDS
        ):
            raise ValueError(
                f"timeout_seconds must be a whole number from 1 to {_MAX_WAIT_SECONDS}, "
                f"got {timeout_seconds!r}"
            )
        body: dict[str, Any] = {"children": ids}
        if timeout_seconds is not None:
            body["timeout_seconds"] = timeout_seconds
        return self._call("POST", path, api.WaitStatus, body=body, options=options)

    # -- flows ------------------------------------------------------------------

    def _poll(self, path: str, wait: int, options: RequestOptions | None) -> Flow[api.OutcomePoll]:
        return self._call(
            "GET",
            path,
            api.OutcomePoll,
            query={"wait": wait},
            options=options,
            min_timeout=wait + _POLL_MARGIN,
        )

    def _wait(
        self,
        node_id: str,
        timeout: float | None,
        options: RequestOptions | None,
        deadline: float | None,
    ) -> Flow[api.NodeOutcome]:
        if deadline is None and timeout is not None:
            deadline = time.monotonic() + timeout
        path = _path(node_id, "/outcome")
        outage = 0  # polls in a row the daemon did not answer
        while True:
            wait = MAX_WAIT
            if deadline is not None:
                remaining = deadline - time.monotonic()
                wait = min(MAX_WAIT, max(0, math.floor(remaining)))
                if wait == 0 and remaining > 0:
                    # Less than a second left: wait it out, then ask one last time.
                    yield Sleep(remaining, options or RequestOptions())
            try:
                poll = yield from self._poll(path, wait, options)
            except APIError as exc:
                if not (isinstance(exc, APIConnectionError) or exc.status in _OUTAGE_STATUSES):
                    raise
                # The daemon restarting or briefly away: nodes are durable, so a wait
                # with no bound of its own rides it out, backing off, until it answers.
                # A Retry-After is honoured (a long one too: the wait has no hurry of
                # its own), else backoff; the deadline below caps either.
                after = retry_after(exc.headers.get("retry-after"))
                pause = after if after is not None else retry_delay(outage, None) or _MAX_PAUSE
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError(
                            f"node {node_id} has not settled within {timeout:g} s as far as "
                            f"the daemon could say: it is unreachable ({exc})"
                        ) from exc
                    pause = min(pause, remaining)
                yield Sleep(pause, options or RequestOptions())
                outage += 1
                continue
            outage = 0
            if poll.state == "settled" and poll.outcome is not None:
                return poll.outcome
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"node {poll.node_id} has not settled within {timeout:g} s; it keeps "
                    f"running (status {poll.node_status}); stop it with client.nodes.cancel"
                )

    def _create_and_wait(
        self, body: dict[str, Any], timeout: float | None, options: RequestOptions | None
    ) -> Flow[tuple[str, api.NodeOutcome]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        node: api.Node = yield from self._call(
            "POST", "/v1/nodes", api.Node, body=body, options=options
        )
        outcome = yield from self._wait(node.node_id, timeout, options, deadline)
        return node.node_id, outcome

    def _outcome_of(
        self, body: dict[str, Any], timeout: float | None, options: RequestOptions | None
    ) -> Flow[api.NodeOutcome]:
        _, outcome = yield from self._create_and_wait(body, timeout, options)
        return outcome

    def _parse(
        self,
        body: dict[str, Any],
        schema: type[Any] | Mapping[str, Any] | str,
        timeout: float | None,
        options: RequestOptions | None,
    ) -> Flow[Any]:
        node_id, outcome = yield from self._create_and_wait(body, timeout, options)
        return parsed_outcome(outcome, schema, node_id)
