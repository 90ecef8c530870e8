"""The catalog skills: what they tell the model, and the tools they bring (each once)."""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from heron import SimpleAgent, Skill, UserError
from heron.skills import (
    backend_security,
    big_task,
    code_verification,
    long_task_efficiency,
    node_backend,
    planner,
    python_backend,
    react_frontend,
    research,
    shopping,
    ui_ux_design,
    web_end_to_end_test,
)
from heron.testing import ScriptedProvider, call
from heron.tools import BashEvent, BashOutput
from heron.tools.bash import bash_tools
from heron.tools.browser import browser_tools
from heron.tools.fs import filesystem_tools
from heron.tools.todo import todo_tools

FS = {"fs-read-file", "fs-write-file", "fs-list-directory", "fs-edit-file", "fs-glob", "fs-grep"}
BASH = {"bash-run", "bash-start", "bash-read", "bash-wait", "bash-kill", "bash-list"}
TODO = {"todo-add", "todo-update", "todo-complete", "todo-list"}
BROWSER = {
    "browser-navigate",
    "browser-read",
    "browser-click",
    "browser-type",
    "browser-screenshot",
}

# name -> (factory taking the project root, the tool names the skill must bring)
SKILLS: dict[str, tuple[Callable[[Path], Skill], set[str]]] = {
    "big-task": (lambda root: big_task(), TODO),
    "long-task-efficiency": (lambda root: long_task_efficiency(), set()),
    "python-backend": (python_backend, FS | BASH),
    "node-backend": (node_backend, FS | BASH),
    "react-frontend": (react_frontend, FS | BASH),
    "ui-ux-design": (lambda root: ui_ux_design(), set()),
    "backend-security": (lambda root: backend_security(), set()),
    "code-verification": (code_verification, FS | BASH),
    "research": (lambda root: research(), BROWSER),
    "shopping": (lambda root: shopping(), BROWSER),
}
NAMES = list(SKILLS)
# A built-in tool's name as it would appear in instructions text.
TOOL_MENTION = re.compile(r"\b(?:fs|bash|todo|browser|present)-[a-z]+(?:-[a-z]+)*\b")


def build(name: str, root: Path) -> Skill:
    factory, _ = SKILLS[name]
    return factory(root)


def agent_with(*skills: Skill, **options: object) -> SimpleAgent:
    return SimpleAgent(
        provider=ScriptedProvider(["done"]),
        instruction="You are a careful engineer.",
        skills=list(skills),
        **options,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("name", NAMES)
class TestEachSkill:
    def test_is_named_in_kebab_case_and_says_when_to_use_it(
        self, name: str, tmp_path: Path
    ) -> None:
        skill = build(name, tmp_path)
        assert skill.name == name
        assert skill.description.startswith("Use this skill ")
        lines = skill.instructions.strip().splitlines()
        assert len(lines) >= 12, "instructions should be concrete, a dozen lines or more"
        assert all(line.startswith(("- ", "  ")) for line in lines), "one point per bullet"

    def test_brings_exactly_the_tools_it_needs(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        names = [t.name for t in skill.tools]
        assert len(names) == len(set(names))
        assert set(names) == SKILLS[name][1]

    def test_mentions_only_tools_it_brings(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        mentioned = set(TOOL_MENTION.findall(skill.instructions))
        assert mentioned <= {t.name for t in skill.tools}
        # A skill with tools tells the model how to use them.
        assert bool(mentioned) == bool(skill.tools)

    def test_each_call_returns_a_fresh_skill_and_fresh_tools(
        self, name: str, tmp_path: Path
    ) -> None:
        first, second = build(name, tmp_path), build(name, tmp_path)
        assert first is not second
        assert (first.name, first.description, first.instructions) == (
            second.name,
            second.description,
            second.instructions,
        )
        # Stateful tools (processes, a browser) are never shared behind the caller's back.
        assert not {id(t) for t in first.tools} & {id(t) for t in second.tools}

    def test_renders_into_the_system_prompt(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        prompt = agent_with(skill).system_prompt()
        assert prompt.startswith("You are a careful engineer.\n\nSKILLS:\n\n")
        assert f"\n{name} - {skill.description}\n" in prompt
        assert skill.instructions.strip() in prompt

    async def test_registers_its_tools_once(self, name: str, tmp_path: Path) -> None:
        skill = build(name, tmp_path)
        # Fresh file tools for the same root are the same tools as a skill's own.
        agent = agent_with(skill, tools=filesystem_tools(tmp_path))
        offered = [t.name for t in await agent.visible_tools()]
        assert sorted(offered) == sorted(SKILLS[name][1] | FS)


class TestSharing:
    async def test_every_skill_in_one_agent_registers_each_tool_once(self, tmp_path: Path) -> None:
        files = filesystem_tools(tmp_path)
        async with bash_tools(tmp_path) as bash, browser_tools() as browser:
            skills = [
                big_task(),
                long_task_efficiency(),
                python_backend(tmp_path, files=files, bash=bash),
                node_backend(tmp_path, files=files, bash=bash),
                react_frontend(tmp_path, files=files, bash=bash),
                ui_ux_design(),
                backend_security(),
                code_verification(tmp_path, files=files, bash=bash),
                research(browser=browser),
                shopping(browser=browser),
                # From the other catalog modules, sharing the same sets.
                planner(),
                web_end_to_end_test(browser=browser),
            ]
            agent = agent_with(*skills, tools=[*todo_tools(), *files])
            offered = [t.name for t in await agent.visible_tools()]
            assert len(offered) == len(set(offered))
            assert set(offered) == FS | BASH | TODO | BROWSER
            prompt = agent.system_prompt()
            assert [prompt.index(f"\n{s.name} - ") for s in skills] == sorted(
                prompt.index(f"\n{s.name} - ") for s in skills
            )

    async def test_a_skill_bundles_the_very_sets_it_is_given(self, tmp_path: Path) -> None:
        files = filesystem_tools(tmp_path)
        async with bash_tools(tmp_path) as bash, browser_tools() as browser:
            assert python_backend(tmp_path, files=files, bash=bash).tools == (*files, *bash)
            assert research(browser=browser).tools == tuple(browser)

    def test_two_skills_with_shells_of_their_own_clash_clearly(self, tmp_path: Path) -> None:
        # Their file tools are equal; two sets of processes are not.
        with pytest.raises(UserError, match=r"two different tools are named 'bash-"):
            agent_with(python_backend(tmp_path), code_verification(tmp_path))

    async def test_skills_sharing_a_shell_bring_their_own_file_tools(self, tmp_path: Path) -> None:
        async with bash_tools(tmp_path) as bash:
            agent = agent_with(
                python_backend(tmp_path, bash=bash), code_verification(str(tmp_path), bash=bash)
            )
            assert {t.name for t in await agent.visible_tools()} == FS | BASH

    def test_file_tools_of_another_root_or_with_other_limits_are_refused(
        self, tmp_path: Path
    ) -> None:
        other = tmp_path / "other"
        other.mkdir()
        with pytest.raises(UserError, match=r"file tools work in '.*other', not in the root"):
            python_backend(tmp_path, files=filesystem_tools(other))
        narrow = filesystem_tools(tmp_path, max_matches=5)
        with pytest.raises(UserError, match=r"two different tools are named 'fs-"):
            agent_with(python_backend(tmp_path, files=narrow), tools=filesystem_tools(tmp_path))

    def test_bash_tools_running_elsewhere_are_refused(self, tmp_path: Path) -> None:
        other = tmp_path / "other"
        other.mkdir()
        with pytest.raises(UserError, match=r"run in '.*other', not in the root"):
            python_backend(tmp_path, bash=bash_tools(other))

    def test_sets_of_the_wrong_kind_are_refused(self, tmp_path: Path) -> None:
        with pytest.raises(UserError, match="filesystem_tools"):
            node_backend(tmp_path, files=todo_tools())
        with pytest.raises(UserError, match="bash_tools"):
            react_frontend(tmp_path, bash=filesystem_tools(tmp_path))  # type: ignore[arg-type]
        with pytest.raises(UserError, match="browser_tools"):
            shopping(browser=todo_tools())  # type: ignore[arg-type]
        with pytest.raises(UserError, match="browser_tools"):
            web_end_to_end_test(browser=todo_tools())  # type: ignore[arg-type]

    def test_a_missing_root_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(UserError, match="missing"):
            code_verification(tmp_path / "missing")


class TestAtWork:
    async def test_python_backend_writes_and_runs_code_in_its_root(self, tmp_path: Path) -> None:
        lines: list[str] = []

        def collect(event: BashEvent) -> None:
            if isinstance(event, BashOutput):
                lines.append(event.line)

        provider = ScriptedProvider(
            [
                call("fs-write-file", path="app/main.py", content="print(6 * 7)\n"),
                call("bash-run", command=f"{sys.executable} app/main.py"),
                "It prints 42.",
            ]
        )
        async with bash_tools(tmp_path) as bash:
            bash.interaction.subscribe(collect)
            skill = python_backend(tmp_path, bash=bash)
            agent = SimpleAgent(provider=provider, skills=[skill])
            result = await agent.run("Write and run a program printing 6 * 7.")
        assert result.reply == "It prints 42."
        assert (tmp_path / "app" / "main.py").read_text() == "print(6 * 7)\n"
        written, ran = result.tool_calls
        assert not written.is_error
        assert not ran.is_error
        assert "42" in ran.result
        assert lines == ["42"]  # live progress reaches whoever gave the skill its bash tools
        system = provider.requests[0].messages[0]
        assert system.role == "system"
        assert f"python-backend - {skill.description}" in system.text

    async def test_big_task_keeps_its_scope_on_the_todo_list(self) -> None:
        provider = ScriptedProvider(
            [
                [call("todo-add", title="Login page"), call("todo-add", title="Signup page")],
                call("todo-complete", id="todo-1"),
                call("todo-list"),
                "Signup page is still open.",
            ]
        )
        agent = SimpleAgent(provider=provider, skills=[big_task()])
        result = await agent.run("Build the login and signup pages.")
        listing = result.tool_calls[-1].result
        assert "[x] todo-1: Login page" in listing
        assert "[ ] todo-2: Signup page" in listing

    @pytest.mark.slow
    @pytest.mark.skipif(not os.access("/usr/bin/chromium", os.X_OK), reason="needs chromium")
    async def test_research_reads_a_live_page_through_the_browser(self, site: str) -> None:
        provider = ScriptedProvider(
            [
                call("browser-navigate", url=f"{site}/heron"),
                call("browser-read"),
                "Herons nest in colonies.",
            ]
        )
        async with browser_tools() as browser:
            agent = SimpleAgent(provider=provider, skills=[research(browser=browser)])
            result = await agent.run("Where do herons nest?")
        navigated, read = result.tool_calls
        assert not navigated.is_error, navigated.result
        assert "Grey heron" in navigated.result
        assert "Herons nest in colonies called heronries." in read.result
        assert "[ref=" in read.result  # the source link, clickable by ref


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = (
            b"<!doctype html><title>Grey heron</title><h1>Grey heron</h1>"
            b"<p>Herons nest in colonies called heronries.</p>"
            b'<a href="/source">Source</a>'
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean


@pytest.fixture
def site() -> Iterator[str]:
    """A page served on loopback for the browser to read."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
