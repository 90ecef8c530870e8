"""``client.nodes.parse``'s answer: the settled outcome with a typed ``output_parsed``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import ValidationError

from .. import api
from ._params import schema_adapter

__all__ = ["ParsedFailure", "ParsedOutcome", "ParsedResult", "parsed_outcome"]

T = TypeVar("T")


class ParsedResult(api.NodeResult, Generic[T]):
    """A node that finished with its result, parsed (``kind == "result"``).

    Every field of :class:`heron.api.NodeResult`, plus ``node_id`` and ``output_parsed``.
    """

    node_id: str
    """The node that ran (``parse`` made it: this is how to reach it afterwards)."""
    output_parsed: T
    """``structured_result`` as the schema's type: an instance of the class given
    (a model, a dataclass ...), the raw JSON value for a JSON schema."""


class ParsedFailure(api.NodeFailure):
    """A node that did not produce its result (``kind == "failure"``; narrow on ``reason``).

    Every field of :class:`heron.api.NodeFailure`, plus ``node_id``; ``output_parsed`` is
    always ``None``.
    """

    node_id: str
    """The node that ran (revive it, read its reports, fork it)."""
    output_parsed: Literal[None] = None
    """Always ``None``: there is no result to parse."""
    structured_result: Any = None
    """For ``reason == "invalid_result"``: the result the node submitted, unparsed (it
    passed the daemon's JSON-schema check but not the class's validation); else ``None``."""


ParsedOutcome: TypeAlias = ParsedResult[T] | ParsedFailure
"""What ``client.nodes.parse`` returns: narrow on ``kind`` (then ``reason``), and
``output_parsed`` is the typed result exactly when ``kind == "result"``::

    run = client.nodes.parse(prompt="Name and version of this package?", cwd=repo,
                             output_schema=Package)
    if run.kind == "result":
        print(run.output_parsed.version)      # a Package
    elif run.reason == "declined":
        print(run.declined)
    else:
        print(run.reason, run.detail)
"""


def parsed_outcome(
    outcome: api.NodeResult | api.NodeFailure,
    schema: type[Any] | Mapping[str, Any] | str,
    node_id: str,
) -> ParsedResult[Any] | ParsedFailure:
    """``outcome`` with ``output_parsed``: validated as ``schema`` when it is a class,
    else the raw ``structured_result``.

    An agent's outcome is returned, never raised: a result the class refuses (a
    validator stricter than its JSON schema, which is all the daemon checks) becomes a
    :class:`ParsedFailure` with ``reason == "invalid_result"``, the validation errors in
    ``detail`` and the submitted value in ``structured_result``. The node itself settled
    as a result (``client.nodes.outcome`` still says so)."""
    if isinstance(outcome, api.NodeFailure):
        return ParsedFailure(**dict(outcome), node_id=node_id)
    value = outcome.structured_result
    if isinstance(schema, type):
        try:
            value = schema_adapter(schema).validate_python(value)
        except ValidationError as exc:
            detail = api.OutcomeDetail(
                message=f"the result node {node_id} submitted does not fit "
                f"{schema.__qualname__}: {exc}",
                error_type="ValidationError",
            )
            return ParsedFailure(
                reason="invalid_result",
                detail=detail,
                node_id=node_id,
                structured_result=value,
            )
    return ParsedResult[Any](**dict(outcome), node_id=node_id, output_parsed=value)
