"""``Heron`` and ``AsyncHeron``: the typed clients of the daemon's ``/v1`` API."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Generic

from .._core.closing import AsyncClosing, Closing
from ._canvas import Canvas
from ._crons import Crons
from ._drivers import AsyncDriver, Driver, SyncDriver
from ._files import Bash, Files
from ._flow import Flow
from ._human import Human
from ._memory import Memory
from ._models import Models
from ._nodes import Nodes
from ._options import RequestOptions
from ._profiles import Profiles
from ._resource import Async, M, Resource, Sync, endpoint
from ._settings import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Settings
from ._system import Auth, System

__all__ = ["AsyncHeron", "Heron"]


class _Client(Resource[M], Generic[M]):
    """What both clients have: the resources, and :meth:`request` for any route."""

    settings: Settings
    """Where the daemon is and the defaults every request starts from."""
    nodes: Nodes[M]
    """Agent runs: create, watch, wait for outcomes, steer."""
    system: System[M]
    """``GET /v1/status`` and ``/healthz``."""
    profiles: Profiles[M]
    """The profiles an application's nodes run under."""
    auth: Auth[M]
    """How this client authenticates, and which model providers the daemon can use."""
    files: Files[M]
    """Files on the daemon's host, by absolute path: read, write (atomically), list."""
    bash: Bash[M]
    """One command on the daemon's host, run to its end."""
    canvas: Canvas[M]
    """What needs a person, the node graph at once, the roster, prune, and history."""
    models: Models[M]
    """The API keys installed in the daemon, and its default model."""
    memory: Memory[M]
    """A profile's notes by path: versioned, searchable."""
    crons: Crons[M]
    """Schedules that create a node from a template at each tick."""
    human: Human[M]
    """Requests for a person's answer (``human.requests``) and the inbox (``human.inbox``)."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        socket_path: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        auto_start: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        driver = self._connect(
            Settings.resolve(
                base_url=base_url,
                socket_path=socket_path,
                home=home,
                token=token,
                timeout=timeout,
                max_retries=max_retries,
                auto_start=auto_start,
                headers=headers,
            )
        )
        super().__init__(driver)
        self.settings = driver.settings
        self.nodes = Nodes(driver)
        self.system = System(driver)
        self.profiles = Profiles(driver)
        self.auth = Auth(driver)
        self.files = Files(driver)
        self.bash = Bash(driver)
        self.canvas = Canvas(driver)
        self.models = Models(driver)
        self.memory = Memory(driver)
        self.crons = Crons(driver)
        self.human = Human(driver)

    @endpoint
    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        options: RequestOptions | None = None,
        *,
        query: Mapping[str, Any] | None = None,
    ) -> Flow[Any]:
        """Any route, with the same auth, retries and error mapping as the typed methods.

        Returns the decoded JSON answer (``None`` for an empty one, the text of a
        non-JSON one). ``path`` starts with ``/`` (``/v1/...``); ``body`` is
        JSON-serialisable; ``GET``/``HEAD``/``DELETE`` are retried like every read.

        Example::

            nodes = client.request("GET", "/v1/nodes", query={"status": "running"})
        """
        if not isinstance(method, str) or not method.isalpha():
            raise ValueError(f"method must be an HTTP method such as 'GET', got {method!r}")
        if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
            raise ValueError(f"path must start with a single '/', got {path!r}")
        if any(c in path for c in "?#") and query is not None:
            raise ValueError("pass the query in the path or as query=, not both")
        return self._call(method, path, _JSON, query=query, body=body, options=options)

    def _connect(self, settings: Settings) -> Driver[M]:
        """The driver of this kind of client (it owns the connections)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings.address!r})"


_JSON: Any = Any
"""Decode an answer as JSON, whatever it holds."""


class Heron(_Client[Sync], Closing):
    """The blocking client.

    ``Heron()`` talks to the daemon on ``$HERON_HOME/heron.sock``, starting it if
    nothing listens there; ``Heron(base_url="http://127.0.0.1:7717", token=...)``
    to a TCP listener (``heron sys connect`` prints both). Options left out fall
    back to ``HERON_BASE_URL``, ``HERON_SOCKET``, ``HERON_HOME`` and
    ``HERON_TOKEN``, read once, here.

    Example::

        with Heron() as client:
            outcome = client.nodes.create_and_wait(prompt="What time is it in UTC?")
    """

    _sync: SyncDriver

    def _connect(self, settings: Settings) -> SyncDriver:
        self._sync = SyncDriver(settings)
        return self._sync

    def close(self) -> None:
        """Close the client's connections (open streams end)."""
        self._sync.close()


class AsyncHeron(_Client[Async], AsyncClosing):
    """The ``asyncio`` client: the same methods as :class:`Heron`, awaited.

    Example::

        async with AsyncHeron() as client:
            stream = client.nodes.stream(prompt="Summarise README.md", cwd="/repo")
            async for event in stream:
                ...
    """

    _async: AsyncDriver

    def _connect(self, settings: Settings) -> AsyncDriver:
        self._async = AsyncDriver(settings)
        return self._async

    async def aclose(self) -> None:
        """Close the client's connections (open streams end)."""
        await self._async.aclose()
