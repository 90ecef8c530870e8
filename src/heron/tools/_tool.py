"""Tools: the :class:`Tool` base class and the :func:`tool` decorator."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar, overload

import jsonschema
from pydantic import ValidationError

from .._core import ToolError, ToolSchema, UserError
from .._core.problems import jsonschema_problems, pydantic_problems
from ._context import ToolContext
from ._result import ToolResult, to_tool_result
from ._schema import inspect_function
from ._threads import in_worker_thread

__all__ = ["FunctionTool", "Tool", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# What every major model API accepts as a function name.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Tool:
    """Something an agent's model can call.

    Subclass it and implement :meth:`execute` (sync or async), or decorate a
    function with :func:`tool`. Arguments are validated against
    ``input_schema`` before ``execute`` runs; a failure of either reaches the
    model as an error result and the run goes on::

        class Sum(Tool):
            name = "math-sum"
            description = "Add two numbers."
            input_schema = {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            }

            async def execute(self, arguments, context):
                return arguments["a"] + arguments["b"]
    """

    name: str = ""
    """The name the model calls the tool by."""
    description: str = ""
    """What the tool does and when to use it: the model's guide."""
    input_schema: dict[str, Any] = _EMPTY_SCHEMA
    """JSON schema of the arguments object."""
    stop_iteration_after_use: bool = False
    """End the agent's run once this tool has run successfully (e.g. after asking the user)."""
    timeout: float | None = None
    """Seconds a call may take before it fails with a timeout error result (``None``: no limit)."""

    def __init__(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        stop_iteration_after_use: bool | None = None,
        timeout: float | None = None,
    ) -> None:
        if timeout is not None:
            self.timeout = timeout
        if self.timeout is not None and not _is_positive_number(self.timeout):
            raise UserError(
                f"tool timeout must be a positive number of seconds, not {self.timeout!r}"
            )
        if name is not None:
            self.name = name
        if description is not None:
            self.description = description
        # Each tool owns its schema: a class default or a caller's dict is never shared.
        self.input_schema = copy.deepcopy(
            input_schema if input_schema is not None else self.input_schema
        )
        if stop_iteration_after_use is not None:
            self.stop_iteration_after_use = stop_iteration_after_use
        if type(self).execute is Tool.execute:
            raise UserError(f"{type(self).__name__} must implement execute()")
        if not _NAME.fullmatch(self.name or ""):
            raise UserError(
                f"tool name {self.name!r} is not usable: model APIs accept 1-64 letters, "
                "digits, '_' and '-'"
            )
        problem = _schema_problem(json.dumps(self.input_schema, sort_keys=True, default=repr))
        if problem is not None:
            raise UserError(f"tool {self.name!r} has an invalid input_schema: {problem}")

    @property
    def _validator(self) -> jsonschema.Draft202012Validator:
        # Built lazily (a subclass whose __init__ skipped ours still validates) and
        # again whenever input_schema is replaced.
        cached: tuple[int, jsonschema.Draft202012Validator] | None = getattr(
            self, "_validator_cache", None
        )
        if cached is None or cached[0] != id(self.input_schema):
            cached = (id(self.input_schema), jsonschema.Draft202012Validator(self.input_schema))
            self._validator_cache = cached
        return cached[1]

    @property
    def schema(self) -> ToolSchema:
        """The tool as the model sees it; read-only, shared by every request.

        A tool's definition is fixed once built: to change it, assign a new
        ``input_schema`` (or build a new tool) rather than editing it in place.
        """
        key = (self.name, self.description, id(self.input_schema))
        cached: tuple[tuple[str, str, int], ToolSchema] | None = getattr(self, "_schema", None)
        if cached is None or cached[0] != key:
            schema = ToolSchema(
                name=self.name,
                description=self.description,
                input_schema=copy.deepcopy(self.input_schema),
            )
            cached = (key, schema)
            self._schema = cached
        return cached[1]

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Run the tool; return a string, data, an image or a :class:`ToolResult`.

        May be a coroutine function. Sync implementations run in a worker thread
        so a slow one never blocks the other calls of the turn.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement execute()")

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` against the schema; raise :class:`ToolError` if they fail."""
        problems = jsonschema_problems(self._validator, arguments)
        if problems:
            raise ToolError(f"invalid arguments for tool {self.name!r}: {'; '.join(problems)}")
        return arguments

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Validate, execute and wrap the result; failures become error results."""
        deadline = asyncio.timeout(self.timeout)
        try:
            # The tool gets its own copy: mutating it must not rewrite the model's call.
            checked = self.validate(_copy_json(arguments))
            async with deadline:
                value = await self._invoke(checked, context)
            result = to_tool_result(value)
        except TimeoutError as exc:
            if not deadline.expired():
                result = _failure(self.name, exc)  # the tool's own TimeoutError
            else:
                # A sync tool's worker thread cannot be stopped; its late result is dropped.
                result = ToolResult.error(f"tool {self.name!r} timed out after {self.timeout:g} s")
        except ToolError as exc:
            result = ToolResult.error(str(exc))
        except Exception as exc:
            result = _failure(self.name, exc)
        # A failed call (bad arguments, say) lets the model try again instead of
        # ending the run on an error it never got to correct.
        if self.stop_iteration_after_use and not result.is_error:
            result = dataclasses.replace(result, stop_iteration=True)
        return result

    async def _invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        if inspect.iscoroutinefunction(self.execute):
            return await self.execute(arguments, context)
        value = await in_worker_thread(self.execute, arguments, context)
        if inspect.isawaitable(value):
            value = await value
        return value

    def same_definition(self, other: Tool) -> bool:
        """Whether ``other`` is this very tool.

        Two instances of one class may differ in state the schema does not show
        (a root directory, a client), so only the same object counts; override
        this where instances really are interchangeable.
        """
        return other is self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


@functools.lru_cache(maxsize=2048)
def _schema_problem(schema_json: str) -> str | None:
    """Why a tool's input schema (as canonical JSON) is not a valid JSON schema, or None.

    Checking a schema against the metaschema costs ~0.2 ms; toolsets are made
    over and over with the same schemas (a daemon makes a node's tools for each
    of its runs), so each distinct schema is checked once.
    """
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(schema_json))
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def _is_positive_number(value: object) -> bool:
    # `not value > 0` rather than `value <= 0`, so that NaN fails too.
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _copy_json(value: Any) -> Any:
    """A copy of JSON data (dicts and lists rebuilt, scalars shared): cheaper than deepcopy."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy_json(v) for v in value)
    return value


def _failure(name: str, exc: BaseException) -> ToolResult:
    return ToolResult.error(f"tool {name!r} failed: {type(exc).__name__}: {exc}")


class FunctionTool(Tool):
    """A :class:`Tool` wrapping a plain function; made by :func:`tool`."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        stop_iteration_after_use: bool = False,
        timeout: float | None = None,
    ) -> None:
        info = inspect_function(func)
        self.func = func
        """The wrapped function."""
        self._model = info.model
        self._parameters = info.parameters
        self._context_param = info.context_param
        self._is_async = inspect.iscoroutinefunction(func)
        super().__init__(
            name=name or func.__name__,
            description=description if description is not None else info.description,
            input_schema=info.json_schema,
            stop_iteration_after_use=stop_iteration_after_use,
            timeout=timeout,
        )

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate and coerce ``arguments`` with the signature's pydantic model."""
        try:
            model = self._model.model_validate(arguments)
        except ValidationError as exc:
            details = "; ".join(pydantic_problems(exc))
            raise ToolError(f"invalid arguments for tool {self.name!r}: {details}") from None
        return {name: getattr(model, field) for field, name in self._parameters.items()}

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Call the wrapped function (sync functions in a worker thread)."""
        kwargs = dict(arguments)
        if self._context_param is not None:
            kwargs[self._context_param] = context
        if self._is_async:
            return await self.func(**kwargs)
        return await in_worker_thread(self.func, **kwargs)

    def same_definition(self, other: Tool) -> bool:
        """Whether ``other`` wraps the same function with the same name and options."""
        return (
            isinstance(other, FunctionTool)
            and other.func is self.func
            and other.name == self.name
            and other.description == self.description
            and other.stop_iteration_after_use == self.stop_iteration_after_use
            and other.timeout == self.timeout
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly, as if it were not decorated."""
        return self.func(*args, **kwargs)


@overload
def tool(func: F, /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    stop_iteration_after_use: bool = False,
    timeout: float | None = None,
) -> Callable[[F], FunctionTool]: ...


def tool(
    func: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    stop_iteration_after_use: bool = False,
    timeout: float | None = None,
) -> FunctionTool | Callable[[F], FunctionTool]:
    """Make a :class:`Tool` from a function, its type hints and its docstring.

    The docstring's first part is the description; an ``Args:`` section (or
    ``:param x:`` lines) describes each argument. A parameter annotated
    :class:`ToolContext` receives the calling client's context and is hidden
    from the model. ``timeout`` bounds each call in seconds::

        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Add two integers.

            Args:
                a: The first number.
                b: The second number.
            \"\"\"
            return a + b
    """

    def wrap(f: F) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            stop_iteration_after_use=stop_iteration_after_use,
            timeout=timeout,
        )

    if func is not None:
        return wrap(func)
    return wrap
