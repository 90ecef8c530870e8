"""What each entry point imports: a heavy dependency creeping into a cold start fails here.

Each case runs in a fresh interpreter (this process has long imported everything) and
compares the modules it loaded against the ones that entry point must not need. The
times these keep low are measured by ``bench/cold_start.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import heron

# Loaded by the daemon, the embedded model, the hosted providers, the tools or MCP.
SERVER_SIDE = (
    "anthropic",
    "dbos",
    "fastapi",
    "heron.mcp",
    "heron.runtime",
    "llama_cpp",
    "mcp",
    "openai",
    "playwright",
    "sqlalchemy",
    "starlette",
    "uvicorn",
)
SDK = ("heron.agents._agent", "heron.providers", "heron.tools", "jsonschema")
COMMAND_LINE = ("click", "rich", "typer")

FORBIDDEN = {
    "import heron": (*SERVER_SIDE, *SDK, *COMMAND_LINE, "httpx", "pydantic", "heron.client"),
    "import heron.client": (*SERVER_SIDE, *SDK, "typer", "heron.cli"),
    "heron --version": (
        *SERVER_SIDE,
        *SDK,
        *COMMAND_LINE,
        "httpx",
        "pydantic",
        "heron.client",
        "importlib.metadata",
    ),
    # What `heron nodes list` loads before it sends its request: the client, not the agent loop.
    "import heron.cli._app": (*SERVER_SIDE, *SDK),
}

CODE = {
    "import heron": "import heron",
    "import heron.client": "import heron.client",
    "heron --version": (
        "import sys\nsys.argv = ['heron', '--version']\nfrom heron.cli import main\nmain()\n"
    ),
    "import heron.cli._app": "import heron.cli._app",
}


def loaded_by(code: str) -> tuple[set[str], str]:
    """The modules a fresh interpreter holds after running ``code``, and what it printed."""
    probe = code + "\nimport json, sys\nsys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(done.stderr)), done.stdout


def offending(loaded: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """Each forbidden module (or a submodule of it) that was loaded."""
    return sorted(
        name for name in loaded if any(name == f or name.startswith(f + ".") for f in forbidden)
    )


@pytest.mark.parametrize("entry", sorted(FORBIDDEN))
def test_an_entry_point_loads_none_of_what_it_does_not_use(entry: str) -> None:
    loaded, _ = loaded_by(CODE[entry])
    assert offending(loaded, FORBIDDEN[entry]) == []


def test_the_version_fast_path_prints_what_typer_would() -> None:
    _, out = loaded_by(CODE["heron --version"])
    assert out == f"heron {heron.__version__}\n"


def test_the_probe_sees_a_heavy_import() -> None:
    # The check above could pass by seeing nothing: show that it sees what it forbids.
    loaded, _ = loaded_by("import heron\nheron.SimpleAgent")
    assert "heron.agents._agent" in offending(loaded, SDK)
    assert "jsonschema" in offending(loaded, SDK)


def test_lazy_names_resolve_to_the_objects_of_their_modules() -> None:
    import heron.agents
    from heron.agents._agent import SimpleAgent
    from heron.agents._limits import DEFAULT_MAX_TURNS

    assert heron.SimpleAgent is SimpleAgent
    assert heron.agents.DEFAULT_MAX_TURNS == DEFAULT_MAX_TURNS == 25
    assert "SimpleAgent" in dir(heron) and "AgentState" in dir(heron.agents)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = heron.Nope  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = heron.agents.Nope  # type: ignore[attr-defined]
