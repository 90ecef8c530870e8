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

    Every field of :class:`heron.api.NodeResult`, plus ``output_parsed``.
    """

    output_parsed: T
    """``structured_result`` as the schema's type: an instance of the class given
    (a model, a dataclass ...), the raw JSON value for a JSON schema."""


class ParsedFailure(api.NodeFailure):
    """A node that did not produce its result (``kind == "failure"``; narrow on ``reason``).

    Every field of :class:`heron.api.NodeFailure`; ``output_parsed`` is always ``None``.
    """

    output_parsed: Literal[None] = None
    """Always ``None``: there is no result to parse."""


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
    """``outcome`` with ``output_parsed``: validated as ``schema`` when it is a class
    (a ``pydantic.ValidationError`` naming the node if the result does not fit it),
    else the raw ``structured_result``."""
    if isinstance(outcome, api.NodeFailure):
        return ParsedFailure(**dict(outcome))
    value = outcome.structured_result
    if isinstance(schema, type):
        try:
            value = schema_adapter(schema).validate_python(value)
        except ValidationError as exc:
            # The run is over and its result kept: say where to find it.
            exc.add_note(
                f"node {node_id} submitted this result; read it unparsed with "
                f"client.nodes.outcome({node_id!r})"
            )
            raise
    return ParsedResult[Any](**dict(outcome), output_parsed=value)
