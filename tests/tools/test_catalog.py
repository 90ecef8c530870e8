"""The catalog of built-in tools: names, schemas, roots, routing, and an agent using it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from tests.support.bash_tools import alive

import heron.tools
from heron import SimpleAgent, Skill, Tool, UserError
from heron.mcp import InProcessConnection, MCPClient, MCPServer, MemoryStorage
from heron.providers._local_prompt import relevant_tools
from heron.skills import (
    big_task,
    code_verification,
    node_backend,
    planner,
    present,
    python_backend,
    question_answer,
    react_frontend,
    research,
    shopping,
    web_end_to_end_test,
)
from heron.testing import ScriptedProvider, call
from heron.tools import LocalToolClient, catalog
from heron.tools.catalog import _collect, _Setup

FILES = ["fs-read-file", "fs-write-file", "fs-list-directory", "fs-edit-file", "fs-glob", "fs-grep"]
BASH = ["bash-run", "bash-start", "bash-read", "bash-wait", "bash-kill", "bash-list"]
BROWSER = [
    "browser-navigate",
    "browser-read",
    "browser-click",
    "browser-type",
    "browser-screenshot",
]

KEBAB = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")


def test_exported_from_heron_tools() -> None:
    assert heron.tools.catalog is catalog
    assert "catalog" in heron.tools.__all__


def test_every_tool_is_keyed_by_its_own_kebab_case_name(tmp_path: Path) -> None:
    tools = catalog(tmp_path)
    assert {"get-current-time", "fs-read-file", "fs-grep"} <= set(tools)
    for name, value in tools.items():
        assert isinstance(value, Tool)
        assert value.name == name
        assert KEBAB.fullmatch(name), name
    assert len({id(t) for t in tools.values()}) == len(tools)


def test_every_schema_is_valid_and_described(tmp_path: Path) -> None:
    for name, value in catalog(tmp_path).items():
        schema = value.schema
        jsonschema.Draft202012Validator.check_schema(schema.input_schema)
        assert schema.input_schema["type"] == "object", name
        assert schema.description.strip(), name
        for prop, spec in schema.input_schema.get("properties", {}).items():
            assert spec.get("description", "").strip(), f"{name}.{prop} is not described"
        assert set(schema.input_schema.get("required", [])) <= set(
            schema.input_schema.get("properties", {})
        )


async def test_file_tools_work_in_the_given_root(tmp_path: Path) -> None:
    tools = catalog(tmp_path)
    client = LocalToolClient(tools.values())
    result = await client.call_tool("fs-write-file", {"path": "out/a.txt", "content": "hi\n"})
    assert not result.is_error, result.text
    assert (tmp_path / "out" / "a.txt").read_text() == "hi\n"
    assert not (await client.call_tool("get-current-time", {})).is_error


def test_the_root_defaults_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("here\n")
    tools = catalog()
    monkeypatch.chdir(tmp_path.parent)  # resolved when made, not when called
    assert tools["fs-read-file"].func(path="here.txt") == "here\n"  # type: ignore[attr-defined]


def test_each_call_makes_fresh_file_tools(tmp_path: Path) -> None:
    first, second = catalog(tmp_path), catalog(tmp_path)
    assert first["fs-read-file"] is not second["fs-read-file"]
    with pytest.raises(UserError, match="does not exist"):
        catalog(tmp_path / "missing")


def test_two_families_naming_one_tool_is_an_error(tmp_path: Path) -> None:
    setup = _Setup(root=tmp_path)
    families = {name: lambda s: [heron.tools.get_current_time] for name in ("one", "two")}
    with pytest.raises(UserError, match="two built-in tools are named 'get-current-time'"):
        _collect(setup, families)


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("What time is it in Tokyo?", "get-current-time"),
        ("what's the date today?", "get-current-time"),
        ("Read the file notes.txt", "fs-read-file"),
        ("Save this poem to the file poem.txt", "fs-write-file"),
        ("List the files in src", "fs-list-directory"),
        ("Edit config.py to replace foo with bar", "fs-edit-file"),
        ("Find all python files", "fs-glob"),
        ("Which files mention TODO?", "fs-grep"),
    ],
)
def test_the_embedded_models_router_picks_one_fitting_tool(
    tmp_path: Path, request_text: str, expected: str
) -> None:
    schemas = [t.schema for t in catalog(tmp_path).values()]
    assert [s.name for s in relevant_tools(request_text, schemas)] == [expected]


@pytest.mark.parametrize(
    "request_text", ["Write a haiku about rivers.", "Hello!", "Tell me a joke"]
)
def test_the_router_leaves_chat_alone(tmp_path: Path, request_text: str) -> None:
    schemas = [t.schema for t in catalog(tmp_path).values()]
    assert relevant_tools(request_text, schemas) == []


async def test_an_agent_finds_edits_and_checks_a_file(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "greet.py").write_text("def greet():\n    return 'helo'\n")
    tools = catalog(tmp_path)
    provider = ScriptedProvider(
        [
            call("fs-grep", pattern="helo"),
            call("fs-edit-file", path="src/greet.py", old_text="'helo'", new_text="'hello'"),
            call("fs-read-file", path="src/greet.py"),
            "Fixed the typo in src/greet.py.",
        ]
    )
    agent = SimpleAgent(provider=provider, tools=list(tools.values()))
    result = await agent.run("Fix the typo in the greeting")
    assert result.reply == "Fixed the typo in src/greet.py."
    assert not any(c.is_error for c in result.tool_calls)
    assert [c.result for c in result.tool_calls] == [
        "src/greet.py:2:    return 'helo'",
        "edited src/greet.py: replaced 1 occurrence at line 2",
        "def greet():\n    return 'hello'\n",
    ]
    assert (tmp_path / "src" / "greet.py").read_text() == "def greet():\n    return 'hello'\n"


async def test_the_catalog_serves_over_mcp_unchanged(tmp_path: Path) -> None:
    """File tools belong on a (sandboxed) server: their schemas and errors survive MCP."""
    tools = catalog(tmp_path)
    connection = InProcessConnection()
    async with MCPServer(connection, MemoryStorage()) as server:
        for made in tools.values():
            server.register_tool(made)
        async with MCPClient("me", connection, MemoryStorage()) as client:
            listed = {s.name: s for s in await client.list_tools()}
            assert listed == {name: t.schema for name, t in tools.items()}
            wrote = await client.call_tool("fs-write-file", {"path": "a.txt", "content": "x\n"})
            assert wrote.text == "created a.txt (2 bytes)"
            escape = await client.call_tool("fs-read-file", {"path": "../a.txt"})
            assert escape.is_error
            assert "path '../a.txt' is outside the root directory" in escape.text


@pytest.fixture
def real_root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def test_every_family_is_in_the_catalog_and_closing_it_stops_what_started(
    real_root: Path,
) -> None:
    root = str(real_root)
    async with catalog(real_root) as tools:
        prefixes = {name.split("-")[0] for name in tools}
        assert {"get", "fs", "todo", "ask", "present", "bash", "browser"} <= prefixes
        client = LocalToolClient(tools.values())
        started = await client.call_tool("bash-start", {"command": "sleep 30"})
        assert not started.is_error, started.text
        pid = started.structured["pid"]
        assert alive(pid)
        ran = await client.call_tool("bash-run", {"command": "pwd"})
        assert root in ran.text
    # The catalog was closed on leaving the block: the background process is gone.
    assert not alive(pid)


def test_the_catalog_hands_out_its_own_sets_for_skills(real_root: Path) -> None:
    tools = catalog(real_root)
    assert tools.files == [tools[name] for name in FILES]
    assert list(tools.bash) == [tools[name] for name in BASH]
    assert tools.bash.cwd == real_root
    assert list(tools.browser) == [tools[name] for name in BROWSER]
    bare = _collect(_Setup(root=real_root), {"time": lambda s: [heron.tools.get_current_time]})
    with pytest.raises(UserError, match="this catalog has no bash tools"):
        _ = bare.bash


PROJECT_SKILLS = [python_backend, node_backend, react_frontend, code_verification]


@pytest.mark.parametrize("make", PROJECT_SKILLS)
async def test_the_whole_catalog_and_a_project_skill_share_one_agent(
    real_root: Path, make: Callable[..., Skill]
) -> None:
    async with catalog(real_root) as tools:
        # Its own file tools (equal to the catalog's), the catalog's shell.
        skill = make(real_root, bash=tools.bash)
        provider = ScriptedProvider(
            [
                call("fs-write-file", path="note.txt", content="from the skill\n"),
                call("bash-run", command="cat note.txt"),
                "done",
            ]
        )
        agent = SimpleAgent(provider=provider, tools=list(tools.values()), skills=[skill])
        offered = [t.name for t in await agent.visible_tools()]
        assert sorted(offered) == sorted(tools)
        result = await agent.run("Write a note and show it.")
    assert [c.is_error for c in result.tool_calls] == [False, False]
    assert "from the skill" in result.tool_calls[1].result


async def test_the_catalog_and_every_skill_share_one_agent(real_root: Path) -> None:
    async with catalog(real_root) as tools:
        shared = {"files": tools.files, "bash": tools.bash}
        skills = [make(real_root, **shared) for make in PROJECT_SKILLS]
        skills += [
            research(browser=tools.browser),
            shopping(browser=tools.browser),
            web_end_to_end_test(browser=tools.browser),
            present(real_root),
            planner(),
            big_task(),
            question_answer(),
        ]
        agent = SimpleAgent(
            provider=ScriptedProvider(["ok"]), tools=list(tools.values()), skills=skills
        )
        assert sorted(t.name for t in await agent.visible_tools()) == sorted(tools)
