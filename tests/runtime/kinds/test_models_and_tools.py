"""Kinds, continued: model precedence, what forks and children pass on, kind files on
disk, and which tools a kind controls (for its skills too)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_settled, write_script
from tests.support.models import fake_openai

from heron.runtime.kinds._service import (
    BUILTIN_KINDS,
    MAX_KIND_FILE,
    keeps,
    kind_skills,
    parse_kind,
)
from heron.runtime.kinds._service import skill_tools as skill_tool_names
from heron.runtime.nodes._tools import KIND_FIXED_TOOLS, node_tools
from heron.runtime.orchestration._tools import (
    CloseChildTool,
    ListChildrenTool,
    MessageChildTool,
    SpawnChildTool,
    WaitChildrenTool,
)
from heron.runtime.reports._service import PUSH_REPORT
from heron.tools import BashTools, bash_tools


@pytest.fixture(scope="module")
def openai_server() -> Iterator[ThreadingHTTPServer]:
    with fake_openai() as server:
        yield server


@pytest.fixture(scope="module")
def mdaemon(
    tmp_path_factory: pytest.TempPathFactory, openai_server: ThreadingHTTPServer
) -> Iterator[Daemon]:
    home = tmp_path_factory.mktemp("kind-models-home")
    env = {
        "HERON_PROVIDER": write_script(home, "default", ["Hello."] * 8),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{openai_server.server_address[1]}/v1",
    }
    daemon = Daemon(home, env).start()
    kinds = home / "kinds"
    kinds.mkdir()
    (kinds / "k-a.toml").write_text('instruction = "A."\nmodel = "openai:gpt-a"\n')
    (kinds / "k-b.toml").write_text('instruction = "B."\nmodel = "openai:gpt-b"\n')
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def mclient(mdaemon: Daemon) -> Iterator[httpx.Client]:
    with mdaemon.client() as c:
        yield c


def _create(client: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = client.post("/v1/nodes", json={"prompt": "hi", **body})
    assert answer.status_code == 201, answer.text
    node: dict[str, Any] = answer.json()
    wait_settled(client, node["node_id"])
    return node


# -- model precedence: create > kind > profile ------------------------------------


def test_model_precedence_is_create_then_kind_then_profile(mclient: httpx.Client) -> None:
    body = {"name": "prec", "default_model": "openai:gpt-profile"}
    assert mclient.post("/v1/profiles/ensure", json=body).status_code == 200
    assert _create(mclient, profile="prec", kind="k-a")["model"] == "openai:gpt-a"
    assert _create(mclient, profile="prec", kind="general")["model"] == "openai:gpt-profile"
    given = _create(mclient, profile="prec", kind="k-a", model="openai:gpt-given")
    assert given["model"] == "openai:gpt-given"


def test_a_fork_passes_on_only_the_model_it_was_given(mclient: httpx.Client) -> None:
    original = _create(mclient, kind="k-a")
    assert original["model"] == "openai:gpt-a"
    same = _create(mclient, fork_from=original["node_id"])
    assert (same["kind"], same["model"]) == ("k-a", "openai:gpt-a")
    # Another kind: its model, not the one the original's kind implied.
    other = _create(mclient, fork_from=original["node_id"], kind="k-b")
    assert (other["kind"], other["model"]) == ("k-b", "openai:gpt-b")
    # A model the original was given explicitly goes with it, whatever the fork's kind.
    chosen = _create(mclient, kind="k-a", model="openai:gpt-given")
    fork = _create(mclient, fork_from=chosen["node_id"], kind="k-b")
    assert fork["model"] == "openai:gpt-given"
    # So does one set by a PATCH.
    patch = {"model": "openai:gpt-patched"}
    assert mclient.patch(f"/v1/nodes/{original['node_id']}/config", json=patch).status_code == 200
    patched = _create(mclient, fork_from=original["node_id"], kind="k-b")
    assert patched["model"] == "openai:gpt-patched"


def test_a_child_of_another_kind_gets_that_kinds_model(
    mdaemon: Daemon, mclient: httpx.Client
) -> None:
    spawn = {"name": "spawn-child", "arguments": {"prompt": "p", "name": "c1", "kind": "k-b"}}
    boss = write_script(mdaemon.home, "boss", [{"tool_calls": [spawn]}, *["Done."] * 4])
    (mdaemon.home / "kinds" / "boss.toml").write_text(f'instruction = "Boss."\nmodel = "{boss}"\n')
    parent = _create(mclient, kind="boss", mode="orchestrator")
    assert parent["model"] == boss
    (child,) = [n for n in mclient.get("/v1/nodes").json() if n["parent"] == parent["node_id"]]
    # Not the parent's model (its kind's): the child's own kind decides.
    assert (child["kind"], child["model"]) == ("k-b", "openai:gpt-b")


def test_a_profile_whose_default_kind_vanished_says_so(
    mdaemon: Daemon, mclient: httpx.Client
) -> None:
    path = mdaemon.home / "kinds" / "fleeting.toml"
    path.write_text('instruction = "Soon gone."\n')
    body = {"name": "orphaned", "default_kind": "fleeting"}
    assert mclient.post("/v1/profiles/ensure", json=body).status_code == 200
    path.unlink()
    answer = mclient.post("/v1/nodes", json={"prompt": "x", "profile": "orphaned"})
    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "unknown_kind"
    assert "the default kind of profile 'orphaned'" in answer.json()["error"]["message"]


# -- kind files ---------------------------------------------------------------


def test_odd_kind_files_are_skipped_or_listed(mdaemon: Daemon, mclient: httpx.Client) -> None:
    kinds = mdaemon.home / "kinds"
    (kinds / "folder.toml").mkdir()
    big = kinds / "huge.toml"
    big.write_text('instruction = "x"\n' + "# padding\n" * (MAX_KIND_FILE // 10 + 1))
    try:
        listing = mclient.get("/v1/kinds").json()
        names = {p["name"]: p["message"] for p in listing["problems"]}
        assert "folder" not in names and "folder" not in [k["name"] for k in listing["kinds"]]
        assert f"may have {MAX_KIND_FILE} at most" in names["huge"]
        answer = mclient.post("/v1/nodes", json={"prompt": "x", "kind": "huge"})
        assert answer.json()["error"]["code"] == "invalid_kind"
    finally:
        big.unlink()
        (kinds / "folder.toml").rmdir()


# -- which tools a kind controls --------------------------------------------------


def test_the_tools_no_kind_removes_are_the_finishing_and_child_tools() -> None:
    children = (SpawnChildTool, MessageChildTool, WaitChildrenTool, ListChildrenTool)
    names = {t.name for t in (*children, CloseChildTool)} | {"submit-result", "decline"}
    assert set(KIND_FIXED_TOOLS) == names | {PUSH_REPORT}
    for fixed in KIND_FIXED_TOOLS:
        with pytest.raises(ValueError, match="always kept, whatever the kind"):
            parse_kind("k", Path("k.toml"), f'instruction = "x"\ntools = ["{fixed}"]\n')


def test_a_kind_may_name_the_memory_and_cron_tools() -> None:
    # The resources' tools are among those a kind keeps or drops, like the workspace's.
    for pattern in ("memory-*", "memory-search", "memory-write", "cron-*", "cron-list"):
        kind = parse_kind("k", Path("k.toml"), f'instruction = "x"\ntools = ["{pattern}"]\n')
        assert kind.tools == (pattern,)


def test_a_kinds_skills_need_only_tools_it_keeps() -> None:
    for kind in BUILTIN_KINDS:  # read-only built-ins stay read-only, and keep their skills
        keep = keeps(kind.tools)
        for skill in kind.skills:
            assert keep is None or all(keep(t) for t in skill_tool_names(skill)), kind.name
    text = 'instruction = "x"\ntools = ["fs-read-file"]\nskills = ["code_verification"]\n'
    with pytest.raises(ValueError, match="needs tools that `tools` leaves out"):
        parse_kind("k", Path("k.toml"), text)


async def _nothing(*_: Any) -> None:
    return None


def _made(tmp_path: Path, shells: list[BashTools], **kw: Any) -> Any:
    def shell(workspace: Path) -> BashTools:
        shells.append(bash_tools(workspace))
        return shells[-1]

    made = node_tools(
        scopes=kw.pop("scopes", None),
        output_schema=None,
        workspace=tmp_path,
        submit=_nothing,
        decline=_nothing,
        shell=shell,
        **kw,
    )
    return made, shell


def test_skills_share_the_nodes_own_shell(tmp_path: Path) -> None:
    shells: list[BashTools] = []
    made, shell = _made(tmp_path, shells)
    skills = kind_skills(("code_verification",), workspace=tmp_path, made=made, shell=shell)
    try:
        assert [s.name for s in skills] == ["code-verification"]
        assert len(shells) == 1 and made.shell is shells[0]  # the node's, made once
        assert made.closers == []  # owned by the node (its jobs), not by the run
    finally:
        asyncio.run(shells[0].aclose())


def test_a_skill_whose_tools_the_node_may_not_have_is_left_out(tmp_path: Path) -> None:
    shells: list[BashTools] = []
    made, shell = _made(tmp_path, shells, keep=keeps(("fs-read-file", "fs-grep")))
    skills = kind_skills(("code_verification",), workspace=tmp_path, made=made, shell=shell)
    assert skills == [] and shells == []
    assert {t.name for t in made.tools} == {"fs-read-file", "fs-grep"}
    made, shell = _made(tmp_path, shells, scopes=["ask"])  # no act: no file skill
    skills = kind_skills(("planner", "present"), workspace=tmp_path, made=made, shell=shell)
    assert [s.name for s in skills] == ["planner"]
    assert not [t.name for t in made.tools if t.name.startswith(("present", "fs", "bash"))]
