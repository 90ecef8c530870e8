"""Fuzz the real daemon from its own ``/openapi.json`` with schemathesis.

Every operation gets valid and invalid requests (over TCP, with the token) in every
phase schemathesis has (examples, coverage, fuzzing, stateful) under every check: no
answer may be a 5xx, every answer must be documented and match its schema (the event
stream's events too), invalid input must be refused and valid input accepted, and a
method a path does not serve answers 405 with the right ``Allow``.

At least 5,000 cases, with a fixed seed. A case's time is mostly waiting: for the
daemon's answer, for a long poll, for an event stream that never ends. So four
requests are in flight at once, long polls wait at most a second and streams are
read for three: on two busy cores ~5,400 cases took 195 s where the earlier
settings (two workers, streams read until schemathesis's own timeout) took 410 s
for ~5,100. ``HERON_FUZZ_EXAMPLES=80`` runs a longer fuzz by hand.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import requests
import schemathesis
import schemathesis.hooks
from schemathesis.engine import events
from tests.support.daemon import Daemon, write_script

from heron.runtime.lineage._service import RECYCLE_TIMEOUT

pytestmark = pytest.mark.slow

TOKEN = "fuzz-token-for-the-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES_PER_OPERATION = int(os.environ.get("HERON_FUZZ_EXAMPLES", "36"))
"""Hypothesis examples per operation in the fuzzing and stateful phases (the coverage
phase adds ~3,000 of its own). ``HERON_FUZZ_EXAMPLES`` raises it for a longer run by hand."""
MIN_CASES = 5000

RECYCLE_WAIT = RECYCLE_TIMEOUT + 10
"""How long a recycle may take: its summary's own limit, and a little."""
"""At least this many cases, every one a request (~5,200 at 36 examples)."""
WORKERS = 4
"""Requests in flight at once: a case's time is mostly the daemon's answer (database
threads and the event loop taking turns), so four overlap where two waited."""
STREAM_SECONDS = 3
"""How long a fuzzed event stream is read: a stream of a node that lives on never ends,
and its replay (what is checked) comes at once; schemathesis would read it 30 s."""


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
    Fuzzed crons are made and kept paused (a ``* * * * * *`` one would make a node every
    second until the daemon stops): a resume goes to a cron that does not exist. Only values that
    are valid are changed, so a negative case stays invalid.
    """
    if case.operation.path in ("/v1/files/peek", "/v1/files/list"):
        query = case.query
        if isinstance(query, dict) and isinstance(query.get("path"), str):
            if query["path"].startswith("/"):
                query["path"] = f"{scratch}{query['path']}"
    if case.operation.path == "/v1/crons/{cron_id}/resume":
        # A cron the fuzzer made (it reuses ids it was given) must stay paused.
        if isinstance(case.path_parameters, dict):
            case.path_parameters["cron_id"] = "cron-the-fuzzer-never-made"
    body = case.body
    if not isinstance(body, dict):
        return
    method = case.operation.method.upper()
    if method == "POST" and case.operation.path == "/v1/crons":
        # Only a missing or boolean ``paused``: any other value is what makes a
        # negative case invalid, and must stay so.
        if isinstance(body.get("paused", False), bool):
            body["paused"] = True
    if method == "PATCH" and case.operation.path == "/v1/crons/{cron_id}":
        if isinstance(body.get("paused"), bool):
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


def shorten_wait(case: schemathesis.Case) -> None:
    """A long poll on a fuzzed node could hold for 25 s: a valid ``wait`` (0-25, a number
    or, as the coverage phase sends it, its digits) of more than 1 is made 1."""
    query = case.query
    if not isinstance(query, dict):
        return
    wait = query.get("wait")
    if isinstance(wait, int) and not isinstance(wait, bool) and 1 < wait <= 25:
        query["wait"] = 1
    elif isinstance(wait, str) and wait.isascii() and wait.isdigit() and 1 < int(wait) <= 25:
        query["wait"] = "1"


SEED = 20261202
"""The run's seed: the same requests every time, so a failure reproduces."""

CHECKS_CONFIG = {
    # 413 is a refusal too: a negative case can be invalid by being over the body limit.
    "negative_data_rejection": {"expected-statuses": [400, 401, 404, 405, 413, 415, 422]},
}

REFUSED_BY_STATE = {
    "unknown_profile": "a well-formed profile name that was never ensured",
    "not_a_child": "a well-formed node id that is not the node's child",
    "invalid_cwd": "an absolute directory that does not exist",
    "invalid_model": "a known kind whose key is not set or whose script file is missing",
    "not_a_file": "a path that is a directory (the scratch folder itself)",
    "not_a_directory": "a path whose parent is a file",
    "unknown_kind": "a well-formed kind name that no kind file defines",
    "not_a_git_repository": "a worktree asked for in a directory outside any git checkout",
    "profile_mismatch": "a human request's profile that is not its node's (any other node's)",
}
"""Refusals that depend on what exists, not on the request's shape (error code: what)."""

REFUSED_BY_MEANING = {
    "invalid_schedule": "a cron expression whose fields are out of range",
    "invalid_duration": "a duration of 0, or over a year (a sum a pattern cannot bound)",
    "invalid_deadline": "a duration of 0, or over a year (a sum a pattern cannot bound)",
    "invalid_pattern": "a regular expression that does not compile",
    "invalid_query": "a search with no word in it (only punctuation)",
    "invalid_questions": "a human request with neither questions nor a body",
    "invalid_response": "a response with neither answers nor a text",
    "invalid_outcome_delivery": "an outcome delivery on a node without a parent",
    "invalid_output_schema": "an output schema given as text that is not JSON, or with a "
    "$ref that leads nowhere",
    "worktree_needs_cwd": "a worktree asked for with no cwd to make it from (one field "
    "depending on another's value)",
}
"""Refusals of a meaning no JSON Schema can state (error code: what)."""

NEVER_EXCUSED = {
    "invalid_cwd": "must be an absolute path",
    "invalid_model": "unknown provider",
    "invalid_outcome_delivery": "must be {action",
}
"""Refusals of a shape the schema states (error code: words of the message): one of these
on a schema-valid request is a mismatch, whatever the code's excuse above."""

EXACTLY_ONE = "give exactly one of path or slug"
"""``/v1/memory/resolve``: two optional query parameters, exactly one given."""


def explained(finding: Finding) -> bool:
    """Whether ``finding`` is a refusal of a valid-looking request for one of the reasons
    above (every other finding fails the run)."""
    code = finding.code or ""
    if finding.title == "Created resource not found":
        # The stateful phase takes any node for one with a worktree (only some have one).
        return code == "no_worktree"
    if code in NEVER_EXCUSED and NEVER_EXCUSED[code] in finding.answer:
        return False
    return finding.title == "Schema-valid request rejected" and (
        code in REFUSED_BY_STATE
        or code in REFUSED_BY_MEANING
        or (code == "invalid_request" and EXACTLY_ONE in finding.answer)
    )


@dataclass(frozen=True, slots=True)
class Finding:
    """One failed check of one request."""

    operation: str
    title: str
    status: int | None
    code: str | None
    message: str
    answer: str
    request: str

    def __str__(self) -> str:
        return (
            f"{self.operation}: {self.title} ({self.status} {self.code}): {self.message}"
            f" -- {self.answer[:160]}\n    {self.request}"
        )


def _error(response: Any) -> dict[str, Any]:
    try:
        body = json.loads(response.content)
    except (ValueError, TypeError, AttributeError):
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _error_code(response: Any) -> str | None:
    code = _error(response).get("code")
    return code if isinstance(code, str) else None


def _error_message(response: Any) -> str:
    error = _error(response)
    return f"{error.get('message', '')} {json.dumps(error.get('details'))}"[:600]


def run_schemathesis(base_url: str, scratch: Path) -> tuple[int, list[Finding]]:
    """Every phase (examples, coverage, fuzzing, stateful) and every check over every
    operation; the number of requests generated, and what failed."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "headers": AUTH,
            "workers": WORKERS,
            "request-timeout": 30,
            "checks": CHECKS_CONFIG,
            "generation": {
                "max-examples": EXAMPLES_PER_OPERATION,
                "database": "none",
                "deterministic": True,
            },
            "operations": [
                {"include-path": "/v1/nodes/{node_id}/events", "request-timeout": STREAM_SECONDS},
                {"include-path": "/v1/events", "request-timeout": STREAM_SECONDS},
                # A recycle waits for the node's model to write a summary (up to
                # RECYCLE_TIMEOUT): a node created with `local` asks the embedded model.
                {"include-path": "/v1/nodes/{node_id}/recycle", "request-timeout": RECYCLE_WAIT},
            ],
        }
    )
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", config=config, timeout=30)

    def before_call(context: Any, case: schemathesis.Case, kwargs: dict[str, Any]) -> None:
        shorten_wait(case)
        confine(case, scratch)

    dispatcher = schemathesis.hooks.GLOBAL_HOOK_DISPATCHER
    dispatcher.register_hook_with_name(before_call, "before_call")
    findings: list[Finding] = []
    errors: list[str] = []
    unsent: list[str] = []
    generated = sent = 0
    try:
        for event in schemathesis.engine.from_schema(schema).execute():
            if isinstance(event, events.FatalError):
                raise AssertionError(f"schemathesis failed: {event.exception!r}")
            if isinstance(event, events.NonFatalError):
                said = f"{event.label}: {type(event.value).__name__}: {event.value}"[:400]
                if isinstance(event.value, requests.RequestException):
                    # A request the daemon never answered (a timeout, a dropped connection).
                    errors.append(said)
                else:
                    # The generator's own failure, in this process (CPython 3.11's `ast` can
                    # raise "recursion depth mismatch" under threads): no request was made.
                    unsent.append(said)
                continue
            if not isinstance(event, events.ScenarioFinished):
                continue
            recorder = event.recorder
            generated += len(recorder.cases)
            sent += len(recorder.interactions)
            for case_id, checks in recorder.checks.items():
                interaction = recorder.interactions.get(case_id)
                response = interaction.response if interaction is not None else None
                for check in checks:
                    if check.failure_info is None:
                        continue
                    failure = check.failure_info.failure
                    finding = Finding(
                        operation=recorder.label,
                        title=failure.title,
                        status=response.status_code if response is not None else None,
                        code=_error_code(response) if response is not None else None,
                        message=(failure.message.splitlines() or [""])[0][:200],
                        answer=_error_message(response),
                        request=check.failure_info.code_sample[:2000],
                    )
                    if finding not in findings:
                        findings.append(finding)
    finally:
        dispatcher.unregister(before_call)
    assert not errors, f"requests that got no answer: {errors}"
    assert len(unsent) <= 3, f"cases the generator failed to make: {unsent}"
    assert sent == generated, f"{generated} cases, but {sent} requests"
    return generated, findings


def test_api_conforms_to_its_schema(tcp_daemon: tuple[Daemon, str], tmp_path: Path) -> None:
    """Every phase and check of schemathesis over every operation: never a 5xx, always a
    documented, schema-true answer, invalid input refused and valid input accepted."""
    daemon, base_url = tcp_daemon
    started = time.monotonic()
    generated, findings = run_schemathesis(base_url, tmp_path)
    took = time.monotonic() - started
    unexplained = [f for f in findings if not explained(f)]
    print(
        f"schemathesis: {generated} cases ({EXAMPLES_PER_OPERATION} examples per operation)"
        f" in {took:.0f} s, {len(findings)} findings, {len(unexplained)} unexplained"
    )
    assert not unexplained, "\n".join(str(f) for f in unexplained)
    assert generated >= MIN_CASES, f"only {generated} cases were run"
    assert "Traceback" not in daemon.log.read_text()
    # Whatever crons the fuzzer made (through their routes) wait, paused: none fires.
    with httpx.Client(headers=AUTH, timeout=30) as client:
        active = client.get(f"{base_url}/v1/crons", params={"paused": "false"})
    assert active.status_code == 200 and active.json() == [], active.text


def test_confine_keeps_host_routes_in_the_scratch_folder(tmp_path: Path) -> None:
    """What the fuzzer sends to host routes reads, writes and runs nothing outside."""

    def case(path: str, body: Any = None, query: Any = None) -> Any:
        operation = SimpleNamespace(path=path, method="GET" if query is not None else "POST")
        made = SimpleNamespace(operation=operation, body=body, query=query, path_parameters={})
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


def test_a_refusal_of_a_shape_the_schema_states_is_never_excused() -> None:
    """``invalid_cwd`` for a directory that is not there is the host's state; for a
    relative path it is a shape the schema must state, so it fails the run."""
    missing = Finding(
        operation="POST /v1/nodes",
        title="Schema-valid request rejected",
        status=422,
        code="invalid_cwd",
        message="Valid data should have been accepted",
        answer="cwd '/nowhere' is not an existing directory null",
        request="",
    )
    assert explained(missing)
    assert not explained(replace(missing, answer="cwd must be an absolute path, not 'x' null"))
    unknown = replace(missing, code="invalid_model", answer="unknown provider 'x': use one of")
    assert not explained(unknown)


def test_shorten_wait_changes_only_valid_long_waits() -> None:
    """A valid wait over a second becomes one; an invalid one stays invalid."""
    for given, kept in ((25, 1), ("25", "1"), (1, 1), (26, 26), ("26", "26"), (-3, -3)):
        case: Any = SimpleNamespace(query={"wait": given})
        shorten_wait(case)
        assert case.query == {"wait": kept}, given
    for given in ("٣", True, "x"):  # not digits to the route
        case = SimpleNamespace(query={"wait": given})
        shorten_wait(case)
        assert case.query == {"wait": given}
