"""The bash tools' bounds: where commands may start, what the model is told, how long
processes live once nobody holds the tools, and what a listener costs a command."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest
from tests.support.bash_tools import alive, ends, ok

from heron import SimpleAgent
from heron.testing import ScriptedProvider, call
from heron.tools import (
    BashEvent,
    BashExited,
    BashInteraction,
    BashOutput,
    BashStarted,
    LocalToolClient,
    Tool,
    bash_tools,
)


class TestCwdStaysInsideTheRoot:
    @pytest.mark.parametrize("cwd", ["/", "..", "../..", "sub/../..", "~"])
    async def test_a_cwd_outside_is_refused(self, tmp_path: Path, cwd: str) -> None:
        root = tmp_path / "root"
        (root / "sub").mkdir(parents=True)
        async with bash_tools(root) as tools:
            client = LocalToolClient(tools)
            for name in ("bash-run", "bash-start"):
                result = await client.call_tool(name, {"command": "touch ran", "cwd": cwd})
                assert result.is_error, result.text
                assert f"cwd {cwd!r}" in result.text and f"is outside {root}" in result.text
            assert (await ok(client, "bash-list")).text == "no background processes"
        assert not (tmp_path / "ran").exists() and not (root / "ran").exists()

    async def test_a_symlink_leading_out_is_refused(self, tmp_path: Path) -> None:
        root, outside = tmp_path / "root", tmp_path / "outside"
        root.mkdir()
        outside.mkdir()
        (root / "out").symlink_to(outside)
        async with bash_tools(root) as tools:
            result = await LocalToolClient(tools).call_tool(
                "bash-run", {"command": "pwd", "cwd": "out"}
            )
        assert result.is_error and f"({outside}) is outside {root}" in result.text

    async def test_directories_inside_are_fine_however_named(self, tmp_path: Path) -> None:
        (tmp_path / "a" / "b").mkdir(parents=True)
        (tmp_path / "link").symlink_to(tmp_path / "a")  # a symlink that stays inside
        async with bash_tools(tmp_path) as tools:
            client = LocalToolClient(tools)
            for cwd, expected in [
                ("a/b/..", tmp_path / "a"),
                (str(tmp_path / "a" / "b"), tmp_path / "a" / "b"),
                ("link", tmp_path / "a"),
                (".", tmp_path),
            ]:
                result = await ok(client, "bash-run", command="pwd -P", cwd=cwd)
                assert result.structured["stdout"] == f"{expected}\n"

    def test_the_descriptions_say_commands_are_not_sandboxed(self, tmp_path: Path) -> None:
        tools = {t.name: t for t in bash_tools(tmp_path)}
        for name in ("bash-run", "bash-start"):
            assert "not sandboxed" in tools[name].description
            assert str(tmp_path.resolve()) in tools[name].description


class TestTheModelIsToldTheTruth:
    @pytest.mark.parametrize("limit", [30_000, 1_001])
    async def test_bash_run_keeps_what_its_description_says(
        self, tmp_path: Path, limit: int
    ) -> None:
        async with bash_tools(tmp_path, output_limit=limit) as tools:
            (run,) = [t for t in tools if t.name == "bash-run"]
            head, tail = limit - limit // 2, limit // 2
            said = f"keeps its first {head:,} and its last {tail:,} characters"
            assert said in run.description
            result = await ok(LocalToolClient(tools), "bash-run", command="seq 1 100000")
        expected = "".join(f"{n}\n" for n in range(1, 100_001))
        cut = result.structured["stdout_cut"]
        assert cut == len(expected) - limit
        assert result.structured["stdout"] == (
            expected[:head] + f"\n[... {cut:,} characters cut ...]\n" + expected[-tail:]
        )


class TestProcessesDieWithTheirTools:
    async def test_a_background_process_dies_when_nobody_holds_the_tools(
        self, tmp_path: Path
    ) -> None:
        pids: list[int] = []
        exited: asyncio.Queue[BashExited] = asyncio.Queue()

        def on_event(event: BashEvent) -> None:
            if isinstance(event, BashStarted):
                pids.append(event.pid)
            elif isinstance(event, BashExited):
                exited.put_nowait(event)

        interaction = BashInteraction()
        interaction.subscribe(on_event)
        # As a skill makes them: a plain list of the tools, the BashTools thrown away.
        tools: list[Tool] = [*bash_tools(tmp_path, interaction=interaction)]
        provider = ScriptedProvider([call("bash-start", command="sleep 77"), "Started."])
        agent = SimpleAgent(provider=provider, tools=tools)
        result = await agent.run("Start a long job")
        assert result.reply == "Started." and not result.tool_calls[0].is_error
        (pid,) = pids
        assert alive(pid)
        del agent, tools
        gc.collect()
        assert await ends(pid)  # while the event loop still runs
        end = await asyncio.wait_for(exited.get(), 10)  # and the exit is still published
        assert end.signal == "SIGKILL"

    async def test_the_tools_in_use_keep_their_processes(self, tmp_path: Path) -> None:
        tools: list[Tool] = [*bash_tools(tmp_path)]
        client = LocalToolClient(tools)
        pid = (await ok(client, "bash-start", command="sleep 77")).structured["pid"]
        gc.collect()
        assert alive(pid)
        assert (await ok(client, "bash-kill", id="bash-1")).structured["running"] is False


class TestListenerCost:
    async def test_lines_come_a_read_at_a_time_not_a_line_at_a_time(self, tmp_path: Path) -> None:
        events: list[BashOutput] = []

        def collect(event: BashEvent) -> None:
            if isinstance(event, BashOutput):
                events.append(event)

        async with bash_tools(tmp_path) as tools:
            tools.interaction.subscribe(collect)
            await ok(LocalToolClient(tools), "bash-run", command="seq 1 200000")
        lines = [line for event in events for line in event.lines]
        assert lines == [str(n) for n in range(1, 200_001)]
        # 1.3 MB read at most 64 KiB at a time: a few dozen events, not 200,000.
        assert len(events) <= 200
        assert all(event.lines for event in events)
        assert events[0].line == "\n".join(events[0].lines)
