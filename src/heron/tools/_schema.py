"""Tool schemas from Python signatures and docstrings, via pydantic."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from ._context import ToolContext

__all__ = ["FunctionSignature", "inspect_function", "parse_docstring"]

_GOOGLE_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?):\s*$",
    re.IGNORECASE,
)
_ARG_SECTION = {"args", "arguments", "parameters", "params"}
_GOOGLE_ARG = re.compile(r"^(\s*)(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-argument descriptions.

    Understands Google style (``Args:`` sections) and Sphinx style
    (``:param name: text``); continuation lines are joined.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent = 0
    for line in lines:
        heading = _GOOGLE_SECTION.match(line)
        if heading:
            section = heading.group(1).lower()
            current = None
            continue
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            section, current = "sphinx", sphinx.group(1)
            args[current] = sphinx.group(2).strip()
            continue
        if line.lstrip().startswith(":") and section == "sphinx":
            current = None  # :returns:, :raises: ...
            continue
        if section in _ARG_SECTION:
            match = _GOOGLE_ARG.match(line)
            indent = len(line) - len(line.lstrip())
            if match and (current is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(2).lstrip("*")
                args[current] = match.group(3).strip()
            elif current is not None and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
        elif section == "sphinx":
            if current is not None and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
        elif section is None:
            description.append(line)
    return "\n".join(description).strip(), args


@dataclass(frozen=True, slots=True)
class FunctionSignature:
    """What :func:`inspect_function` learned about a tool function."""

    model: type[BaseModel]
    """Validates and coerces the arguments."""
    json_schema: dict[str, Any]
    """The arguments' JSON schema, as shown to the model."""
    description: str
    """The docstring's description part."""
    context_param: str | None
    """Name of the parameter that receives the :class:`ToolContext`, if any."""


def inspect_function(func: Callable[..., Any]) -> FunctionSignature:
    """Build the argument model and JSON schema of ``func`` from its hints and docstring."""
    signature = inspect.signature(func)
    try:
        hints = get_type_hints(func)
    except NameError as exc:
        raise TypeError(f"cannot resolve type hints of tool {func.__name__!r}: {exc}") from exc
    description, arg_docs = parse_docstring(func.__doc__)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {func.__name__!r}: *args and **kwargs cannot be described")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"tool {func.__name__!r}: parameter {name!r} is positional-only, "
                "but tool arguments arrive by name"
            )
        annotation = hints.get(name, Any)
        if _is_context(annotation):
            context_param = name
            continue
        default = ... if param.default is param.empty else param.default
        fields[name] = (annotation, Field(default, description=arg_docs.get(name)))
    model = create_model(
        f"{func.__name__}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
        **fields,
    )
    schema = _tidy(model.model_json_schema())
    return FunctionSignature(
        model=model, json_schema=schema, description=description, context_param=context_param
    )


def _is_context(annotation: Any) -> bool:
    """``ToolContext``, or a union holding it (``ToolContext | None``)."""
    if annotation is ToolContext:
        return True
    return get_origin(annotation) in (Union, UnionType) and ToolContext in get_args(annotation)


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles: noise to a model, and costly in small contexts."""
    schema = dict(schema)
    schema.pop("title", None)
    props = schema.get("properties")
    if isinstance(props, dict):
        schema["properties"] = {
            k: {kk: vv for kk, vv in v.items() if kk != "title"} if isinstance(v, dict) else v
            for k, v in props.items()
        }
    schema.setdefault("properties", {})
    return schema
