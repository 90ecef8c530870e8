"""The embedded model in a worker process: real workers, really crashed."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from heron import Message, ProviderError, StreamChunk
from heron.providers import LocalProvider
from heron.providers._local_process import MODEL_CRASHED, LocalProcessProvider, out_of_process
from heron.providers._local_worker import CRASH_ENV

pytestmark = pytest.mark.slow

QUESTION = [Message.user("What is 2 + 2?")]


@pytest.fixture
async def worker() -> AsyncIterator[LocalProcessProvider]:
    provider = LocalProcessProvider(n_ctx=1024, max_tokens=64)
    try:
        yield provider
    finally:
        await provider.aclose()


async def test_the_worker_streams_a_reply_like_the_in_process_provider(
    worker: LocalProcessProvider,
) -> None:
    chunks: list[StreamChunk] = []
    response = await worker.chat(QUESTION, on_chunk=chunks.append)
    assert "4" in response.content and response.output_tokens > 0
    assert "".join(c.content for c in chunks) == response.content
    assert chunks[-1].done and response.stop_reason == "end_turn"
    assert worker.capabilities == LocalProvider(n_ctx=1024).capabilities
    assert worker.model == LocalProvider().model


async def test_a_worker_killed_mid_turn_fails_that_turn_and_the_next_gets_a_fresh_one(
    worker: LocalProcessProvider,
) -> None:
    first = worker.worker_pid
    assert first is not None
    started = asyncio.Event()

    def on_chunk(chunk: StreamChunk) -> None:
        started.set()

    story = [Message.user("Write a very long story about a dragon.")]
    turn = asyncio.ensure_future(worker.chat(story, on_chunk=on_chunk))
    await asyncio.wait_for(started.wait(), 300)
    os.kill(first, signal.SIGSEGV)
    with pytest.raises(ProviderError) as caught:
        await asyncio.wait_for(turn, 60)
    error = caught.value
    assert error.code == MODEL_CRASHED and error.retryable and error.provider == "local"
    assert "SIGSEGV" in error.message and f"pid {first}" in error.message
    response = await worker.chat(QUESTION)
    assert "4" in response.content
    assert worker.worker_pid not in (None, first) and worker.crashes == 1


async def test_the_crash_names_the_override_to_try_when_repacking_was_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "crash"
    marker.touch()
    monkeypatch.setenv(CRASH_ENV, str(marker))
    provider = LocalProcessProvider(n_ctx=512, repack=True)
    try:
        with pytest.raises(ProviderError, match=r"try HERON_LOCAL_REPACK=off"):
            await provider.chat(QUESTION)
    finally:
        await provider.aclose()


async def test_cancelling_a_turn_leaves_the_worker_serving(worker: LocalProcessProvider) -> None:
    started = asyncio.Event()
    story = [Message.user("Write a very long story about a dragon.")]
    turn = asyncio.ensure_future(worker.chat(story, on_chunk=lambda _: started.set()))
    await asyncio.wait_for(started.wait(), 300)
    pid = worker.worker_pid
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert "4" in (await worker.chat(QUESTION)).content
    assert worker.worker_pid == pid


async def test_closing_ends_the_worker_process() -> None:
    provider = LocalProcessProvider(n_ctx=512)
    pid = provider.worker_pid
    assert pid is not None
    await provider.aclose()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_only_the_local_provider_moves_out_of_process() -> None:
    from heron.providers import ScriptedProvider

    scripted = ScriptedProvider(["Hi."])
    assert out_of_process(scripted) is scripted
