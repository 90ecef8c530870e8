"""The threads blocking tool calls run in: reused when idle, a new one whenever none is
(a hung call never holds up another), idle ones end, and a forked child starts afresh."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time

import pytest

from heron.tools import LocalToolClient, tool
from heron.tools._threads import _WORKERS as WORKERS
from heron.tools._threads import WorkerThreads, in_worker_thread


def run_in(workers: WorkerThreads, func: object) -> threading.Event:
    """Submit ``func`` to ``workers``; the event is set once it has run."""
    done = threading.Event()

    def job() -> None:
        func()  # type: ignore[operator]
        done.set()
        return None

    workers.submit(job)
    return done


def wait_for(condition: object, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_calls_one_after_another_reuse_one_thread() -> None:
    workers = WorkerThreads(idle_seconds=10)
    seen: list[int] = []
    for _ in range(20):
        assert run_in(workers, lambda: seen.append(threading.get_ident())).wait(5)
        wait_for(lambda: workers.idle == 1)
    assert len(set(seen)) == 1
    assert workers.started == 1 and workers.threads == 1


def test_a_hung_call_never_holds_up_another() -> None:
    workers = WorkerThreads(idle_seconds=10)
    release = threading.Event()
    hung = run_in(workers, release.wait)
    try:
        # Each call finds no idle thread (the hung one holds its own): a new one starts.
        for _ in range(3):
            assert run_in(workers, lambda: None).wait(5)
        assert not hung.is_set()
        assert workers.threads >= 2
    finally:
        release.set()
    assert hung.wait(5)


def test_many_calls_at_once_each_get_a_thread_then_the_idle_ones_end() -> None:
    workers = WorkerThreads(idle_seconds=0.2)
    barrier = threading.Barrier(8, timeout=10)
    finished = [run_in(workers, barrier.wait) for _ in range(8)]  # all must run at once
    assert all(event.wait(10) for event in finished)
    assert workers.started == 8
    wait_for(lambda: workers.threads == 0)
    assert workers.idle == 0
    # And the next call starts a thread again.
    assert run_in(workers, lambda: None).wait(5)
    assert workers.started == 9


def test_a_call_that_races_a_thread_ending_is_still_run() -> None:
    workers = WorkerThreads(idle_seconds=0.001)  # threads end almost as soon as idle
    ran = [run_in(workers, lambda: None) for _ in range(500)]
    assert all(event.wait(10) for event in ran)
    wait_for(lambda: workers.threads == 0)


async def test_in_worker_thread_returns_raises_and_keeps_context_vars() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("the caller's")
    assert await in_worker_thread(lambda: var.get()) == "the caller's"
    assert await in_worker_thread(lambda a, b=0: a + b, 2, b=3) == 5

    def fail() -> None:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        await in_worker_thread(fail)
    assert threading.current_thread() is threading.main_thread()


async def test_a_cancelled_call_runs_on_and_its_thread_comes_back() -> None:
    release = threading.Event()
    call = asyncio.ensure_future(in_worker_thread(release.wait, 10))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    # The next call does not wait for the one still running.
    assert await asyncio.wait_for(in_worker_thread(lambda: "next"), 5) == "next"
    release.set()


async def test_sync_tools_run_in_the_shared_worker_threads() -> None:
    @tool
    def where() -> str:
        """Name the thread this runs in."""
        return threading.current_thread().name

    client = LocalToolClient([where])
    names = []
    await client.call_tool("where", {})
    started = WORKERS.started
    for _ in range(5):
        result = await client.call_tool("where", {})
        assert not result.is_error
        names.append(result.text)
    assert all(name.startswith("heron-tool-") for name in names)
    assert WORKERS.started == started  # one after another: idle threads, none new


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_its_own_threads() -> None:
    assert run_in(WORKERS, lambda: None).wait(5)  # the parent has an idle thread now
    wait_for(lambda: WORKERS.idle >= 1)
    pid = os.fork()
    if pid == 0:  # the child: none of the parent's threads came along
        code = 1
        try:
            fresh = WORKERS.idle == 0 and WORKERS.threads == 0
            value = asyncio.run(asyncio.wait_for(in_worker_thread(lambda: 42), 5))
            code = 0 if fresh and value == 42 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
