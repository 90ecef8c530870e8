"""Fixtures shared by the multi-agent tests (fixtures, not a module: see ../conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

import pytest

from heron import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    Message,
    Provider,
    RunResult,
    SimpleAgent,
    StreamChunk,
    ToolSchema,
)

Starter: TypeAlias = Callable[[ChunkCallback], Awaitable[Any]]
CancelAfter: TypeAlias = Callable[[Starter, str], Awaitable[None]]
UsageCheck: TypeAlias = Callable[..., None]


async def _cancel_after(start: Starter, agent: str) -> None:
    started = asyncio.Event()

    def watch(chunk: StreamChunk) -> None:
        if chunk.agent == agent:
            started.set()

    task = asyncio.ensure_future(start(watch))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture
def cancel_after() -> CancelAfter:
    """``await cancel_after(start, agent)``: run ``start(on_chunk)`` until ``agent``'s first
    chunk arrives, then cancel it and check that the cancellation came through."""
    return _cancel_after


def _usage_adds_up(result: RunResult, *agents: SimpleAgent) -> None:
    by_agent = result.tokens_by_agent()
    assert by_agent == {a.name: (a.usage.input_tokens, a.usage.output_tokens) for a in agents}
    assert sum(i for i, _ in by_agent.values()) == result.input_tokens
    assert sum(o for _, o in by_agent.values()) == result.output_tokens


@pytest.fixture
def usage_adds_up() -> UsageCheck:
    """Check a run tree in which each of ``agents`` ran once: each agent's share of the
    tokens is its lifetime usage, and the shares add up to the run's totals."""
    return _usage_adds_up


class _CutOff(Provider):
    """A model whose every answer is the given text, cut off by its token limit."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[list[Message]] = []

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(supports_tools=True)

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        self.requests.append(list(messages))
        return ChatResponse(
            content=self.text, input_tokens=10, output_tokens=5, stop_reason="max_tokens"
        )


@pytest.fixture
def cut_off() -> Callable[[str], Provider]:
    """``cut_off(text)``: a provider answering ``text`` every turn, as cut off by the
    model's token limit (``stop_reason="max_tokens"``)."""
    return _CutOff
