"""Tool schemas from Python signatures and docstrings, via pydantic."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticSchemaGenerationError,
    PydanticUserError,
    create_model,
)
from pydantic.fields import FieldInfo

from .._core import UserError
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
    parameters: dict[str, str]
    """The model's field names, each mapped to the function parameter it fills."""


SIGNATURES_KEPT = 1024
"""How many inspected signatures :func:`inspect_function` keeps."""

_signatures: dict[Hashable, FunctionSignature] = {}


def _signature_key(func: Callable[..., Any]) -> Hashable | None:
    """What a function's signature is made of, if it can be hashed: the code (names,
    kinds), the defaults, the annotations, the docstring and the module the hints are
    read in. Functions made by one ``def`` (a tool built per run as a closure) share it,
    unless their defaults differ. ``None``: not a plain function, or unhashable parts."""
    code = getattr(func, "__code__", None)
    if code is None or not inspect.isfunction(func):
        return None
    defaults = func.__defaults__ or ()
    kwdefaults = func.__kwdefaults__ or {}
    key = (
        code,
        func.__name__,
        func.__doc__,
        id(func.__globals__),
        tuple((type(d), d) for d in defaults),
        tuple(sorted((k, type(v), v) for k, v in kwdefaults.items())),
        tuple(func.__annotations__.items()),
    )
    try:
        hash(key)
    except TypeError:  # a Field(...) default, a list ...
        return None
    return key


def inspect_function(func: Callable[..., Any]) -> FunctionSignature:
    """Build the argument model and JSON schema of ``func`` from its hints and docstring.

    ``Annotated[int, Field(ge=0)]`` and ``x: int = Field(1, ge=1)`` constrain and
    describe an argument as they would a pydantic model field; a description in
    the docstring fills in where the field has none.

    A function made by the same ``def`` as one inspected before, with the same defaults
    (a tool made anew for each run of a node), gets the signature found then: building
    its pydantic model is most of what making a tool costs.
    """
    key = _signature_key(func)
    if key is None:
        return _inspect(func)
    found = _signatures.get(key)
    if found is None:
        found = _inspect(func)
        if len(_signatures) >= SIGNATURES_KEPT:
            del _signatures[next(iter(_signatures))]  # the oldest
        _signatures[key] = found
    # Each caller owns its schema (the rest is read-only).
    return dataclasses.replace(found, json_schema=copy.deepcopy(found.json_schema))


def _inspect(func: Callable[..., Any]) -> FunctionSignature:
    where = f"tool {getattr(func, '__name__', func)!r}"
    signature = inspect.signature(func)
    try:
        hints = get_type_hints(func, include_extras=True)
    except NameError as exc:
        raise UserError(f"cannot resolve the type hints of {where}: {exc}") from exc
    description, arg_docs = parse_docstring(func.__doc__)
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    context_param: str | None = None
    for index, (name, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UserError(f"{where}: *args and **kwargs cannot be described to a model")
        if param.kind is param.POSITIONAL_ONLY:
            raise UserError(
                f"{where}: parameter {name!r} is positional-only, but tool arguments arrive by name"
            )
        if index == 0 and name in ("self", "cls"):
            raise UserError(
                f"{where}: @tool cannot bind {name!r}; decorate a plain function (a closure "
                "over the object works) or write a Tool subclass"
            )
        annotation = hints.get(name, Any)
        if _is_context(annotation):
            context_param = name
            continue
        field = _field(name, annotation, param.default, arg_docs.get(name))
        # Fields get neutral names, the public name (the parameter's, or an alias the
        # user gave) being the alias the model uses: any name is then safe.
        internal = f"arg{index}"
        fields[internal] = (annotation, field)
        names[internal] = name
    try:
        model = create_model(
            f"{getattr(func, '__name__', 'tool')}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        schema = _tidy(model.model_json_schema())
    except PydanticSchemaGenerationError as exc:
        raise UserError(
            f"{where}: an argument type has no JSON schema, so a model could not fill it in "
            f"({exc.args[0].splitlines()[0]}); use JSON-friendly types or pydantic models"
        ) from None
    except PydanticUserError as exc:  # e.g. a parameter name pydantic refuses
        raise UserError(f"{where}: {exc.message}") from None
    return FunctionSignature(
        model=model,
        json_schema=schema,
        description=description,
        context_param=context_param,
        parameters=names,
    )


def _field(name: str, annotation: Any, default: Any, doc: str | None) -> FieldInfo:
    """The pydantic field for one parameter, under the name the model knows it by.

    What the user wrote wins: an alias (``Field(alias="from")`` for a ``from_``
    parameter) becomes the public name, and a description in ``Field(...)`` or
    ``Annotated[...]`` beats the docstring's.
    """
    written = [m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, FieldInfo)]
    if isinstance(default, FieldInfo):
        written.append(default)
    public = next((f.alias for f in written if f.alias), name)
    overrides: dict[str, Any] = {"alias": public}
    if not any(f.validation_alias for f in written):
        overrides["validation_alias"] = public
    if not any(f.serialization_alias for f in written):
        overrides["serialization_alias"] = public
    if doc and not any(f.description for f in written):
        overrides["description"] = doc  # never description=None: it would hide theirs
    base = (
        default if isinstance(default, FieldInfo) else Field(... if default is _EMPTY else default)
    )
    return FieldInfo.merge_field_infos(base, **overrides)


def _is_context(annotation: Any) -> bool:
    """``ToolContext``, or a union holding it (``ToolContext | None``)."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if annotation is ToolContext:
        return True
    return get_origin(annotation) in (Union, UnionType) and ToolContext in get_args(annotation)


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles: noise to a model, and costly in small contexts."""
    tidy = _untitled(schema)
    tidy.setdefault("properties", {})
    return tidy


_EMPTY = inspect.Parameter.empty

_SUBSCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "contains")


def _untitled(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` and every subschema in it without ``title`` (property names untouched)."""
    out = {k: v for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {
                name: _untitled(sub) if isinstance(sub, dict) else sub
                for name, sub in out[key].items()
            }
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_untitled(sub) if isinstance(sub, dict) else sub for sub in out[key]]
    for key in _SUBSCHEMAS:
        if isinstance(out.get(key), dict):
            out[key] = _untitled(out[key])
    return out
