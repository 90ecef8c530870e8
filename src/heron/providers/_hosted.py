"""What every hosted provider shares: its SDK client, the retry loop, and ``chat``."""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qsl, urlsplit

from .._core import Capabilities, ChatResponse, ChunkCallback, Message, ToolSchema, UserError
from ._base import Provider
from ._checks import require_effort, require_model
from ._retry import Fault, RetryPolicy, Tracker, with_retries

__all__ = ["HostedProvider", "by_prefix", "response_header", "split_query"]

C = TypeVar("C")


def by_prefix(model: str, table: dict[str, int], default: int) -> int:
    """A per-model figure from a table keyed by model-id prefix; the longest prefix wins."""
    matches = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(matches, key=len)] if matches else default


def split_query(base_url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """``base_url`` without its query, and the query's parameters (``None``: it had none).

    A gateway may take its credential in the query (``.../v1?token=...``). The SDKs
    append a request's path to the base URL's text, query and all, which would glue
    the path into the query: the parameters go to every request as a default query.
    """
    if base_url is None or "?" not in base_url:
        return base_url, None
    parts = urlsplit(base_url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return parts._replace(query="").geturl(), query or None


class HostedProvider(Provider, Generic[C]):
    """A provider behind a vendor SDK client of type ``C``.

    Subclasses build the request body, run one attempt of it, and classify
    what the SDK raises; ``chat`` adds the checks, streaming bookkeeping and
    retries around them.
    """

    def __init__(
        self,
        *,
        model: str,
        think_effort: float | None,
        retry: RetryPolicy | None,
        capabilities: Capabilities,
    ) -> None:
        self.model: str = require_model(self.name, model)
        """The model id sent with every request."""
        self.think_effort = require_effort(self.name, think_effort)
        """How hard the model should think, 0..1 (``None``: the model's default)."""
        self.retry = retry or RetryPolicy()
        """How failed requests are retried, and the network timeout."""
        self._capabilities = capabilities
        self._sdk: C | None = None
        self._sdk_loop: asyncio.AbstractEventLoop | None = None

    @property
    def capabilities(self) -> Capabilities:
        """What the model supports (from the per-model defaults, or as overridden)."""
        return self._capabilities

    def _client(self) -> C:
        # An HTTP connection pool belongs to the event loop it was made on; a
        # provider used from a second asyncio.run() gets a fresh client.
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._sdk, self._sdk_loop = self._connect(), loop
        return self._sdk

    async def aclose(self) -> None:
        """Close the HTTP connections this provider holds (it reconnects if used again)."""
        if self._sdk is not None:
            sdk, self._sdk = self._sdk, None
            await self._disconnect(sdk)

    @abstractmethod
    def _connect(self) -> C:
        """A new SDK client, with the SDK's own retries off."""

    @abstractmethod
    async def _disconnect(self, client: C) -> None:
        """Close ``client``."""

    @abstractmethod
    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *, stream: bool
    ) -> dict[str, Any]:
        """The request body for one call."""

    @abstractmethod
    async def _attempt(
        self,
        body: dict[str, Any],
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        out: Tracker,
    ) -> ChatResponse:
        """Send ``body`` once; stream to ``out`` if it is active."""

    @abstractmethod
    def _classify(self, exc: Exception) -> Fault | None:
        """A provider fault for what the SDK raised, or ``None`` to let it propagate."""

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """Send the conversation; stream it to ``on_chunk`` if given."""
        tools = tuple(tools or ())
        if tools and not self._capabilities.supports_tools:
            raise UserError(
                f"{self.name}: tools were passed but supports_tools is False; pass "
                "supports_tools=True if the model can call tools"
            )
        out = Tracker(on_chunk)
        body = self.request(messages, tools, stream=out.active)
        return await with_retries(
            lambda: self._attempt(body, messages, tools, out),
            policy=self.retry,
            classify=self._classify,
            tracker=out,
        )


def response_header(stream: Any, name: str) -> str | None:
    """A header of the HTTP response behind an SDK stream (a request id), if the SDK keeps it."""
    response = getattr(stream, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get(name) if headers is not None else None
    return value if isinstance(value, str) else None
