"""``client.files`` and ``client.bash`` through both clients, on a real daemon."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.support.daemon import Daemon
from tests.support.polling import eventually_async
from tests.support.shell import alive, sleeper, wait_sleeping

from heron import api
from heron.client import (
    APIError,
    APIUserAbortError,
    Cancel,
    ConflictError,
    Heron,
    NotFoundError,
    RequestOptions,
    UnprocessableEntityError,
)

from ._both import MODES, On, on_client

MIB = 1024 * 1024


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def test_write_read_and_list_round_trip(on: On, tmp_path: Path) -> None:
    text_file = str(tmp_path / "notes" / "a.txt")
    written = await on(lambda c: c.files.write(text_file, "héllo\n", create_parents=True))
    assert isinstance(written, api.FileWritten)
    assert written.created is True and written.size == len("héllo\n".encode())
    page = await on(lambda c: c.files.read(text_file))
    assert isinstance(page, api.FilePeek)
    assert page.content == "héllo\n" and page.encoding == "utf-8" and not page.truncated
    assert page.modified_at == written.modified_at

    blob = str(tmp_path / "notes" / "b.bin")
    data = bytes(range(256))
    await on(lambda c: c.files.write(blob, data))
    raw = await on(lambda c: c.files.read(blob, offset=128, limit=64))
    assert raw.encoding == "base64" and raw.length == 64 and raw.truncated
    assert raw.next_offset == 192
    assert base64.b64decode(raw.content) == data[128:192]

    listing = await on(lambda c: c.files.list(str(tmp_path / "notes")))
    assert isinstance(listing, api.FileList)
    assert [(e.name, e.type, e.size) for e in listing.entries] == [
        ("a.txt", "file", 7),
        ("b.bin", "file", 256),
    ]
    short = await on(lambda c: c.files.list(str(tmp_path / "notes"), limit=1))
    assert short.truncated is True and short.total == 2


async def test_write_guards(on: On, tmp_path: Path) -> None:
    path = str(tmp_path / "guarded.txt")
    first = await on(lambda c: c.files.write(path, "v1"))
    with pytest.raises(ConflictError) as exists:
        await on(lambda c: c.files.write(path, "v2", overwrite=False))
    assert exists.value.code == "file_exists"
    await on(lambda c: c.files.write(path, "v2", expected_modified_at=first.modified_at))
    with pytest.raises(ConflictError) as modified:
        await on(lambda c: c.files.write(path, "v3", expected_modified_at=first.modified_at))
    assert modified.value.code == "file_modified"
    assert await asyncio.to_thread(Path(path).read_text) == "v2"


async def test_size_limit_and_bad_paths(on: On, tmp_path: Path) -> None:
    path = str(tmp_path / "big.bin")
    await on(lambda c: c.files.write(path, b"\0" * MIB))
    with pytest.raises(APIError) as too_large:
        await on(lambda c: c.files.write(path, b"\1" * (MIB + 1)))
    assert too_large.value.status == 413 and too_large.value.code == "file_too_large"
    assert await asyncio.to_thread(Path(path).read_bytes) == b"\0" * MIB
    with pytest.raises(UnprocessableEntityError) as relative:
        await on(lambda c: c.files.read("relative.txt"))
    assert relative.value.code == "invalid_path"
    with pytest.raises(UnprocessableEntityError) as dotdot:
        await on(lambda c: c.files.list(f"{tmp_path}/../x"))
    assert dotdot.value.code == "invalid_path"
    with pytest.raises(NotFoundError) as missing:
        await on(lambda c: c.files.read(str(tmp_path / "missing")))
    assert missing.value.code == "file_not_found"
    with pytest.raises(TypeError, match="str or bytes"):
        await on(lambda c: c.files.write(path, 42))


async def test_bash_run(on: On, tmp_path: Path) -> None:
    result = await on(
        lambda c: c.bash.run(
            'echo "$X in $PWD"; cat >&2; exit 7', cwd=str(tmp_path), env={"X": "x"}, stdin="in"
        )
    )
    assert isinstance(result, api.BashResult)
    assert result.exit_code == 7 and result.stdout == f"x in {tmp_path}\n"
    assert result.stderr == "in" and not result.timed_out
    slow = await on(lambda c: c.bash.run("sleep 30", cwd=str(tmp_path), timeout=0.3))
    assert slow.timed_out is True and slow.exit_code is None
    with pytest.raises(UnprocessableEntityError) as bad:
        await on(lambda c: c.bash.run("true", cwd=str(tmp_path / "missing")))
    assert bad.value.code == "invalid_cwd"


def test_bash_request_outlasts_the_client_timeout(daemon: Daemon, tmp_path: Path) -> None:
    """A command may run longer than the client's own request timeout: the client waits
    for the command's timeout plus a margin."""
    with Heron(socket_path=daemon.socket, auto_start=False, timeout=0.5) as client:
        result = client.bash.run("sleep 1.2; echo late", cwd=str(tmp_path), timeout=5)
    assert result.stdout == "late\n" and result.exit_code == 0


async def test_cancelling_the_request_kills_the_command(on: On, tmp_path: Path) -> None:
    child = sleeper()
    command = f"{child} & wait"
    cancel = Cancel()
    pids: list[int] = []

    def cancel_once_started() -> None:
        # Once the command has started its child, however long that takes under load.
        try:
            pids.append(wait_sleeping(child))
        finally:
            cancel.cancel()

    waiter = threading.Thread(target=cancel_once_started, daemon=True)
    waiter.start()
    options = RequestOptions(cancel=cancel)
    with pytest.raises(APIUserAbortError):
        await on(lambda c: c.bash.run(command, cwd=str(tmp_path), timeout=600, options=options))
    await asyncio.to_thread(waiter.join)
    (pid,) = pids
    await eventually_async(
        lambda: not alive(pid),
        timeout=15,
        interval=0.02,
        what=f"the command's child {pid} exiting",
    )
