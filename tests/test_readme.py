"""README.md, run: every Python and shell block executes, every command line names a real
command, so the README cannot drift from the code.

Blocks are read from the README itself, in order:

- ``python`` blocks run in a new process each, the way a reader pastes them into
  ``python -m asyncio`` (top-level ``await`` and ``async with`` work). A block that
  continues a sketch (``provider``, ``researcher`` ... named by the prose around it) gets
  :data:`GIVEN`, a few lines defining exactly those names on a scripted model;
- ``bash``, ``sh`` and ``console`` blocks run in ``bash -e`` (``console``: the ``$`` lines);
- ``text`` and unlabelled blocks are transcripts and synopses: each ``heron ...`` line in
  them must name a command of the ``heron`` app, and each ``--option`` an option of it.

The daemon the blocks talk to is a real one (started by the README's own ``heron daemon
start``, then by the client's auto-start) in a private ``HERON_HOME``, on a scripted model
(:data:`SCRIPT`), so nothing waits on a real model but the two blocks that show the
embedded one. :data:`SKIP` is the short list of blocks that cannot run here, each with
its reason. Every name in these tables must match exactly one block.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.readme import (
    BLOCKS,
    README,
    Block,
    check_command_line,
    command_lines,
)

BIN = Path(sys.executable).parent


RUN_LANGS = ("python", "bash", "sh", "console")
LISTED_LANGS = ("text", "")

SKIP = {
    "pip install -e . && .venv/bin/heron run": (
        "makes a new venv and compiles llama-cpp-python; its `heron run` is the transcript "
        "block below, which test_the_heron_run_transcript runs on the embedded model"
    ),
    "pip install -e '.[dev]' && .venv/bin/python -m pytest": "it is this test suite",
    "async with MCPServer(UnixSocketConnection(": (
        "two processes, one serving forever; examples/socket_tools.py is its runnable "
        "form, run by tests/test_examples.py"
    ),
}
"""Blocks that cannot run here, each with its reason."""

_SCRIPTED = "from heron.testing import ScriptedProvider, call\n"
GIVEN = {
    "Pipeline([researcher, writer, editor])": _SCRIPTED
    + """from heron import SimpleAgent

def _worker(name, answer):
    return SimpleAgent(provider=ScriptedProvider([answer] * 8), name=name)

researcher = _worker("researcher", "Herons hunt by waiting.")
writer = _worker("writer", "Herons stand still, then strike.")
editor = _worker("editor", "Herons: patient hunters.")
p = ScriptedProvider(
    [call("researcher", task="facts"), call("writer", task="two sentences"), "Written."]
)
jobs = [(researcher, "one fact"), (writer, "one line")]

def pick_next(team):
    return None if team.history else "researcher"
""",
    'async with catalog("./service") as tools:': _SCRIPTED
    + """import os
os.makedirs("service", exist_ok=True)
provider = ScriptedProvider(["GET /health answers 200: done."])
""",
    "tools.interaction.subscribe(": _SCRIPTED
    + """provider = ScriptedProvider([call("bash-run", command="echo tests pass"), "All pass."])
""",
}
"""What a block continuing a sketch is given: the names its prose speaks of."""

ENV = {
    "OpenAIProvider(os.environ": {
        "OPENAI_API_KEY": "sk-readme-test",
        "DEEPSEEK_API_KEY": "sk-readme-test",
        "ANTHROPIC_API_KEY": "sk-ant-readme-test",
    },
    'client.models.credentials.install("anthropic"': {"ANTHROPIC_API_KEY": "sk-ant-readme"},
}
"""Variables a block reads (fake keys: providers are built, nothing is sent)."""

EXPECT = {
    "heron daemon start                         # or in the foreground": [
        r'"state":\s*"settled"',
        r'"output_text":\s*"It is noon UTC\."',
    ],
    'result = await agent.run("What time is it in UTC?", on_chunk=show)': [
        r"get-current-time \{.*\} -> \d{4}-\d\d-\d\dT",
    ],
    "Pipeline([researcher, writer, editor])": [],
    "output_schema=Package,": [r"^0\.1\.0$"],
    'stream = client.nodes.stream(prompt="What time is it in UTC?"': [
        r"It is noon UTC\.",
        r"^ result$",
    ],
    'client.memory.create("projects/heron/db"': [
        r"projects/heron/db \d",
        r"\*\*PostgreSQL\*\*",
        r"^SQLite, and PostgreSQL when shared\.$",
        r"^2 update ",
    ],
    'client.files.read("/etc/hostname")': [r"^0 .*total", r"notes\.md", r"^# Notes$"],
    '"0 9 * * mon-fri",': [r"^result$"],
    "client.human.requests.create(": [r"squash, then tag it"],
    "for item in client.canvas.attention():": [r"n-\S+ completed \d+"],
    'client.models.credentials.install("anthropic"': [r"anthropic installed", r"^True "],
}
"""What a block's output must show (regular expressions, searched line by line)."""

SCRIPT = {
    "steps": [
        {
            # A node with an output schema finishes here; any other has no such tool
            # (an error result it reads) and answers on the next turn.
            "tool_calls": [
                {
                    "name": "submit-result",
                    "arguments": {"result": {"name": "heron", "version": "0.1.0"}},
                }
            ]
        },
        "It is noon UTC.",
    ],
    "compaction": "Nothing to keep.",
}
"""What every node of the README's daemon plays (each node its own copy)."""


def _one(key: str) -> Block:
    found = [b for b in BLOCKS if key in b.text]
    assert len(found) == 1, f"{key!r} names {len(found)} README blocks, not one"
    return found[0]


def _key(block: Block, table: dict[str, object]) -> str | None:
    return next((key for key in table if key in block.text), None)


def test_every_table_entry_names_one_block() -> None:
    for table in (SKIP, GIVEN, ENV, EXPECT):
        for key in table:
            _one(key)
    assert not set(SKIP) & (set(GIVEN) | set(EXPECT)), "a skipped block is run nowhere"


def test_every_block_is_run_or_checked() -> None:
    langs = {b.lang for b in BLOCKS}
    assert langs <= set(RUN_LANGS) | set(LISTED_LANGS), f"unknown block languages: {langs}"
    assert len(SKIP) <= 3, "the skip list stays short: make a block runnable instead"


@pytest.fixture(scope="module")
def place() -> Iterator[dict[str, str]]:
    """The readers' machine: a private HERON_HOME (short: it holds the socket), a project
    folder to work in, and the daemon the blocks start, stopped at the end."""
    root = Path(tempfile.mkdtemp(prefix="heron-readme-"))
    home, work = root / "home", root / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text('[project]\nname = "heron"\nversion = "0.1.0"\n')
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HERON_") and not k.endswith("_API_KEY")
    }
    env.update(
        HERON_HOME=str(home),
        HERON_PROVIDER=f"scripted:{script}",
        HERON_WARM_POOL="0",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        PYTHONUTF8="1",
        WORK=str(work),
    )
    env.pop("PYTHONWARNINGS", None)
    try:
        yield env
    finally:
        subprocess.run(
            [str(BIN / "heron"), "daemon", "stop"], env=env, capture_output=True, timeout=60
        )
        shutil.rmtree(root, ignore_errors=True)


RUNNER = """
import ast, asyncio, inspect, sys

def compiled(source, filename, line):
    tree = ast.parse(source, filename)
    ast.increment_lineno(tree, line - 1)
    return compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)

def is_async(code):
    return bool(code.co_flags & inspect.CO_COROUTINE)

async def in_a_loop(*codes):
    for code in codes:
        if is_async(code):
            await eval(code, namespace)
        else:
            exec(code, namespace)

namespace = {"__name__": "__main__"}
given = compiled(open(sys.argv[2]).read(), "GIVEN", 1)
block = compiled(open(sys.argv[3]).read(), sys.argv[1], int(sys.argv[4]))
if is_async(block):  # top-level await: as in python -m asyncio
    asyncio.run(in_a_loop(given, block))
else:
    exec(given, namespace)
    exec(block, namespace)
"""


def _run_python(block: Block, env: dict[str, str], timeout: float) -> str:
    folder = Path(env["WORK"])
    given = folder / ".given.py"
    given.write_text(GIVEN.get(_key(block, GIVEN) or "", ""), encoding="utf-8")
    source = folder / ".block.py"
    source.write_text(block.text, encoding="utf-8")
    extra = ENV.get(_key(block, ENV) or "", {})
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(README), given, source, str(block.line)],
        cwd=folder,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, (
        f"README.md line {block.line}: the block exited {proc.returncode}\n"
        f"{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


def _run_shell(block: Block, env: dict[str, str]) -> str:
    text = block.text
    if block.lang == "console":
        text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ "))
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", text],
        cwd=env["WORK"],
        env=env,
        input="sk-readme-console-key\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, (
        f"README.md line {block.line}: the block exited {proc.returncode}\n"
        f"{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


def _expect(block: Block, out: str) -> None:
    for pattern in EXPECT.get(_key(block, EXPECT) or "", []):
        assert re.search(pattern, out, re.MULTILINE), (
            f"README.md line {block.line}: no line matches {pattern!r} in:\n{out}"
        )


RUNNABLE = [b for b in BLOCKS if b.lang in RUN_LANGS]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_block_runs(block: Block, place: dict[str, str]) -> None:
    reason = SKIP.get(_key(block, SKIP) or "")
    if reason is not None:
        pytest.skip(reason)
    if block.lang == "python":
        out = _run_python(block, place, timeout=600)
    else:
        if "curl " in block.text and shutil.which("curl") is None:
            pytest.skip("curl is not installed")
        out = _run_shell(block, place)
    _expect(block, out)


# -- command lines -----------------------------------------------------------------


LISTED = [b for b in BLOCKS if b.lang in LISTED_LANGS and "heron" in b.text]


@pytest.mark.parametrize("block", LISTED, ids=[b.id for b in LISTED])
def test_command_lines_name_real_commands(block: Block) -> None:
    problems = [
        f"line {line!r}: {problem}"
        for line, comment in command_lines(block.text)
        for problem in check_command_line(line, comment)
    ]
    assert not problems, f"README.md line {block.line}:\n" + "\n".join(problems)


def test_the_checker_catches_a_made_up_command_and_option() -> None:
    assert check_command_line("heron nodes list --status S", "") == []
    assert check_command_line("heron nodes frobnicate ID", "")
    assert check_command_line("heron nodes list --colour red", "")
    assert check_command_line("heron daemon start | stop | status", "") == []
    assert check_command_line("heron daemon start | explode", "")
    assert check_command_line("heron nodes get ID", "# --watch")
    assert check_command_line("heron inbox dismiss|cancel hr_1 --reason R", "") == []
    assert check_command_line("heron inbox dismiss|obliterate hr_1", "")
    assert check_command_line("heron nodes list [--status S] | --root", "") == []


def _shape(line: str) -> str:
    """A transcript line as a pattern: numbers and weekdays vary, the rest is as shown."""
    pattern = re.escape(line.rstrip())
    pattern = re.sub(r"\d+", r"\\d+", pattern)
    return re.sub(r"(Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day", r"\\w+day", pattern)


@pytest.mark.slow
def test_the_heron_run_transcript(place: dict[str, str]) -> None:
    """The README's first command, on the embedded model: its tool line and its summary
    line look as the transcript shows them (the answer between them is the model's)."""
    block = _one('$ heron run "What time is it in UTC?"')
    shown = block.text.splitlines()
    command = shown[0].removeprefix("$ ")
    env = {k: v for k, v in place.items() if k != "HERON_PROVIDER"}
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=place["WORK"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.fullmatch(_shape(shown[1]), lines[0]), (shown[1], lines[0])
    assert re.fullmatch(_shape(shown[-1]), lines[-1]), (shown[-1], lines[-1])
