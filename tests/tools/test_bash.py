"""The bash tools against real subprocesses: exits, timeouts, caps, background processes, events."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.bash_tools import alive, ends, ok
from tests.support.polling import eventually_async

from heron import SimpleAgent, UserError
from heron.testing import ScriptedProvider, call
from heron.tools import (
    BashEvent,
    BashExited,
    BashInteraction,
    BashOutput,
    BashStarted,
    BashTools,
    LocalToolClient,
    MemoryStorage,
    bash_tools,
)

NAMES = ["bash-run", "bash-start", "bash-read", "bash-wait", "bash-kill", "bash-list"]


def written(path: Path) -> str | None:
    """The text of ``path`` once a command has finished writing it (one line), else None."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return text.strip() if text.endswith("\n") else None


async def wait_for_file(path: Path, seconds: float = 10.0) -> str:
    """The text of ``path`` once a command has written it (polled, with a deadline)."""
    text: str = await eventually_async(
        lambda: written(path), timeout=seconds, interval=0.01, what=f"{path} being written"
    )
    return text


@pytest.fixture
async def tools(tmp_path: Path) -> AsyncIterator[BashTools]:
    async with bash_tools(tmp_path, kill_grace=0.5) as made:
        yield made


@pytest.fixture
def client(tools: BashTools) -> LocalToolClient:
    return LocalToolClient(tools)


class TestFactory:
    def test_makes_the_six_tools_in_order(self, tools: BashTools) -> None:
        assert [t.name for t in tools] == NAMES
        assert all(t.description and t.input_schema["type"] == "object" for t in tools)

    def test_cwd_defaults_to_the_current_directory(self) -> None:
        assert bash_tools().cwd == Path.cwd().resolve()

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"cwd": "/no/such/dir"}, "does not exist"),
            ({"timeout": 0}, "timeout must be a positive"),
            ({"timeout": 700}, "exceeds max_timeout"),
            ({"output_limit": 10}, "output_limit"),
            ({"kill_grace": -1}, "kill_grace"),
            ({"max_processes": 0}, "max_processes"),
            ({"shell": "/no/bash"}, "install bash"),
            ({"interaction": object()}, "BashInteraction"),
        ],
    )
    def test_bad_settings_are_refused(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(UserError, match=message):
            bash_tools(**kwargs)

    def test_an_interaction_is_made_when_none_is_given(self) -> None:
        mine = BashInteraction()
        assert bash_tools(interaction=mine).interaction is mine
        assert isinstance(bash_tools().interaction, BashInteraction)


class TestRun:
    async def test_exit_code_stdout_and_stderr(self, client: LocalToolClient) -> None:
        result = await ok(client, "bash-run", command="echo out; echo err >&2; exit 3")
        assert result.structured["exit_code"] == 3
        assert result.structured["stdout"] == "out\n"
        assert result.structured["stderr"] == "err\n"
        assert result.structured["timed_out"] is False
        assert result.text.startswith("exit code 3 after")
        assert "stdout:\nout" in result.text and "stderr:\nerr" in result.text

    async def test_runs_in_the_tools_cwd_and_resolves_a_relative_one(
        self, client: LocalToolClient, tmp_path: Path
    ) -> None:
        (tmp_path / "sub").mkdir()
        here = await ok(client, "bash-run", command="pwd")
        assert here.structured["stdout"] == f"{tmp_path}\n"
        sub = await ok(client, "bash-run", command="pwd", cwd="sub")
        assert sub.structured["stdout"] == f"{tmp_path / 'sub'}\n"
        absolute = await ok(client, "bash-run", command="pwd", cwd=str(tmp_path / "sub"))
        assert absolute.structured["stdout"] == f"{tmp_path / 'sub'}\n"

    async def test_a_missing_cwd_is_an_error_result(self, client: LocalToolClient) -> None:
        result = await client.call_tool("bash-run", {"command": "pwd", "cwd": "nowhere"})
        assert result.is_error and "'nowhere'" in result.text and "does not exist" in result.text

    async def test_stdin_is_closed(self, client: LocalToolClient) -> None:
        # Would hang until the timeout if stdin were inherited.
        result = await ok(client, "bash-run", command="cat; read line; echo $?", timeout=10)
        assert result.structured["stdout"] == "1\n"

    async def test_an_empty_command_and_bad_arguments_are_refused(
        self, client: LocalToolClient
    ) -> None:
        empty = await client.call_tool("bash-run", {"command": "  "})
        assert empty.is_error and "empty" in empty.text
        too_long = await client.call_tool("bash-run", {"command": "true", "timeout": 601})
        assert too_long.is_error and "600" in too_long.text
        unknown = await client.call_tool("bash-run", {"command": "true", "shell": "zsh"})
        assert unknown.is_error

    async def test_the_environment_is_inherited_plus_extra_variables(self, tmp_path: Path) -> None:
        os.environ["HERON_TEST_INHERITED"] = "yes"
        try:
            async with bash_tools(tmp_path, env={"HERON_EXTRA": "1 2"}) as tools:
                result = await ok(
                    LocalToolClient(tools),
                    "bash-run",
                    command='echo "$HERON_TEST_INHERITED/$HERON_EXTRA"',
                )
        finally:
            del os.environ["HERON_TEST_INHERITED"]
        assert result.structured["stdout"] == "yes/1 2\n"

    async def test_a_base_environment_replaces_the_inherited_one(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HERON_TEST_SECRET", "hidden")
        base = {"PATH": os.environ["PATH"], "HERON_BASE": "b"}
        async with bash_tools(tmp_path, base_env=base, env={"HERON_EXTRA": "e"}) as tools:
            result = await ok(
                LocalToolClient(tools),
                "bash-run",
                command='echo "${HERON_TEST_SECRET:-unset}/$HERON_BASE/$HERON_EXTRA"',
            )
        assert result.structured["stdout"] == "unset/b/e\n"

    async def test_undecodable_bytes_are_replaced(self, client: LocalToolClient) -> None:
        result = await ok(client, "bash-run", command=r"printf 'caf\xc3\xa9 \xff\n'")
        assert result.structured["stdout"] == "café \ufffd\n"


class TestTimeout:
    async def test_kills_the_command_and_its_children_and_keeps_the_output(
        self, client: LocalToolClient, tmp_path: Path
    ) -> None:
        command = "echo before; (sleep 30; echo late > late.txt) & echo $! > child.pid; wait"
        started = time.monotonic()
        # Long enough for a loaded machine to reach `wait`, short enough for a test.
        result = await ok(client, "bash-run", command=command, timeout=1.5)
        assert time.monotonic() - started < 10
        assert result.structured["timed_out"] is True
        assert result.structured["exit_code"] is None
        assert result.structured["signal"] == "SIGTERM"
        assert result.structured["stdout"] == "before\n"
        assert result.text.startswith("timed out after 1.5 s")
        child = int((tmp_path / "child.pid").read_text())
        assert not alive(child)
        assert not (tmp_path / "late.txt").exists()

    async def test_a_group_ignoring_sigterm_gets_sigkill(
        self, client: LocalToolClient, tmp_path: Path
    ) -> None:
        command = "trap '' TERM; echo $$ > shell.pid; while true; do sleep 0.05; done"
        result = await ok(client, "bash-run", command=command, timeout=1)
        assert result.structured["timed_out"] is True
        assert result.structured["signal"] == "SIGKILL"
        assert not alive(int((tmp_path / "shell.pid").read_text()))

    async def test_processes_left_in_the_background_are_stopped(
        self, client: LocalToolClient, tmp_path: Path
    ) -> None:
        # The sleep holds stdout open: without stopping it the call would last 30 s.
        result = await ok(client, "bash-run", command="sleep 30 & echo $! > bg.pid; echo ok")
        assert result.structured["exit_code"] == 0
        assert result.structured["stdout"] == "ok\n"
        assert "use bash-start" in result.text
        assert not alive(int((tmp_path / "bg.pid").read_text()))

    async def test_cancelling_the_call_kills_the_command(self, tools: BashTools) -> None:
        started: asyncio.Queue[int] = asyncio.Queue()
        exited: asyncio.Queue[BashExited] = asyncio.Queue()

        def on_event(event: BashEvent) -> None:
            if isinstance(event, BashStarted):
                started.put_nowait(event.pid)
            elif isinstance(event, BashExited):
                exited.put_nowait(event)

        tools.interaction.subscribe(on_event)
        call_task = asyncio.ensure_future(
            LocalToolClient(tools).call_tool("bash-run", {"command": "sleep 30"})
        )
        pid = await asyncio.wait_for(started.get(), 10)
        call_task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call_task
        assert await ends(pid)  # SIGKILL was sent without waiting: the kernel ends it soon
        # Its end is still published, once the process is reaped.
        end = await asyncio.wait_for(exited.get(), 10)
        assert (end.signal, end.timed_out, end.process_id) == ("SIGKILL", False, "run-1")


class TestOutputCap:
    async def test_keeps_head_and_tail_and_says_how_much_was_cut(self, tmp_path: Path) -> None:
        expected = "".join(f"{n}\n" for n in range(1, 20_001))
        async with bash_tools(tmp_path, output_limit=1_000) as tools:
            result = await ok(LocalToolClient(tools), "bash-run", command="seq 1 20000")
        out = result.structured["stdout"]
        cut = result.structured["stdout_cut"]
        assert cut == len(expected) - 1_000
        head, marker, tail = out.partition(f"\n[... {cut:,} characters cut ...]\n")
        assert marker
        assert head == expected[:500] and tail == expected[-500:]
        assert result.structured["stderr_cut"] == 0

    async def test_output_under_the_cap_is_whole(self, client: LocalToolClient) -> None:
        result = await ok(client, "bash-run", command="seq 1 1000")
        assert result.structured["stdout"] == "".join(f"{n}\n" for n in range(1, 1001))
        assert result.structured["stdout_cut"] == 0


class TestEvents:
    async def test_started_lines_and_exited_in_order(self, tools: BashTools) -> None:
        events: list[BashEvent] = []
        tools.interaction.subscribe(events.append)
        command = r"printf 'one\r\ntwo\n'; echo oops >&2; printf 'no newline'; exit 4"
        await ok(LocalToolClient(tools), "bash-run", command=command)
        assert isinstance(events[0], BashStarted) and not events[0].background
        assert events[0].command == command and events[0].cwd == str(tools.cwd)
        lines = [(e.stream, line) for e in events if isinstance(e, BashOutput) for line in e.lines]
        assert [line for line in lines if line[0] == "stdout"] == [
            ("stdout", "one"),
            ("stdout", "two"),
            ("stdout", "no newline"),
        ]
        assert ("stderr", "oops") in lines
        last = events[-1]
        assert isinstance(last, BashExited)
        assert (last.exit_code, last.signal, last.timed_out) == (4, None, False)
        assert {e.process_id for e in events} == {events[0].process_id}

    async def test_a_lifecycle_listener_gets_sizes_without_lines(self, tools: BashTools) -> None:
        # output=False: starts and exits only; the size is counted as output is read,
        # and no listener wanting lines means the tools cut none.
        events: list[BashEvent] = []
        unsubscribe = tools.interaction.subscribe(events.append, output=False)
        assert tools.interaction.has_listeners and not tools.interaction.wants_output
        command = r"printf 'one\ntwo\n'; printf 'xyz' >&2"
        await ok(LocalToolClient(tools), "bash-run", command=command)
        started, exited = events
        assert isinstance(started, BashStarted) and isinstance(exited, BashExited)
        assert (started.size.lines, started.size.chars) == (2, 9)
        lines: list[BashEvent] = []
        tools.interaction.subscribe(lines.append)
        assert tools.interaction.wants_output
        unsubscribe()
        await ok(LocalToolClient(tools), "bash-run", command="echo hi")
        assert [e.lines for e in lines if isinstance(e, BashOutput)] == [("hi",)]
        assert len(events) == 2  # unsubscribed

    async def test_lines_arrive_while_the_command_still_runs(self, tools: BashTools) -> None:
        # The command waits for a file that only the listener creates on its first line:
        # were lines delivered at exit, it would time out.
        go = tools.cwd / "go"

        def on_event(event: BashEvent) -> None:
            if isinstance(event, BashOutput) and "ready" in event.lines:
                go.touch()

        tools.interaction.subscribe(on_event)
        command = "echo ready; while [ ! -e go ]; do sleep 0.01; done; echo done"
        result = await ok(LocalToolClient(tools), "bash-run", command=command, timeout=10)
        assert result.structured["timed_out"] is False
        assert result.structured["stdout"] == "ready\ndone\n"

    async def test_the_start_reaches_a_slow_listener_before_any_line(
        self, tools: BashTools
    ) -> None:
        events: list[BashEvent] = []

        async def slow(event: BashEvent) -> None:
            if isinstance(event, BashStarted):
                # Give the output every chance to overtake the start event.
                for _ in range(20):
                    await asyncio.sleep(0.005)
            events.append(event)

        tools.interaction.subscribe(slow)
        await ok(LocalToolClient(tools), "bash-run", command="echo quick")
        assert [type(e) for e in events] == [BashStarted, BashOutput, BashExited]

    async def test_a_slow_listener_gets_every_line_and_loses_no_output(
        self, tmp_path: Path
    ) -> None:
        heard: list[str] = []

        async def slow(event: BashEvent) -> None:
            if isinstance(event, BashOutput):
                # Slower than the command, which blocks on the full pipe meanwhile: the
                # end still comes after the shell exited, and must not be cut short.
                await asyncio.sleep(0.15)
                heard.extend(event.lines)

        expected = [str(n) for n in range(1, 60_001)]
        async with bash_tools(tmp_path, output_limit=1_000_000) as tools:
            tools.interaction.subscribe(slow)
            result = await ok(LocalToolClient(tools), "bash-run", command="seq 1 60000")
        assert heard == expected
        assert result.structured["stdout"] == "".join(f"{n}\n" for n in expected)
        assert "note:" not in result.text

    async def test_a_listener_arriving_mid_line_gets_the_whole_line(
        self, client: LocalToolClient, tools: BashTools
    ) -> None:
        command = "printf part; while [ ! -e go ]; do sleep 0.01; done; printf 'ial\\nnext\\n'"
        process_id = (await ok(client, "bash-start", command=command)).structured["id"]
        seen = ""

        async def read_more() -> str:
            nonlocal seen
            seen += (await ok(client, "bash-read", id=process_id)).structured["stdout"]
            return seen

        await eventually_async(read_more, lambda got: got == "part", timeout=10, interval=0.01)
        lines: list[str] = []
        tools.interaction.subscribe(
            lambda e: lines.extend(e.lines) if isinstance(e, BashOutput) else None
        )
        (tools.cwd / "go").touch()
        await ok(client, "bash-wait", id=process_id, timeout=10)
        assert lines == ["partial", "next"]

    async def test_an_endless_line_comes_out_in_pieces(self, tools: BashTools) -> None:
        lines: list[str] = []
        tools.interaction.subscribe(
            lambda e: lines.extend(e.lines) if isinstance(e, BashOutput) else None
        )
        command = "head -c 200000 /dev/zero | tr '\\0' x; echo; echo after"
        await ok(LocalToolClient(tools), "bash-run", command=command)
        assert [len(line) for line in lines] == [65_536, 65_536, 65_536, 3_392, 5]
        assert set("".join(lines[:4])) == {"x"} and lines[4] == "after"

    async def test_async_and_failing_listeners_do_not_break_the_tool(
        self, tools: BashTools, caplog: pytest.LogCaptureFixture
    ) -> None:
        heard: list[str] = []

        async def slow(event: BashEvent) -> None:
            await asyncio.sleep(0)
            if isinstance(event, BashOutput):
                heard.extend(event.lines)

        def broken(event: BashEvent) -> None:
            raise RuntimeError("UI went away")

        tools.interaction.subscribe(broken)
        tools.interaction.subscribe(slow)
        result = await ok(LocalToolClient(tools), "bash-run", command="echo a; echo b")
        assert result.structured["stdout"] == "a\nb\n"
        assert heard == ["a", "b"]
        assert any(r.exc_info and "UI went away" in str(r.exc_info[1]) for r in caplog.records)


class TestBackground:
    async def test_start_read_wait(self, client: LocalToolClient, tools: BashTools) -> None:
        go = tools.cwd / "go"
        command = "echo first; while [ ! -e go ]; do sleep 0.01; done; echo second >&2; exit 5"
        started = await ok(client, "bash-start", command=command)
        process_id = started.structured["id"]
        assert process_id == "bash-1" and alive(started.structured["pid"])
        assert "bash-read" in started.text

        # Poll the tool until the first line shows: it must come while the process runs.
        seen = ""
        running: list[bool] = []

        async def read_more() -> str:
            nonlocal seen
            read = await ok(client, "bash-read", id=process_id)
            running.append(read.structured["running"])
            seen += read.structured["stdout"]
            return seen

        await eventually_async(read_more, lambda got: "first" in got, timeout=10, interval=0.01)
        assert all(running)
        assert seen == "first\n"
        again = await ok(client, "bash-read", id=process_id)
        assert again.structured["stdout"] == "" and "stdout: (nothing new)" in again.text

        still = await ok(client, "bash-wait", id=process_id, timeout=0.1)
        assert still.structured["running"] is True and "still running" in still.text

        go.touch()
        done = await ok(client, "bash-wait", id=process_id, timeout=10)
        assert done.structured["running"] is False
        assert done.structured["exit_code"] == 5
        assert done.structured["stderr"] == "second\n"
        assert "exited with code 5" in done.text

    async def test_kill_stops_the_whole_group(
        self, client: LocalToolClient, tmp_path: Path
    ) -> None:
        command = "sleep 60 & echo $! > child.pid; echo up; wait"
        process_id = (await ok(client, "bash-start", command=command)).structured["id"]
        child = int(await wait_for_file(tmp_path / "child.pid"))
        assert alive(child)
        killed = await ok(client, "bash-kill", id=process_id)
        assert killed.structured["running"] is False
        assert killed.structured["signal"] == "SIGTERM"
        assert "(bash-kill)" in killed.text
        assert not alive(child)
        listed = await ok(client, "bash-list")
        assert listed.structured[0]["id"] == process_id
        assert listed.structured[0]["status"].startswith("killed by SIGTERM (bash-kill)")

    async def test_a_chatty_process_keeps_only_the_latest_output(self, tmp_path: Path) -> None:
        expected = "".join(f"{n}\n" for n in range(1, 50_001))
        async with bash_tools(tmp_path, output_limit=1_000) as tools:
            client = LocalToolClient(tools)
            process_id = (await ok(client, "bash-start", command="seq 1 50000")).structured["id"]
            done = await ok(client, "bash-wait", id=process_id, timeout=10)
        assert done.structured["exit_code"] == 0
        dropped = done.structured["stdout_dropped"]
        assert dropped == len(expected) - 1_000
        assert done.structured["stdout"] == (
            f"[... {dropped:,} earlier characters dropped ...]\n" + expected[-1_000:]
        )

    async def test_list_and_unknown_ids(self, client: LocalToolClient) -> None:
        assert (await ok(client, "bash-list")).text == "no background processes"
        missing = await client.call_tool("bash-read", {"id": "bash-9"})
        assert missing.is_error and "none has been started" in missing.text
        await ok(client, "bash-start", command="sleep 30")
        await ok(client, "bash-start", command="true")
        listed = await ok(client, "bash-list")
        assert [row["id"] for row in listed.structured] == ["bash-1", "bash-2"]
        assert listed.structured[0]["status"].startswith("running")
        assert listed.structured[0]["running"] is True
        await ok(client, "bash-wait", id="bash-2")
        second = (await ok(client, "bash-list")).structured[1]
        assert (second["running"], second["exit_code"], second["signal"]) == (False, 0, None)
        assert second["command"] == "true" and second["unread"] == 0
        for name in ("bash-read", "bash-wait", "bash-kill"):
            result = await client.call_tool(name, {"id": "bash-9"})
            assert result.is_error and "known: bash-1, bash-2" in result.text

    async def test_processes_are_scoped_by_environment(self, tools: BashTools) -> None:
        mine, theirs = LocalToolClient(tools, env_id="a"), LocalToolClient(tools, env_id="b")
        process_id = (await ok(mine, "bash-start", command="sleep 30")).structured["id"]
        other = await theirs.call_tool("bash-kill", {"id": process_id})
        assert other.is_error and "none has been started" in other.text
        assert (await ok(theirs, "bash-list")).structured == []
        assert (await ok(mine, "bash-read", id=process_id)).structured["running"] is True

    async def test_ids_continue_from_the_storage(self, tmp_path: Path) -> None:
        storage = MemoryStorage()
        for expected in ("bash-1", "bash-2"):
            async with bash_tools(tmp_path) as tools:
                client = LocalToolClient(tools, storage=storage)
                started = await ok(client, "bash-start", command="true")
                assert started.structured["id"] == expected

    async def test_the_number_running_at_once_is_capped(self, tmp_path: Path) -> None:
        async with bash_tools(tmp_path, max_processes=1) as tools:
            client = LocalToolClient(tools)
            first = (await ok(client, "bash-start", command="sleep 30")).structured["id"]
            refused = await client.call_tool("bash-start", {"command": "sleep 30"})
            assert refused.is_error and "bash-kill" in refused.text and first in refused.text
            await ok(client, "bash-kill", id=first)
            await ok(client, "bash-start", command="sleep 30")

    async def test_events_for_a_background_process(self, tools: BashTools) -> None:
        exited = asyncio.Event()
        events: list[BashEvent] = []

        def on_event(event: BashEvent) -> None:
            events.append(event)
            if isinstance(event, BashExited):
                exited.set()

        tools.interaction.subscribe(on_event)
        client = LocalToolClient(tools)
        process_id = (await ok(client, "bash-start", command="echo hi; exit 2")).structured["id"]
        await asyncio.wait_for(exited.wait(), 10)
        assert [type(e) for e in events] == [BashStarted, BashOutput, BashExited]
        assert all(e.process_id == process_id for e in events)
        assert isinstance(events[0], BashStarted) and events[0].background
        assert isinstance(events[2], BashExited) and events[2].exit_code == 2


class TestCleanup:
    async def test_aclose_kills_what_is_left(self, tmp_path: Path) -> None:
        tools = bash_tools(tmp_path, kill_grace=0.5)
        client = LocalToolClient(tools)
        first = await ok(client, "bash-start", command="sleep 60 & echo $! > child.pid; wait")
        second = await ok(client, "bash-start", command="trap '' TERM; sleep 60")
        child = int(await wait_for_file(tmp_path / "child.pid"))
        pids = [first.structured["pid"], second.structured["pid"], child]
        assert all(alive(pid) for pid in pids)
        await tools.aclose()
        assert not any(alive(pid) for pid in pids)
        assert (await ok(client, "bash-list")).text == "no background processes"
        # Still usable afterwards.
        assert (await ok(client, "bash-run", command="echo again")).structured["exit_code"] == 0

    async def test_async_with_closes(self, tmp_path: Path) -> None:
        async with bash_tools(tmp_path) as tools:
            pid = (await ok(LocalToolClient(tools), "bash-start", command="sleep 60")).structured[
                "pid"
            ]
        assert not alive(pid)


async def test_an_agent_runs_a_command(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [call("bash-run", command="echo hello > greeting.txt; cat greeting.txt"), "Done."]
    )
    async with bash_tools(tmp_path) as tools:
        result = await SimpleAgent(provider=provider, tools=tools).run("Write a greeting")
    assert result.reply == "Done."
    record = result.tool_calls[0]
    assert record.name == "bash-run" and not record.is_error
    assert "exit code 0" in record.result and "hello" in record.result
    assert (tmp_path / "greeting.txt").read_text() == "hello\n"
