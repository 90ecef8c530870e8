"""Retrying a model request: the policy, the backoff, and ``Retry-After``.

The vendor SDKs are built with ``max_retries=0`` so that every retry is
Heron's: one policy, one backoff, the same for every provider, and tested.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from .._core import ChunkCallback, ProviderError, StreamChunk, ToolCall, emit

__all__ = [
    "Fault",
    "IdleTimer",
    "RetryPolicy",
    "Tracker",
    "idle_limit",
    "parse_retry_after",
    "with_retries",
]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """How a provider retries a failed request and how long it waits for one.

    Rate limits (429), server errors (5xx) and dropped connections are
    retried up to ``max_retries`` times, waiting ``base_delay * 2**n``
    seconds (capped at ``max_delay``, with up to 25% jitter taken off) or what
    the server's ``Retry-After`` asks, whichever is longer. A timeout is
    retried once at most: each attempt re-runs (and is billed for) the whole
    request. A request is never retried once part of its answer has been
    streamed to ``on_chunk``::

        OpenAIProvider(key, retry=RetryPolicy(max_retries=5, timeout=30))
    """

    max_retries: int = 3
    """Retries after the first attempt (0: fail at once)."""
    base_delay: float = 0.5
    """Seconds before the first retry; doubled for each one after it."""
    max_delay: float = 30.0
    """Longest backoff between two attempts, in seconds."""
    max_retry_after: float = 120.0
    """Longest ``Retry-After`` honoured; a server asking for more fails the call at once."""
    timeout: float = 120.0
    """Seconds to wait for a connection, or for the next event of a streamed response."""
    response_timeout: float = 600.0
    """Seconds to wait for a whole non-streamed response (a reasoning model may think for
    minutes before it sends a byte)."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("delays must be >= 0")
        if self.timeout <= 0 or self.response_timeout <= 0:
            raise ValueError("timeouts must be positive")

    def backoff(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based), jitter included."""
        delay = min(self.base_delay * 2.0**retry, self.max_delay)
        return delay * (1 - 0.25 * random.random())


@dataclass(frozen=True, kw_only=True, slots=True)
class Fault:
    """A failed attempt, as the retry loop sees it."""

    error: ProviderError
    """What is raised if the call is not retried."""
    retry_after: float | None = None
    """Seconds the server asked to wait, if it said."""


class Tracker:
    """Wraps ``on_chunk`` to remember whether any chunk went out this call.

    Once a chunk has been delivered a retry would stream it twice, so the
    retry loop asks :attr:`streamed` before trying again.
    """

    def __init__(self, on_chunk: ChunkCallback | None) -> None:
        self._on_chunk = on_chunk
        self.streamed = False
        """Whether a chunk has been delivered."""

    @property
    def active(self) -> bool:
        """Whether there is a callback to stream to."""
        return self._on_chunk is not None

    async def __call__(self, chunk: StreamChunk) -> None:
        if self._on_chunk is not None:
            self.streamed = True
            await emit(self._on_chunk, chunk)

    async def text(self, delta: str) -> None:
        """Stream an answer-text delta."""
        if delta:
            await self(StreamChunk(role="assistant", content=delta))

    async def think(self, delta: str) -> None:
        """Stream a reasoning-text delta."""
        if delta:
            await self(StreamChunk(role="assistant", thinking=delta))

    async def call(self, call: ToolCall) -> None:
        """Stream one finished tool call."""
        await self(StreamChunk(role="assistant", tool_calls=(call,)))

    async def done(self) -> None:
        """Stream the end of the turn."""
        await self(StreamChunk(role="assistant", done=True))


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            try:
                when = email.utils.parsedate_to_datetime(raw).timestamp()
            except (TypeError, ValueError):
                continue
            value = when - time.time()
        if math.isfinite(value):
            return max(value, 0.0)
    return None


class IdleTimer:
    """The clock of :func:`idle_limit`: it runs only while waiting on the server."""

    def __init__(self, timer: asyncio.Timeout, seconds: float) -> None:
        self._timer = timer
        self._seconds = seconds

    def pause(self) -> None:
        """Something new arrived: stop the clock while it is handled."""
        self._timer.reschedule(None)

    def resume(self) -> None:
        """Wait for the server again, with the full time."""
        self._timer.reschedule(asyncio.get_running_loop().time() + self._seconds)


@contextlib.asynccontextmanager
async def idle_limit(seconds: float, *, provider: str) -> AsyncIterator[IdleTimer]:
    """Fail a streamed attempt when the server sends nothing new for ``seconds``.

    A socket read timeout is not enough: a server may keep the connection
    busy with keep-alive events (Anthropic's ``ping``) and never progress.
    The caller pauses the clock while it handles an event, so a slow
    ``on_chunk`` is not taken for a silent server.
    """
    timer = asyncio.timeout(seconds)
    try:
        async with timer:
            yield IdleTimer(timer, seconds)
    except TimeoutError:
        if not timer.expired():
            raise
        raise ProviderError(
            f"request timed out: nothing new from the server for {seconds:g} s",
            code="timeout",
            retryable=True,
            provider=provider,
        ) from None


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    classify: Callable[[Exception], Fault | None],
    tracker: Tracker,
) -> T:
    """Run ``attempt`` until it succeeds or fails in a way not worth retrying.

    ``classify`` turns an exception into a :class:`Fault` (or ``None`` for one
    that is not a provider fault, which propagates untouched).
    """
    retry = timeouts = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            fault = classify(exc)
            if fault is None:
                raise
            error = fault.error
            timeouts += error.code == "timeout"
            wait = max(policy.backoff(retry), fault.retry_after or 0.0)
            if (
                not error.retryable
                or retry >= policy.max_retries
                or timeouts > 1
                or tracker.streamed
                or (fault.retry_after is not None and fault.retry_after > policy.max_retry_after)
            ):
                if retry:
                    error.message += f" (after {retry + 1} attempts)"
                # A classifier may hand back the exception itself: no cause then.
                raise error from (None if error is exc else exc)
        await asyncio.sleep(wait)
        retry += 1
