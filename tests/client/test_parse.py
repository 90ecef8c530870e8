"""``client.nodes.parse``: a typed result, or the failure as a value, on both clients."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import pydantic
import pytest
from tests.support.daemon import Daemon

from heron import api
from heron.client import ParsedFailure, ParsedOutcome, ParsedResult

from ._both import MODES, On, on_client


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


class Package(pydantic.BaseModel):
    """What the scripted agent reports."""

    name: str
    version: str


def submit(result: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "submit-result", "arguments": {"result": result}}]}


async def test_a_model_class_parses_the_result_into_an_instance(on: On, scripts: Any) -> None:
    model = scripts("pkg", [submit({"name": "heron", "version": "0.1.0"})])
    run: ParsedOutcome[Package] = await on(
        lambda c: c.nodes.parse(prompt="report", model=model, output_schema=Package, timeout=30)
    )
    assert isinstance(run, ParsedResult) and isinstance(run, api.NodeResult)
    assert run.kind == "result"
    assert run.output_parsed == Package(name="heron", version="0.1.0")
    assert run.structured_result == {"name": "heron", "version": "0.1.0"}
    # The node parse made is named, so it can be reached afterwards.
    node = await on(lambda c: c.nodes.retrieve(run.node_id))
    assert node.status == "completed" and node.has_output_schema


async def test_a_json_schema_gives_the_raw_value(on: On, scripts: Any) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    model = scripts("raw", [submit({"n": 3}), "ok"])
    run = await on(lambda c: c.nodes.parse({"prompt": "n", "model": model}, output_schema=schema))
    assert run.kind == "result" and run.output_parsed == {"n": 3}
    text = await on(
        lambda c: c.nodes.parse(prompt="n", model=model, output_schema=json.dumps(schema))
    )
    assert text.kind == "result" and text.output_parsed == {"n": 3}


async def test_a_submission_that_misses_the_schema_goes_back_to_the_agent(
    on: On, scripts: Any
) -> None:
    # The daemon got the class's JSON schema: it sends the first submission back.
    model = scripts("retry", [submit({"name": "heron"}), submit({"name": "h", "version": "2"})])
    run = await on(lambda c: c.nodes.parse(prompt="r", model=model, output_schema=Package))
    assert run.kind == "result" and run.output_parsed.version == "2"


async def test_a_decline_is_returned_with_no_parsed_output(on: On, scripts: Any) -> None:
    decline = {"name": "decline", "arguments": {"reason": "no repo", "code": "no_repo"}}
    model = scripts("decline", [{"tool_calls": [decline]}])
    run = await on(lambda c: c.nodes.parse(prompt="r", model=model, output_schema=Package))
    assert isinstance(run, ParsedFailure) and isinstance(run, api.NodeFailure)
    assert run.kind == "failure" and run.reason == "declined" and run.output_parsed is None
    assert run.declined == api.Declined(reason="no repo", code="no_repo", retryable=False)
    assert (await on(lambda c: c.nodes.retrieve(run.node_id))).status == "failed"


async def test_a_provider_failure_is_returned_with_its_detail(on: On, scripts: Any) -> None:
    model = scripts("broken", [{"error": "bad request", "status": 400}])
    run = await on(lambda c: c.nodes.parse(prompt="r", model=model, output_schema=Package))
    assert run.kind == "failure" and run.reason == "provider_error"
    assert run.output_parsed is None and run.detail is not None


class Picky(pydantic.BaseModel):
    """A class stricter than its JSON schema (which the daemon enforces)."""

    name: str

    @pydantic.field_validator("name")
    @classmethod
    def _not_anonymous(cls, value: str) -> str:
        if value == "anonymous":
            raise ValueError("a real name, please")
        return value


async def test_a_result_the_class_rejects_is_returned_as_an_invalid_result_failure(
    on: On, scripts: Any
) -> None:
    # An agent's outcome is returned, never thrown: not even a pydantic.ValidationError.
    model = scripts("picky", [submit({"name": "anonymous"})])
    params = {"prompt": "r", "model": model, "node_id": f"picky-{on.mode}"}
    run = await on(lambda c: c.nodes.parse(params, output_schema=Picky))
    assert isinstance(run, ParsedFailure)
    assert run.kind == "failure" and run.reason == "invalid_result"
    assert run.output_parsed is None and run.node_id == f"picky-{on.mode}"
    assert run.structured_result == {"name": "anonymous"}
    assert run.detail is not None and run.detail.error_type == "ValidationError"
    assert "a real name" in run.detail.message and "Picky" in run.detail.message
    # The node itself settled with its result, kept unparsed.
    poll = await on(lambda c: c.nodes.outcome(f"picky-{on.mode}"))
    assert poll.outcome is not None and poll.outcome.kind == "result"
    assert poll.outcome.structured_result == {"name": "anonymous"}


@dataclasses.dataclass
class Release:
    """A dataclass schema: pydantic validates it like a model."""

    tag: str
    assets: list[str]


async def test_any_class_pydantic_validates_is_a_schema(on: On, scripts: Any) -> None:
    # The daemon enforces the dataclass's JSON schema: the first submission goes back.
    model = scripts("release", [submit({"tag": "v1"}), submit({"tag": "v1", "assets": ["a"]})])
    run = await on(lambda c: c.nodes.parse(prompt="r", model=model, output_schema=Release))
    assert run.kind == "result" and run.output_parsed == Release(tag="v1", assets=["a"])
    count = await on(
        lambda c: c.nodes.parse(prompt="n", model=scripts("n", [submit(7)]), output_schema=int)
    )
    assert count.kind == "result" and count.output_parsed == 7


class Opaque:
    """A class pydantic has no schema for."""


@pytest.mark.parametrize("schema", [Opaque, 3, None, Package(name="a", version="1")])
async def test_an_output_schema_of_the_wrong_type_is_refused_locally(on: On, schema: Any) -> None:
    with pytest.raises(TypeError, match="output_schema"):
        await on(lambda c: c.nodes.parse(prompt="r", output_schema=schema))
