"""FileStorage, scoped storage, and the output filter (down to what an agent's model sees)."""

from __future__ import annotations

import asyncio
import errno
import os
import re
import stat
from pathlib import Path
from types import ModuleType

import pytest

from heron import BaseAgent, ToolResult, UserError
from heron.mcp import (
    FILTERED_OUTPUT,
    FileStorage,
    IdGenerator,
    InProcessConnection,
    MCPClient,
    MCPServer,
    MemoryStorage,
    OutputFilter,
    ScopedStorage,
    Storage,
)
from heron.testing import ScriptedProvider, call


async def test_file_storage_round_trips_and_survives_a_new_instance(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "state")
    assert not (tmp_path / "state").exists()  # created on the first write only
    assert await storage.get("a/b") is None
    await storage.set("a/b", "one")
    await storage.set("..", "dots")
    await storage.set("ünï/cödé", "two")
    await storage.set("a/b", "three")
    again = FileStorage(tmp_path / "state")
    assert await again.get("a/b") == "three"
    assert await again.get("..") == "dots"
    assert await again.get("ünï/cödé") == "two"
    # One file per key, all inside the folder, no temporary files left.
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == [
        "%2E.",
        "%C3%BCn%C3%AF%2Fc%C3%B6d%C3%A9",
        "a%2Fb",
    ]


async def test_file_storage_defaults_to_a_random_folder_under_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first, second = FileStorage(), FileStorage()
    assert first.path.parent == second.path.parent == Path("data")
    assert first.path != second.path
    await first.set("k", "v")
    assert (tmp_path / first.path / "k").read_text() == "v"


async def test_file_storage_writes_are_atomic(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    big = "x" * 200_000
    await storage.set("k", "old")
    # Readers racing a writer see the old value or the new one, never a part.
    seen: set[int] = set()

    async def read_many() -> None:
        for _ in range(50):
            value = await storage.get("k")
            assert value is not None
            seen.add(len(value))

    await asyncio.gather(storage.set("k", big), read_many())
    assert seen <= {3, len(big)}
    assert os.listdir(tmp_path) == ["k"]


async def test_a_write_failing_midway_keeps_the_old_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(tmp_path)
    await storage.set("k", "old")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    # The new value is written out, then flushing it fails: the rename must not happen.
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        await storage.set("k", "new")
    monkeypatch.undo()
    assert await storage.get("k") == "old"
    assert os.listdir(tmp_path) == ["k"]  # no temporary file left behind


async def test_the_storage_folder_is_private(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "state" / "inner")
    await storage.set("k", "v")
    assert stat.S_IMODE((tmp_path / "state" / "inner").stat().st_mode) == 0o700


async def test_file_storage_refuses_bad_keys_and_values(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    with pytest.raises(UserError, match="non-empty strings"):
        await storage.get("")
    with pytest.raises(UserError, match="too long"):
        await storage.set("k" * 300, "v")
    with pytest.raises(UserError, match="values are strings"):
        await storage.set("k", 3)  # type: ignore[arg-type]
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="not a folder"):
        FileStorage(tmp_path / "file")


@pytest.fixture(params=["memory", "file", "scoped"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """Each storage that can delete and list keys."""
    if request.param == "memory":
        return MemoryStorage()
    if request.param == "file":
        return FileStorage(tmp_path / "state")
    return ScopedStorage(MemoryStorage(), "env/x/")


async def test_delete_and_keys_by_prefix(storage: Storage) -> None:
    assert await storage.keys() == []
    for key in ("notes/b", "notes/a", "todo/1", "n%te"):
        await storage.set(key, key.upper())
    assert await storage.keys("notes/") == ["notes/a", "notes/b"]
    assert await storage.keys() == ["n%te", "notes/a", "notes/b", "todo/1"]
    await storage.delete("notes/a")
    await storage.delete("never-there")
    assert await storage.keys("no") == ["notes/b"]
    assert await storage.get("notes/a") is None
    assert await storage.get("notes/b") == "NOTES/B"


async def test_a_storage_with_only_get_and_set_still_works_and_says_what_it_lacks() -> None:
    class Minimal(Storage):
        async def get(self, key: str) -> str | None:
            return None

        async def set(self, key: str, value: str) -> None:
            return None

    minimal = Minimal()
    await minimal.set("k", "v")
    with pytest.raises(NotImplementedError, match="Minimal cannot delete keys"):
        await minimal.delete("k")
    with pytest.raises(NotImplementedError, match="Minimal cannot list keys"):
        await minimal.keys()


async def test_scoped_storage_and_ids_stay_inside_their_prefix() -> None:
    base = MemoryStorage()
    a, b = ScopedStorage(base, "env/a/"), ScopedStorage(base, "env/b/")
    await a.set("k", "1")
    assert await b.get("k") is None
    assert await base.get("env/a/k") == "1"
    ids = IdGenerator(a, "a")
    assert [await ids.next(), await ids.next("img")] == ["ref-1", "img-1"]


async def test_env_ids_with_slashes_never_share_state(served: ModuleType) -> None:
    storage = MemoryStorage()
    connection = InProcessConnection()
    async with MCPServer(connection, storage) as server:
        server.register_tool(served.remember)
        async with MCPClient("a/b", connection, MemoryStorage()) as slash:
            await slash.call_tool("remember", {"fact": "x"})
        async with MCPClient("a", connection, MemoryStorage()) as plain:
            assert (await plain.call_tool("remember", {"fact": "y"})).text == "a ref-1: y"
    assert await storage.get("env/a%2Fb/facts") == "x"
    assert await storage.get("env/a/facts") == "y"


async def test_the_server_keeps_a_bounded_number_of_environment_contexts(
    served: ModuleType,
) -> None:
    storage = MemoryStorage()
    server = MCPServer(InProcessConnection(), storage, max_environments=2)
    first = server.context("a")
    server.context("b")
    assert server.context("a") is first  # recently used: kept
    server.context("c")  # evicts "b", the least recently used
    assert server.context("a") is first
    assert set(server._contexts) == {"a", "c"}
    # A rebuilt context carries on from the state in storage.
    await served.remember.run({"fact": "x"}, server.context("b"))
    server.context("a")
    server.context("c")
    reply = await served.remember.run({"fact": "y"}, server.context("b"))
    assert reply.text == "b ref-2: x,y"
    with pytest.raises(UserError, match="max_environments"):
        MCPServer(InProcessConnection(), storage, max_environments=0)


def test_filter_replaces_strings_and_patterns_in_nested_values() -> None:
    secret = "hunter2"
    f = OutputFilter([secret, re.compile(r"sk-[A-Za-z0-9]{20,}")])
    key = "sk-" + "A" * 24
    value = {"pw": f"the password is {secret}", "list": [key, ("x", secret)], secret: 1}
    assert f.filter(value) == {
        "pw": f"the password is {FILTERED_OUTPUT}",
        "list": [FILTERED_OUTPUT, ("x", FILTERED_OUTPUT)],
        FILTERED_OUTPUT: 1,
    }
    result = f.filter(ToolResult.of_text(f"{secret}{secret} and sk-short"))
    assert result.text == f"{FILTERED_OUTPUT}{FILTERED_OUTPUT} and sk-short"


def test_overlapping_secrets_leave_no_piece_behind() -> None:
    f = OutputFilter(["sk-abc", "sk-abc123SECRET", re.compile(r"123S\w+"), "xyz"])
    assert f.filter_text("a sk-abc123SECRET b sk-abc c") == (
        f"a {FILTERED_OUTPUT} b {FILTERED_OUTPUT} c"
    )
    # Overlapping matches of different secrets hide their union; separate ones stay apart.
    assert OutputFilter(["abcd", "cdef"]).filter_text("1abcdef2") == f"1{FILTERED_OUTPUT}2"
    assert f.filter_text("xyzxyz.") == f"{FILTERED_OUTPUT}{FILTERED_OUTPUT}."
    assert f.filter_text("clean") == "clean"


def test_filter_refuses_what_would_redact_everything_or_nothing() -> None:
    with pytest.raises(UserError, match="empty string"):
        OutputFilter([""])
    with pytest.raises(UserError, match="matches the empty string"):
        OutputFilter([re.compile(r"x*")])
    with pytest.raises(UserError, match="list of strings"):
        OutputFilter("secret")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="not 3"):
        OutputFilter([3])  # type: ignore[list-item]


async def test_the_model_never_sees_a_secret_a_tool_read_from_a_file(
    served: ModuleType, tmp_path: Path
) -> None:
    secret = "sk-live-0123456789abcdefghij"
    env_file = tmp_path / ".env"
    env_file.write_text(f"API_KEY={secret}\nDEBUG=1\n")
    connection = InProcessConnection()
    provider = ScriptedProvider([call("read-file", path=str(env_file)), "I read it."])
    async with MCPServer(connection, MemoryStorage()) as server:
        server.register_tool(served.read_file)
        client = MCPClient(
            "me",
            connection,
            MemoryStorage(),
            output_filter=OutputFilter([re.compile(r"sk-live-[A-Za-z0-9]+")]),
        )
        async with client:
            result = await BaseAgent(provider=provider, tool_client=client).run("read .env")
    assert result.tool_calls[0].result == f"API_KEY={FILTERED_OUTPUT}\nDEBUG=1\n"
    everything_sent = repr(provider.requests)
    assert secret not in everything_sent
    assert FILTERED_OUTPUT in everything_sent
