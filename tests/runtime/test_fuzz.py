"""Fuzz the real daemon from its own ``/openapi.json`` with schemathesis.

Every operation gets valid and invalid requests (over TCP, with the token);
no answer may be a 5xx, every answer must be documented and match its schema,
and invalid input must be refused.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import Daemon, write_script

pytestmark = pytest.mark.slow

TOKEN = "fuzz-token-for-the-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES_PER_OPERATION = 20

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


@pytest.fixture(scope="module")
def tcp_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, str]]:
    """A daemon listening on a free loopback port; yields it and its base URL."""
    home: Path = tmp_path_factory.mktemp("heron-fuzz")
    # Nodes the fuzzer creates run this one-turn script on the daemon's default provider.
    default = write_script(home, "default", ["Fuzzed and done."])
    daemon = Daemon(home, {"HERON_PROVIDER": default, "HERON_TOKEN": TOKEN})
    daemon.start("--listen", "127.0.0.1:0")
    try:
        with daemon.client() as client:
            listeners = client.get("/v1/status").json()["listeners"]
        address = next(item["address"] for item in listeners if item["kind"] == "tcp")
        yield daemon, f"http://{address}"
    finally:
        daemon.stop()


def confine(case: schemathesis.Case, scratch: Path) -> None:
    """Keep what fuzzed host routes do inside ``scratch``: files are read, listed and
    written below it; commands start there, run nothing (``:``) and wait at most a second.

    A command's ``env`` is emptied: bash acts on some variables before running anything
    (``BASH_ENV`` names a file it sources, ``BASH_FUNC_*`` define functions, ``:`` too).
    Fuzzed crons are made paused (a ``* * * * * *`` one would make a node every second
    until the daemon stops; the fuzzer knows no real cron id to resume). Only values that
    are valid are changed, so a negative case stays invalid.
    """
    if case.operation.path in ("/v1/files/peek", "/v1/files/list"):
        query = case.query
        if isinstance(query, dict) and isinstance(query.get("path"), str):
            if query["path"].startswith("/"):
                query["path"] = f"{scratch}{query['path']}"
    body = case.body
    if not isinstance(body, dict):
        return
    if case.operation.method.upper() == "POST" and case.operation.path == "/v1/crons":
        # Only a missing or boolean ``paused``: any other value is what makes a
        # negative case invalid, and must stay so.
        if isinstance(body.get("paused", False), bool):
            body["paused"] = True
    if case.operation.path == "/v1/files/write" and isinstance(body.get("path"), str):
        if body["path"].startswith("/"):
            body["path"] = f"{scratch}{body['path']}"
    if case.operation.path == "/v1/bash":
        if isinstance(body.get("cwd"), str) and body["cwd"].startswith("/"):
            body["cwd"] = f"{scratch}{body['cwd']}"
        if isinstance(body.get("command"), str) and body["command"]:
            body["command"] = f": {shlex.quote(body['command'])}"
        if isinstance(body.get("timeout"), int | float) and body["timeout"] > 1:
            body["timeout"] = 1
        env = body.get("env")
        if isinstance(env, dict) and all(isinstance(v, str) for v in env.values()):
            body["env"] = {}


@pytest.fixture(scope="module")
def api_schema(tcp_daemon: tuple[Daemon, str]) -> Any:
    """The daemon's OpenAPI document, loaded over TCP with the bearer token."""
    _, base_url = tcp_daemon
    # 413 is a refusal too: a negative case can be invalid by being over the body limit.
    config = schemathesis.Config.from_dict(
        {"checks": {"negative_data_rejection": {"expected-statuses": [400, 404, 405, 413, 422]}}}
    )
    return schemathesis.openapi.from_url(
        f"{base_url}/openapi.json", config=config, headers=AUTH, timeout=10
    )


# schemathesis's pytest plugin does not run on pytest 9.2 (it reads a removed private
# attribute), so each operation is driven through its Hypothesis strategy instead.
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_conforms_to_its_schema(
    api_schema: Any, tcp_daemon: tuple[Daemon, str], mode: GenerationMode, tmp_path: Path
) -> None:
    """Valid and invalid requests to every operation: never a 5xx, always a documented,
    schema-true answer, and invalid input refused."""
    failures: list[str] = []
    sent = 0
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10

    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,  # nothing written under the work tree
            derandomize=True,  # the same cases on every run: a failure reproduces
            suppress_health_check=list(HealthCheck),
        )
        def exercise(case: schemathesis.Case) -> None:
            # A long poll on a fuzzed node could hold for 25 s: keep fuzzed waits short.
            if isinstance(case.query, dict) and isinstance(case.query.get("wait"), int):
                case.query["wait"] = min(case.query["wait"], 1)
            confine(case, tmp_path)
            nonlocal sent
            sent += 1
            case.call_and_validate(headers=AUTH, checks=CHECKS, timeout=30)

        try:
            exercise()
        except Unsatisfiable:
            # No invalid request exists for an operation without parameters or body.
            assert mode is GenerationMode.NEGATIVE, operation.label
        except Exception as exc:
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)
    assert sent >= 100, f"only {sent} requests were sent"
    # Whatever crons the fuzzer made (through their routes) wait, paused: none fires.
    with httpx.Client(headers=AUTH, timeout=30) as client:
        active = client.get(f"{tcp_daemon[1]}/v1/crons", params={"paused": "false"})
    assert active.status_code == 200 and active.json() == [], active.text


def test_confine_keeps_host_routes_in_the_scratch_folder(tmp_path: Path) -> None:
    """What the fuzzer sends to host routes reads, writes and runs nothing outside."""

    def case(path: str, body: Any = None, query: Any = None) -> Any:
        operation = SimpleNamespace(path=path, method="GET" if query is not None else "POST")
        made = SimpleNamespace(operation=operation, body=body, query=query)
        confine(made, tmp_path)  # a stand-in with the fields confine reads
        return made

    assert case("/v1/files/peek", query={"path": "/etc/passwd"}).query == {
        "path": f"{tmp_path}/etc/passwd"
    }
    assert case("/v1/files/list", query={"path": "/"}).query == {"path": f"{tmp_path}/"}
    written = case("/v1/files/write", body={"path": "/etc/x", "content": ""}).body
    assert written["path"] == f"{tmp_path}/etc/x"
    env = {"BASH_ENV": "/tmp/evil", "BASH_FUNC_:%%": "() { rm -rf ~; }"}
    run = case("/v1/bash", body={"command": "rm -rf ~", "cwd": "/", "timeout": 60, "env": env})
    assert run.body == {"command": ": 'rm -rf ~'", "cwd": f"{tmp_path}/", "timeout": 1, "env": {}}
    invalid = case("/v1/bash", body={"command": "x", "cwd": "/", "env": {"A": 1}}).body
    assert invalid["env"] == {"A": 1}  # an invalid value stays: the case must stay invalid
    assert case("/v1/crons", body={"schedule": "* * * * * *"}).body["paused"] is True
    assert case("/v1/crons", body={"paused": "no"}).body["paused"] == "no"  # stays invalid
