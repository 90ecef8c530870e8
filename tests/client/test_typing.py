"""A user's code calling the client type-checks under ``mypy --strict`` with the types
the methods promise (no annotations needed where the result type is known)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from mypy import api as mypy_api

USER_CODE = """
from typing import Any, assert_type

from pydantic import BaseModel

from heron import api
from heron.client import AsyncHeron, Heron, NodeList, ParsedOutcome, ParsedResult


class Package(BaseModel):
    name: str


def blocking(client: Heron) -> None:
    node = client.nodes.create(prompt="hi", cwd="/repo", deadline="10m")
    assert_type(node, api.Node)
    listed = client.nodes.list(status=["running"], limit=10)
    assert_type(listed, NodeList)
    first: list[api.Node] = listed  # still a plain list of nodes
    assert_type(listed.next_cursor, str | None)
    assert_type(client.nodes.wait_for_outcome(node.node_id, timeout=5), api.NodeOutcome)
    typed = client.nodes.parse(prompt="hi", output_schema=Package)
    assert_type(typed, ParsedOutcome[Package])
    if typed.kind == "result":
        assert_type(typed.output_parsed, Package)
    raw = client.nodes.parse(prompt="hi", output_schema={"type": "object"})
    assert_type(raw, ParsedOutcome[Any])
    text = client.nodes.parse(prompt="hi", output_schema='{"type": "object"}')
    if isinstance(text, ParsedResult):
        assert_type(text.output_parsed, Any)


async def asynchronous(client: AsyncHeron) -> None:
    raw = await client.nodes.parse(prompt="hi", output_schema={"type": "object"})
    assert_type(raw, ParsedOutcome[Any])
    typed = await client.nodes.parse(prompt="hi", output_schema=Package)
    assert_type(typed, ParsedOutcome[Package])
    fork = await client.nodes.fork("n1", prompt="again", new_node_id="n2")
    assert_type(fork, api.Node)
"""


@pytest.mark.slow
def test_user_code_type_checks_strictly(tmp_path: Path) -> None:
    module = tmp_path / "user_code.py"
    module.write_text(textwrap.dedent(USER_CODE))
    # The project's own cache: a warm run takes a second or two, a cold one longer.
    cache = Path(__file__).resolve().parents[2] / ".mypy_cache"
    out, err, status = mypy_api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(cache), str(module)]
    )
    assert status == 0, out + err
