"""Structured output: asking for, parsing and validating a typed final answer."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
from pydantic import TypeAdapter, ValidationError

from .._core import UserError
from .._core.problems import jsonschema_problems, pydantic_problems

__all__ = ["OutputSpec"]

# A fenced code block: ``` at a line start, an optional language tag, the body;
# then, for answers that bend the rules, fences anywhere on a line.
_FENCES = (
    re.compile(r"^[ \t]*```[\w-]*[ \t]*\r?\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE),
    re.compile(r"```[\w-]*[ \t]*\r?\n(.*?)\r?\n?[ \t]*```", re.DOTALL),
)
_SCHEMA_KEYWORDS = frozenset(
    ("type", "properties", "$ref", "enum", "const", "anyOf", "oneOf", "allOf", "items", "not")
)


_NOT_JSON = object()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"{literal} is out of range")
    return value


def _loads(text: str) -> Any:
    try:
        # NaN and Infinity (1e999 included) are not JSON: a value holding them
        # could not be exported.
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError:  # JSONDecodeError included
        return _NOT_JSON


class InvalidOutput(Exception):
    """The final answer did not parse or validate; ``str()`` is the model-facing reason."""

    def __init__(self, message: str, errors: Any = None) -> None:
        super().__init__(message)
        self.errors = errors


class OutputSpec:
    """A run's output type: a pydantic model, any type pydantic takes, or a JSON schema."""

    def __init__(self, output_type: Any) -> None:
        self.schema: dict[str, Any]
        self._adapter: TypeAdapter[Any] | None = None
        self._validator: jsonschema.Draft202012Validator | None = None
        self._text = output_type is str
        if isinstance(output_type, Mapping):
            schema = dict(output_type)
            if not _SCHEMA_KEYWORDS & schema.keys():
                raise UserError(
                    f"output_type {schema!r} does not look like a JSON schema (no 'type', "
                    "'properties', '$ref', 'enum', 'anyOf', ...); pass a schema or a type"
                )
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise UserError(f"output_type is not a valid JSON schema: {exc.message}") from None
            self.schema = schema
            self._validator = jsonschema.Draft202012Validator(schema)
        else:
            try:
                self._adapter = TypeAdapter(output_type)
                self.schema = self._adapter.json_schema()
            except Exception as exc:
                raise UserError(f"output_type {output_type!r} has no JSON schema: {exc}") from None

    def instructions(self) -> str:
        """The system-prompt text asking for output in this shape."""
        return (
            "OUTPUT FORMAT:\nWhen you give your final answer, reply with only a JSON value "
            "(no prose, no code fences) that matches this JSON schema:\n"
            + json.dumps(self.schema, separators=(",", ":"))
        )

    def parse(self, text: str) -> Any:
        """Parse and validate ``text``; raise :class:`InvalidOutput` with a reason.

        The JSON may stand alone or in a fenced code block among other text; a
        plain ``str`` output takes the answer as it is (quoted JSON or not).
        """
        value = _loads(text)
        if self._text:
            return value if isinstance(value, str) else text.strip()
        blocks = (
            itertools.chain.from_iterable(f.finditer(text) for f in _FENCES)
            if value is _NOT_JSON
            else ()
        )
        for block in blocks:  # the first fenced block that holds JSON
            value = _loads(block.group(1))
            if value is not _NOT_JSON:
                break
        if value is _NOT_JSON:
            raise InvalidOutput("the answer is not valid JSON")
        if self._validator is not None:
            problems = jsonschema_problems(self._validator, value)
            if problems:
                raise InvalidOutput("; ".join(problems), problems)
            return value
        assert self._adapter is not None
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            details = pydantic_problems(exc)
            raise InvalidOutput("; ".join(details), exc.errors()) from None

    @staticmethod
    def retry_prompt(reason: str) -> str:
        """The message sent back to the model after an invalid answer."""
        return (
            f"Your final answer did not match the required output format: {reason}. "
            "Reply again with only the corrected JSON value."
        )
