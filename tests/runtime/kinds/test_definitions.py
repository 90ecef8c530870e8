"""Kinds: built-ins, TOML kinds, and what a kind changes in what reaches the model."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_settled, write_script
from tests.support.models import fake_openai

from heron.runtime.nodes._tools import KIND_FIXED_TOOLS

MARKER = "You audit ledgers and nothing else (kind-marker-7731)."


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ThreadingHTTPServer]:
    """A fake OpenAI endpoint shared by the module (its requests carry each node's prompt)."""
    with fake_openai() as server:
        yield server


@pytest.fixture(scope="module")
def kinds_daemon(
    tmp_path_factory: pytest.TempPathFactory, openai_server: ThreadingHTTPServer
) -> Iterator[Daemon]:
    home = tmp_path_factory.mktemp("kinds-home")
    env = {
        "HERON_PROVIDER": write_script(home, "default", ["Hello from the default script."]),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{openai_server.server_address[1]}/v1",
    }
    daemon = Daemon(home, env).start()
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def kclient(kinds_daemon: Daemon) -> Iterator[httpx.Client]:
    with kinds_daemon.client() as c:
        yield c


def _kind_file(daemon: Daemon, name: str, text: str) -> Path:
    directory = daemon.home / "kinds"
    directory.mkdir(exist_ok=True)
    path = directory / f"{name}.toml"
    path.write_text(text)
    return path


def _request_of(server: ThreadingHTTPServer, marker: str) -> dict[str, Any]:
    """The one chat request whose conversation holds ``marker`` (the node's prompt)."""
    found = [r for r in server.requests if marker in str(r["messages"])]  # type: ignore[attr-defined]
    assert len(found) == 1, found
    return found[0]


def _system(request: dict[str, Any]) -> str:
    return "\n".join(
        str(m["content"]) for m in request["messages"] if m["role"] in ("system", "developer")
    )


def _tools(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def _kind_tools(request: dict[str, Any]) -> set[str]:
    """The tools the model was offered that a kind decides on: every node also has
    ``push-report`` (checked here), whatever its kind, and may have others no kind
    removes (``KIND_FIXED_TOOLS``)."""
    offered = _tools(request)
    assert "push-report" in offered
    return offered - set(KIND_FIXED_TOOLS)


def test_builtin_kinds_are_listed_and_readable(kclient: httpx.Client) -> None:
    listing = kclient.get("/v1/kinds").json()
    names = [k["name"] for k in listing["kinds"]]
    assert {"general", "coder", "researcher", "reviewer", "planner"} <= set(names)
    assert names == sorted(names)
    coder = kclient.get("/v1/kinds/coder").json()
    assert coder["source"] == "builtin" and coder["skills"] == ["code_verification"]
    missing = kclient.get("/v1/kinds/no-such-kind")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "kind_not_found"


def test_a_toml_kind_sets_instruction_model_and_tools(
    kinds_daemon: Daemon, kclient: httpx.Client, openai_server: ThreadingHTTPServer, tmp_path: Path
) -> None:
    path = _kind_file(
        kinds_daemon,
        "auditor",
        f'description = "Audits ledgers"\ninstruction = "{MARKER}"\n'
        'model = "openai:gpt-kind"\ntools = ["fs-read-file", "fs-g*"]\n',
    )
    kind = kclient.get("/v1/kinds/auditor").json()
    assert kind["source"] == "file" and kind["path"] == str(path)
    assert kind["model"] == "openai:gpt-kind" and not kind["overrides_builtin"]

    node = kclient.post(
        "/v1/nodes", json={"prompt": "audit-prompt-1", "kind": "auditor", "cwd": str(tmp_path)}
    ).json()
    assert (node["kind"], node["model"]) == ("auditor", "openai:gpt-kind")
    assert wait_settled(kclient, node["node_id"])["outcome"]["output_text"] == "Hello there!"
    request = _request_of(openai_server, "audit-prompt-1")
    assert request["model"] == "gpt-kind"
    assert MARKER in _system(request)
    # The kind keeps only its tools, though the node's scopes allow every tool.
    assert _kind_tools(request) == {"fs-read-file", "fs-glob", "fs-grep"}


def test_the_create_model_beats_the_kind_model(
    kinds_daemon: Daemon, kclient: httpx.Client, openai_server: ThreadingHTTPServer
) -> None:
    _kind_file(kinds_daemon, "auditor2", f'instruction = "{MARKER}"\nmodel = "openai:gpt-kind"\n')
    body = {"prompt": "audit-prompt-2", "kind": "auditor2", "model": "openai:gpt-create"}
    node = kclient.post("/v1/nodes", json=body).json()
    wait_settled(kclient, node["node_id"])
    assert _request_of(openai_server, "audit-prompt-2")["model"] == "gpt-create"


def test_scopes_still_cap_a_kinds_tools(
    kinds_daemon: Daemon, kclient: httpx.Client, openai_server: ThreadingHTTPServer, tmp_path: Path
) -> None:
    _kind_file(
        kinds_daemon,
        "capped",
        'instruction = "Work."\nmodel = "openai:gpt-5"\n'
        'tools = ["fs-*", "bash-run", "ask-*", "todo-*"]\nskills = ["planner"]\n',
    )
    body = {"prompt": "capped-prompt", "kind": "capped", "scopes": ["ask"], "cwd": str(tmp_path)}
    node = kclient.post("/v1/nodes", json=body).json()
    wait_settled(kclient, node["node_id"])
    request = _request_of(openai_server, "capped-prompt")
    # No `act`: no file or shell tools; the planner skill's todo tools need no scope.
    assert _kind_tools(request) == {
        "ask-questions",
        "todo-add",
        "todo-update",
        "todo-complete",
        "todo-list",
    }
    assert "SKILLS:" in _system(request) and "planner" in _system(request)


def test_a_kind_skill_needing_act_is_left_out_without_it(
    kclient: httpx.Client, openai_server: ThreadingHTTPServer, tmp_path: Path
) -> None:
    body = {
        "prompt": "coder-prompt",
        "kind": "coder",
        "model": "openai:gpt-5",
        "scopes": [],
        "cwd": str(tmp_path),
    }
    node = kclient.post("/v1/nodes", json=body).json()
    wait_settled(kclient, node["node_id"])
    request = _request_of(openai_server, "coder-prompt")
    assert _kind_tools(request) == {"get-current-time"}
    assert "code-verification" not in _system(request)

    body = {**body, "prompt": "coder-prompt-act", "scopes": ["act"]}
    node = kclient.post("/v1/nodes", json=body).json()
    wait_settled(kclient, node["node_id"])
    request = _request_of(openai_server, "coder-prompt-act")
    assert {"fs-edit-file", "bash-run"} <= _tools(request)
    assert "code-verification" in _system(request)


def test_unknown_kind_is_refused_with_the_known_ones(kclient: httpx.Client) -> None:
    answer = kclient.post("/v1/nodes", json={"prompt": "x", "kind": "wizard"})
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "unknown_kind"
    assert "general" in error["details"]["known"] and "general" in error["message"]
    assert all(n["kind"] != "wizard" for n in kclient.get("/v1/nodes").json())


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("instruction = ", "not valid TOML"),
        ('instruction = "x"\ncolour = "red"\n', "unknown keys ['colour']"),
        ('instruction = "x"\ntools = ["telepathy"]\n', "matches no tool"),
        ('instruction = "x"\nskills = ["juggling"]\n', "unknown skills ['juggling']"),
        ('description = "no instruction"\n', "`instruction` must be a non-empty string"),
    ],
)
def test_a_broken_kind_file_is_reported_not_fatal(
    kinds_daemon: Daemon, kclient: httpx.Client, text: str, reason: str
) -> None:
    path = _kind_file(kinds_daemon, "broken", text)
    try:
        listing = kclient.get("/v1/kinds").json()
        (problem,) = [p for p in listing["problems"] if p["name"] == "broken"]
        assert problem["path"] == str(path) and reason in problem["message"]
        assert "broken" not in [k["name"] for k in listing["kinds"]]
        answer = kclient.post("/v1/nodes", json={"prompt": "x", "kind": "broken"})
        assert answer.status_code == 422
        assert answer.json()["error"]["code"] == "invalid_kind"
        assert reason in answer.json()["error"]["message"]
        assert kclient.get("/v1/kinds/broken").json()["error"]["code"] == "invalid_kind"
        # The daemon and the other kinds are unaffected.
        node = kclient.post("/v1/nodes", json={"prompt": "hi", "kind": "reviewer"}).json()
        assert wait_settled(kclient, node["node_id"])["node_status"] == "completed"
    finally:
        path.unlink()
    assert kclient.get("/v1/kinds/broken").status_code == 404


def test_a_toml_kind_overrides_a_builtin(
    kinds_daemon: Daemon, kclient: httpx.Client, openai_server: ThreadingHTTPServer
) -> None:
    path = _kind_file(
        kinds_daemon, "general", f'instruction = "{MARKER} general"\nmodel = "openai:gpt-5"\n'
    )
    try:
        general = kclient.get("/v1/kinds/general").json()
        assert general["overrides_builtin"] and general["source"] == "file"
        node = kclient.post("/v1/nodes", json={"prompt": "general-prompt"}).json()
        assert node["kind"] == "general"
        wait_settled(kclient, node["node_id"])
        assert f"{MARKER} general" in _system(_request_of(openai_server, "general-prompt"))
    finally:
        path.unlink()
    assert kclient.get("/v1/kinds/general").json()["source"] == "builtin"


def test_a_fork_keeps_its_originals_kind_unless_told_otherwise(kclient: httpx.Client) -> None:
    original = kclient.post("/v1/nodes", json={"prompt": "hi", "kind": "reviewer"}).json()
    wait_settled(kclient, original["node_id"])
    fork = kclient.post(
        "/v1/nodes", json={"prompt": "again", "fork_from": original["node_id"]}
    ).json()
    assert (fork["kind"], fork["profile"]) == ("reviewer", "default")
    other = kclient.post(
        "/v1/nodes", json={"prompt": "x", "fork_from": original["node_id"], "kind": "planner"}
    ).json()
    assert other["kind"] == "planner"
