"""What each entry point imports: a heavy dependency creeping into a cold start fails here.

Each case runs in a fresh interpreter (this process has long imported everything) and
compares the modules it loaded against the ones that entry point must not need. The
times these keep low are measured by ``bench/cold_start.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
# heron._core's data modules: reading the version (heron._core.version) loads none of them.
CORE_DATA = ("heron._core.errors", "heron._core.messages", "heron._core.responses")
# httpx's own command line, which its __init__ loads whenever click and rich are installed.
HTTPX_CLI = ("httpx._main", "click", "rich", "pygments")

FORBIDDEN = {
    "import heron": (
        *SERVER_SIDE,
        *SDK,
        *COMMAND_LINE,
        *CORE_DATA,
        "httpx",
        "pydantic",
        "heron.client",
    ),
    # The package's names resolve on first use; the client itself loads the wire models of
    # the routes it wraps (nodes, status, canvas, human), not those of every route.
    "import heron.client": (*SERVER_SIDE, *SDK, "typer", "heron.cli", "httpx", "pydantic"),
    "from heron.client import Heron": (
        *SERVER_SIDE,
        *SDK,
        "typer",
        "heron.cli",
        "heron.client._activity",
        "heron.api._crons",
        "heron.api._memory",
        "heron.api._profiles",
        "importlib.metadata",  # the user-agent's version is heron._core.version's
        *HTTPX_CLI,
    ),
    "Heron() on a socket": (*SERVER_SIDE, *SDK, *HTTPX_CLI),
    "heron --version": (
        *SERVER_SIDE,
        *SDK,
        *COMMAND_LINE,
        *CORE_DATA,
        "httpx",
        "pydantic",
        "heron.client",
        "importlib.metadata",
    ),
    # What every command loads first: not the agent loop, nor its result types (they bring
    # pydantic_core), nor the client before a command asks for it.
    "import heron.cli._app": (*SERVER_SIDE, *SDK, "httpx", "pydantic", "pydantic_core"),
    # A command loads its own group only, not the modules of the eleven others.
    "heron nodes list --help": (
        *SERVER_SIDE,
        *SDK,
        *(f"heron.cli._{m}" for m in ("canvas", "crons", "daemon", "files", "inbox")),
        *(f"heron.cli._{m}" for m in ("memory", "models", "profiles")),
    ),
    # rich.markdown (markdown-it) loads when an answer or report is rendered, or help shown.
    "import heron.cli._lineage": (*SERVER_SIDE, *SDK, "markdown_it"),
    # Writing a tool loads the tool machinery, not the catalog's tools (bash, browser, files).
    "from heron.tools import tool": (
        *SERVER_SIDE,
        *(f"heron.tools.{m}" for m in ("bash", "browser", "catalog", "fs", "todo")),
        "heron.agents._agent",
        "heron.providers",
        "regex",
    ),
    # The daemon before it listens: no model runtime, vendor SDK, browser or MCP SDK until a
    # node asks for one.
    "daemon": ("anthropic", "llama_cpp", "mcp", "openai", "playwright", "websockets"),
}

CODE = {
    "import heron": "import heron",
    "import heron.client": "import heron.client",
    "from heron.client import Heron": "from heron.client import Heron",
    "heron --version": (
        "import sys\nsys.argv = ['heron', '--version']\nfrom heron.cli import main\nmain()\n"
    ),
    "Heron() on a socket": (
        "from heron.client import Heron\n"
        "Heron(socket_path='/nonexistent/heron.sock', auto_start=False).close()"
    ),
    "import heron.cli._app": "import heron.cli._app",
    "import heron.cli._lineage": "import heron.cli._lineage",
    "heron nodes list --help": (
        "import sys\nsys.argv = ['heron', 'nodes', 'list', '--help']\nfrom heron.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert exit.code == 0\n"
    ),
    "daemon": "import heron.runtime\nheron.runtime.run_daemon",
    "from heron.tools import tool": "from heron.tools import tool",
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


def test_httpx_main_is_still_its_command_line() -> None:
    # The client loads httpx without its CLI; httpx.main still gives the real command.
    _, out = loaded_by(
        "from heron.client import Heron\nimport httpx, sys\n"
        "assert 'httpx._main' not in sys.modules\n"
        "from httpx import main\nimport httpx._main\n"
        "print(main is httpx.main is httpx._main.main, type(main).__name__)\n"
        "try:\n    httpx.nope\nexcept AttributeError as e:\n    print(e)\n"
    )
    assert out == "True Command\nmodule 'httpx' has no attribute 'nope'\n"


# Counts the CA bundles loaded (certifi's file, SSL_CERT_FILE or the system's) while
# clients of the given base URLs are built.
CA_LOADS = """
import ssl
loads = []
for name in ("load_verify_locations", "load_default_certs", "set_default_verify_paths"):
    def counted(self, *args, _real=getattr(ssl.SSLContext, name), **kwargs):
        loads.append(1)
        return _real(self, *args, **kwargs)
    setattr(ssl.SSLContext, name, counted)
from heron.client import AsyncHeron, Heron
for url in {urls}:
    kwargs = {{"base_url": url}} if url else {{"socket_path": "/nonexistent/heron.sock"}}
    Heron(**kwargs, auto_start=False).close()
    AsyncHeron(**kwargs, auto_start=False)
print(len(loads))
"""


def test_a_client_loads_a_ca_bundle_for_https_only() -> None:
    # Loading the CA bundle is ~25 ms of a command's cold start; only TLS needs it.
    _, out = loaded_by(CA_LOADS.format(urls=["", "http://127.0.0.1:9"]))
    assert out == "0\n"
    _, out = loaded_by(CA_LOADS.format(urls=["https://127.0.0.1:9", "HTTPS://127.0.0.1:9"]))
    assert int(out) >= 4  # the probe sees a load: each of the four clients made one


def test_heron_tools_catalog_is_the_function_whichever_import_comes_first() -> None:
    # The submodule heron.tools.catalog shares its name with the function the package
    # exports; importing the submodule directly must not put the module in its place.
    _, out = loaded_by(
        "import heron.tools.catalog\nfrom heron.tools import catalog\nimport heron.tools\n"
        "from heron.tools.catalog import Catalog\n"
        "print(catalog is heron.tools.catalog, callable(catalog), Catalog.__name__)"
    )
    assert out == "True True Catalog\n"


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


@pytest.mark.slow
def test_type_checkers_see_the_lazy_names_and_refuse_typos(tmp_path: Path) -> None:
    # A module-level __getattr__ visible to mypy would make it accept any attribute.
    from mypy import api as mypy_api

    module = tmp_path / "user_code.py"
    module.write_text(
        "from typing import assert_type\n"
        "import heron\n"
        "import heron.agents\n"
        "import heron.runtime\n"
        "from heron import SimpleAgent\n"
        "assert_type(heron.SimpleAgent, type[SimpleAgent])\n"
        "assert_type(heron.agents.DEFAULT_MAX_TURNS, int)\n"
        "heron.runtime.RuntimeConfig\n"
        "heron.Typo\n"
        "heron.agents.Typo\n"
        "heron.runtime.Typo\n"
    )
    cache = Path(__file__).resolve().parents[1] / ".mypy_cache"
    out, _, status = mypy_api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(cache), str(module)]
    )
    assert status == 1
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["9", "10", "11"], out
