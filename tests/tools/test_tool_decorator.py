"""``@tool``: schemas from type hints, descriptions from docstrings, and running the function."""

import asyncio
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from heron import FunctionTool, ToolContext, ToolError, ToolResult, UserError, tool


class Point(BaseModel):
    x: int
    y: int


class Box(BaseModel):
    corner: Point
    label: str = "box"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def run(t: FunctionTool, context: ToolContext | None = None, /, **args: Any) -> ToolResult:
    return await t.run(args, context or ToolContext())


class TestSchema:
    def test_ints_are_required_integers_and_nothing_else_is_allowed(self) -> None:
        assert add.input_schema == {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        }

    def test_scalar_types(self) -> None:
        @tool
        def f(s: str, n: float, flag: bool) -> None:
            """F."""

        props = f.input_schema["properties"]
        assert props == {
            "s": {"type": "string"},
            "n": {"type": "number"},
            "flag": {"type": "boolean"},
        }

    def test_defaults_and_optionals_are_not_required(self) -> None:
        @tool
        def search(query: str, limit: int = 10, lang: str | None = None) -> None:
            """Search."""

        schema = search.input_schema
        assert schema["required"] == ["query"]
        assert schema["properties"]["limit"] == {"type": "integer", "default": 10}
        assert schema["properties"]["lang"] == {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "default": None,
        }

    def test_a_tool_without_parameters(self) -> None:
        @tool
        def now() -> str:
            """The time."""
            return "noon"

        assert now.input_schema["properties"] == {}
        assert "required" not in now.input_schema

    def test_lists(self) -> None:
        @tool
        def total(values: list[int], names: list[str] | None = None) -> int:
            """Total."""
            return sum(values)

        assert total.input_schema["properties"]["values"] == {
            "type": "array",
            "items": {"type": "integer"},
        }

    def test_nested_models_become_definitions(self) -> None:
        @tool
        def draw(box: Box) -> None:
            """Draw a box."""

        schema = draw.input_schema
        assert schema["properties"]["box"] == {"$ref": "#/$defs/Box"}
        assert schema["$defs"]["Box"]["properties"]["corner"] == {"$ref": "#/$defs/Point"}
        assert schema["$defs"]["Point"]["required"] == ["x", "y"]

    def test_literals_become_enums(self) -> None:
        @tool
        def go(mode: Literal["fast", "slow"] = "fast") -> None:
            """Go."""

        assert go.input_schema["properties"]["mode"] == {
            "type": "string",
            "enum": ["fast", "slow"],
            "default": "fast",
        }

    def test_no_pydantic_titles_leak_into_properties(self) -> None:
        @tool
        def f(some_value: int, other: Point) -> None:
            """F."""

        assert "title" not in f.input_schema
        assert all("title" not in p for p in f.input_schema["properties"].values())

    def test_unannotated_parameters_take_anything(self) -> None:
        @tool
        def f(anything) -> None:  # type: ignore[no-untyped-def]
            """F."""

        assert f.input_schema["properties"]["anything"] == {}
        assert f.input_schema["required"] == ["anything"]

    def test_star_args_are_refused(self) -> None:
        def f(*values: int) -> None:
            """F."""

        with pytest.raises(UserError, match=r"\*args and \*\*kwargs cannot be described"):
            tool(f)

    def test_star_kwargs_are_refused(self) -> None:
        def f(**options: int) -> None:
            """F."""

        with pytest.raises(UserError, match="cannot be described"):
            tool(f)

    def test_positional_only_tool_parameters_are_refused_at_decoration(self) -> None:
        def f(x: int, /) -> int:
            return x

        with pytest.raises(UserError, match="positional-only"):
            tool(f)

    def test_unresolvable_hints_are_a_clear_error(self) -> None:
        def f(x: "NoSuchType") -> None:  # type: ignore[name-defined]  # noqa: F821
            """F."""

        with pytest.raises(UserError, match="cannot resolve the type hints of tool 'f'"):
            tool(f)

    def test_schema_property(self) -> None:
        assert add.schema.name == "add"
        assert add.schema.description == "Add two integers."
        assert add.schema.input_schema == add.input_schema


class TestDocstrings:
    def test_google_style(self) -> None:
        @tool
        def move(x: int, y: int, speed: float = 1.0) -> None:
            """Move the cursor.

            The cursor stays inside the screen.

            Args:
                x: Horizontal position,
                    counted from the left.
                y (int): Vertical position.
                speed: How fast to move.

            Returns:
                Nothing at all.
            """

        assert move.description == "Move the cursor.\n\nThe cursor stays inside the screen."
        props = move.input_schema["properties"]
        assert props["x"]["description"] == "Horizontal position, counted from the left."
        assert props["y"]["description"] == "Vertical position."
        assert props["speed"]["description"] == "How fast to move."

    def test_sphinx_style(self) -> None:
        @tool
        def fetch(url: str, timeout: float = 5.0) -> str:
            """Fetch a page.

            :param url: The address to fetch,
                including the scheme.
            :param float timeout: Seconds to wait.
            :returns: The page text.
            """
            return ""

        assert fetch.description == "Fetch a page."
        props = fetch.input_schema["properties"]
        assert props["url"]["description"] == "The address to fetch, including the scheme."
        assert props["timeout"]["description"] == "Seconds to wait."

    def test_undocumented_parameters_have_no_description(self) -> None:
        @tool
        def f(a: int, b: int) -> None:
            """F.

            Args:
                a: Documented.
            """

        assert "description" not in f.input_schema["properties"]["b"]

    def test_no_docstring_means_no_description(self) -> None:
        @tool
        def bare(a: int) -> int:
            return a

        assert bare.description == ""
        assert bare.input_schema["properties"]["a"] == {"type": "integer"}


class TestOptions:
    def test_name_defaults_to_the_function_name(self) -> None:
        assert add.name == "add"
        assert isinstance(add, FunctionTool)
        assert add.stop_iteration_after_use is False

    async def test_name_description_and_stop(self) -> None:
        @tool(
            name="ask-user", description="Ask the user a question.", stop_iteration_after_use=True
        )
        def ask(question: str) -> str:
            """Ignored docstring."""
            return "asked"

        assert ask.name == "ask-user"
        assert ask.description == "Ask the user a question."
        assert ask.schema.name == "ask-user"
        result = await run(ask, question="Which file?")
        assert result.stop_iteration is True
        assert result.text == "asked"

    def test_empty_description_overrides_the_docstring(self) -> None:
        @tool(description="")
        def f() -> None:
            """From the docstring."""

        assert f.description == ""

    def test_the_wrapped_function_is_kept(self) -> None:
        def mul(a: int, b: int) -> int:
            """Multiply."""
            return a * b

        wrapped = tool(mul)
        assert wrapped.func is mul
        assert repr(wrapped) == "<FunctionTool 'mul'>"


class TestContext:
    async def test_context_is_injected_and_hidden_from_the_schema(self) -> None:
        received: list[ToolContext] = []

        @tool
        def remember(note: str, ctx: ToolContext) -> str:
            """Remember a note."""
            received.append(ctx)
            return f"{ctx.env_id}: {note}"

        assert list(remember.input_schema["properties"]) == ["note"]
        assert remember.input_schema["required"] == ["note"]
        context = ToolContext(env_id="env-7")
        result = await run(remember, context, note="milk")
        assert result.text == "env-7: milk"
        assert received == [context]
        assert received[0] is context

    async def test_the_model_cannot_pass_the_context(self) -> None:
        @tool
        def f(ctx: ToolContext) -> str:
            """F."""
            return "ran"

        result = await run(f, ctx="forged")
        assert result.is_error
        assert "ctx" in result.text

    async def test_async_tools_get_the_context_too(self) -> None:
        @tool
        async def where(context: ToolContext) -> str:
            """Where am I."""
            return context.env_id

        assert (await run(where, ToolContext(env_id="box-1"))).text == "box-1"


class TestExecution:
    async def test_sync_functions_run_in_a_worker_thread(self) -> None:
        @tool
        def which_thread() -> int:
            """Thread id."""
            return threading.get_ident()

        result = await run(which_thread)
        assert result.structured != threading.get_ident()

    async def test_async_functions_run_on_the_loop(self) -> None:
        loop = asyncio.get_running_loop()

        @tool
        async def which_thread() -> int:
            """Thread id."""
            assert asyncio.get_running_loop() is loop
            return threading.get_ident()

        result = await run(which_thread)
        assert not result.is_error
        assert result.structured == threading.get_ident()

    async def test_slow_sync_tools_do_not_block_each_other(self) -> None:
        # Both calls must be inside the function at once to pass the barrier;
        # run one after the other on the loop, the first would wait it out.
        barrier = threading.Barrier(2, timeout=5)

        @tool
        def meet(who: str) -> str:
            """Wait for the other caller."""
            barrier.wait()
            return who

        results = await asyncio.gather(run(meet, who="a"), run(meet, who="b"))
        assert [r.text for r in results] == ["a", "b"]
        assert not any(r.is_error for r in results)

    async def test_arguments_are_validated_and_coerced(self) -> None:
        result = await run(add, a="2", b=3)
        assert not result.is_error
        assert result.text == "5"
        assert result.structured == 5

    async def test_defaults_are_filled_in(self) -> None:
        @tool
        def greet(name: str, greeting: str = "Hello") -> str:
            """Greet."""
            return f"{greeting}, {name}!"

        assert (await run(greet, name="Ada")).text == "Hello, Ada!"

    async def test_nested_models_arrive_as_models(self) -> None:
        @tool
        def area(box: Box) -> str:
            """Describe a box."""
            assert isinstance(box.corner, Point)
            return f"{box.label} at {box.corner.x},{box.corner.y}"

        result = await run(area, box={"corner": {"x": 1, "y": 2}})
        assert result.text == "box at 1,2"

    async def test_a_wrong_type_is_an_error_naming_the_field(self) -> None:
        result = await run(add, a=1, b="three")
        assert result.is_error
        assert result.text.startswith("invalid arguments for tool 'add': b: ")
        assert "valid integer" in result.text

    async def test_a_missing_field_is_named(self) -> None:
        result = await run(add, a=1)
        assert result.is_error
        assert "b: Field required" in result.text

    async def test_a_nested_field_is_named_by_its_path(self) -> None:
        @tool
        def draw(box: Box) -> None:
            """Draw."""

        result = await run(draw, box={"corner": {"x": 1}})
        assert result.is_error
        assert "box.corner.y: Field required" in result.text

    async def test_a_literal_outside_its_values_is_refused(self) -> None:
        @tool
        def go(mode: Literal["fast", "slow"]) -> str:
            """Go."""
            return mode

        result = await run(go, mode="warp")
        assert result.is_error
        assert "mode:" in result.text
        assert "'fast' or 'slow'" in result.text

    async def test_extra_arguments_are_refused(self) -> None:
        result = await run(add, a=1, b=2, c=3)
        assert result.is_error
        assert "c: Extra inputs are not permitted" in result.text

    async def test_every_problem_is_reported_at_once(self) -> None:
        result = await run(add, a="x", c=3)
        assert result.is_error
        for field in ("a:", "b:", "c:"):
            assert field in result.text

    async def test_validation_failures_never_call_the_function(self) -> None:
        calls: list[int] = []

        @tool
        def record(n: int) -> None:
            """Record."""
            calls.append(n)

        await run(record, n="not a number")
        assert calls == []

    async def test_an_exception_becomes_an_error_result(self) -> None:
        @tool
        def broken(path: str) -> str:
            """Break."""
            raise FileNotFoundError(f"no such file: {path}")

        result = await run(broken, path="a.txt")
        assert result.is_error
        assert result.text == "tool 'broken' failed: FileNotFoundError: no such file: a.txt"

    async def test_an_async_exception_becomes_an_error_result(self) -> None:
        @tool
        async def broken() -> str:
            """Break."""
            raise ValueError("bad state")

        result = await run(broken)
        assert result.is_error
        assert "ValueError: bad state" in result.text

    async def test_a_tool_error_is_reported_as_just_its_message(self) -> None:
        @tool
        def picky(n: int) -> int:
            """Refuse odd numbers."""
            if n % 2:
                raise ToolError(f"{n} is odd; pass an even number")
            return n

        result = await run(picky, n=3)
        assert result.is_error
        assert result.text == "3 is odd; pass an even number"
        assert result.structured is None

    async def test_cancellation_is_not_swallowed(self) -> None:
        @tool
        async def cancelled() -> None:
            """Cancelled."""
            raise asyncio.CancelledError

        with pytest.raises(asyncio.CancelledError):
            await run(cancelled)

    async def test_return_values_are_converted(self) -> None:
        @tool
        def stats() -> dict[str, int]:
            """Stats."""
            return {"count": 2}

        @tool
        def point() -> Point:
            """A point."""
            return Point(x=1, y=2)

        assert (await run(stats)).structured == {"count": 2}
        assert (await run(point)).structured == {"x": 1, "y": 2}
        assert (await run(point)).text == '{"x": 1, "y": 2}'


class TestFollowUps:
    def test_a_decorated_function_can_still_be_called(self) -> None:
        assert add(2, b=3) == 5

    async def test_an_optional_context_parameter_is_recognised(self) -> None:
        @tool
        def where(ctx: ToolContext | None = None) -> str:
            """Report the environment."""
            return ctx.env_id if ctx else "none"

        assert where.input_schema["properties"] == {}
        result = await run(where, ToolContext(env_id="env-9"))
        assert result.text == "env-9"

    async def test_a_stop_tool_that_fails_does_not_stop_the_run(self) -> None:
        @tool(stop_iteration_after_use=True)
        def ask(question: str) -> str:
            """Ask the human."""
            return question

        bad = await run(ask)
        assert bad.is_error and not bad.stop_iteration
        good = await run(ask, question="Which one?")
        assert good.stop_iteration and not good.is_error

    def test_wrappers_differing_in_options_are_different_tools(self) -> None:
        def f() -> str:
            """Original."""
            return "x"

        assert tool(f).same_definition(tool(f))
        assert not tool(f).same_definition(tool(description="Other.")(f))
        assert not tool(f).same_definition(tool(stop_iteration_after_use=True)(f))


class TestTimeouts:
    async def test_a_slow_async_tool_times_out_as_an_error_result(self) -> None:
        cancelled = asyncio.Event()

        @tool(timeout=0.05)
        async def slow() -> str:
            """Never finishes in time."""
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "late"

        result = await asyncio.wait_for(run(slow), timeout=10)
        assert result.is_error
        assert result.text == "tool 'slow' timed out after 0.05 s"
        assert cancelled.is_set()

    async def test_a_slow_sync_tool_times_out_and_its_thread_is_left_to_finish(self) -> None:
        release = threading.Event()

        @tool(timeout=0.05)
        def blocking() -> str:
            """Blocks until released."""
            release.wait(10)
            return "late"

        try:
            result = await asyncio.wait_for(run(blocking), timeout=10)
        finally:
            release.set()
        assert result.is_error and "timed out" in result.text

    async def test_a_tools_own_timeout_error_is_not_mistaken_for_ours(self) -> None:
        @tool(timeout=30)
        async def upstream() -> str:
            """Its upstream timed out."""
            raise TimeoutError("upstream took too long")

        result = await run(upstream)
        assert result.text == "tool 'upstream' failed: TimeoutError: upstream took too long"

    async def test_fast_tools_are_unaffected(self) -> None:
        @tool(timeout=30)
        async def quick(x: int) -> int:
            """Fast."""
            return x * 2

        assert (await run(quick, x=21)).text == "42"

    @pytest.mark.parametrize("bad", [0, -1, float("nan"), True, "5"])
    def test_a_timeout_that_is_not_a_positive_number_is_refused(self, bad: object) -> None:
        def f() -> str:
            return "x"

        with pytest.raises(UserError, match="timeout must be a positive number"):
            tool(timeout=bad)(f)  # type: ignore[arg-type]


class TestPydanticFields:
    async def test_annotated_fields_constrain_and_describe(self) -> None:
        from typing import Annotated

        from pydantic import Field

        @tool
        def take(n: Annotated[int, Field(ge=0, description="How many.")]) -> str:
            """Take some."""
            return f"took {n}"

        assert take.input_schema["properties"]["n"] == {
            "type": "integer",
            "minimum": 0,
            "description": "How many.",
        }
        refused = await run(take, n=-5)
        assert refused.is_error and "greater than or equal to 0" in refused.text
        assert (await run(take, n=3)).text == "took 3"

    async def test_a_field_default_is_a_default_not_a_value(self) -> None:
        from pydantic import Field

        @tool
        def page(m: int = Field(default=1, ge=1)) -> str:
            """Read a page.

            Args:
                m: The page number.
            """
            return f"page {m}"

        prop = page.input_schema["properties"]["m"]
        assert (prop["default"], prop["minimum"], prop["description"]) == (1, 1, "The page number.")
        assert (await run(page)).text == "page 1"
        assert (await run(page, m=0)).is_error

    def test_methods_are_refused_with_a_hint(self) -> None:
        class Service:
            def lookup(self, key: str) -> str:
                return key

        with pytest.raises(UserError, match="cannot bind 'self'"):
            tool(Service.lookup)

    def test_argument_types_without_a_schema_are_named(self) -> None:
        class Opaque:
            pass

        def use(thing: Opaque) -> str:
            return "x"

        with pytest.raises(UserError, match="tool 'use': an argument type has no JSON schema"):
            tool(use)


class TestParameterNames:
    async def test_names_that_clash_with_pydantic_work(self) -> None:
        @tool
        def query(schema: str, json: bool = False, copy: int = 1, _hint: str = "") -> str:
            """Query a schema."""
            return f"{schema} {json} {copy} {_hint!r}"

        assert set(query.input_schema["properties"]) == {"schema", "json", "copy", "_hint"}
        result = await run(query, schema="public", json=True, copy=2)
        assert result.text == "public True 2 ''"
        assert (await run(query, schema="s", arg0="x")).is_error  # internal names are not inputs

    async def test_an_annotated_context_is_the_context(self) -> None:
        from typing import Annotated

        @tool
        async def where(ctx: Annotated[ToolContext, "the caller"]) -> str:
            """Report the environment."""
            return ctx.env_id

        assert where.input_schema["properties"] == {}
        assert (await run(where, ToolContext(env_id="env-3"))).text == "env-3"

    def test_nested_model_titles_are_dropped_but_a_property_named_title_stays(self) -> None:
        class Book(BaseModel):
            title: str

        @tool
        def shelve(book: Book, title: str) -> str:
            """Shelve a book."""
            return title

        schema = shelve.input_schema
        assert "title" in schema["properties"]
        assert schema["$defs"]["Book"] == {
            "properties": {"title": {"type": "string"}},
            "required": ["title"],
            "type": "object",
        }

    async def test_tuples_in_arguments_are_copied_too(self) -> None:
        seen: list[Any] = []

        @tool
        def shout(rows: Any) -> str:
            """Upper-case names."""
            rows[0]["name"] = rows[0]["name"].upper()
            seen.append(rows)
            return "done"

        arguments = {"rows": ({"name": "ada"},)}
        await shout.run(arguments, ToolContext())
        assert arguments == {"rows": ({"name": "ada"},)}
        assert seen == [({"name": "ADA"},)]


def test_a_timed_out_sync_tool_does_not_hold_up_run_sync() -> None:
    from heron import SimpleAgent
    from heron.testing import ScriptedProvider, call

    release, finished = threading.Event(), threading.Event()

    @tool(timeout=0.05)
    def hang() -> str:
        """Blocks until released."""
        release.wait(10)
        finished.set()
        return "late"

    agent = SimpleAgent(provider=ScriptedProvider([call("hang"), "gave up"]), tools=[hang])
    try:
        result = agent.run_sync("go")
        # run_sync came back while the tool's thread was still blocked.
        assert not finished.is_set()
        assert result.tool_calls[0].result == "tool 'hang' timed out after 0.05 s"
    finally:
        release.set()
    assert finished.wait(10)


class TestAliasesAndDescriptions:
    async def test_a_users_alias_is_the_name_the_model_uses(self) -> None:
        from pydantic import Field

        @tool
        def search(query: str, from_: str = Field("2020", alias="from")) -> str:
            """Search since a year."""
            return f"{query} since {from_}"

        assert list(search.input_schema["properties"]) == ["query", "from"]
        assert (await run(search, **{"query": "q", "from": "2024"})).text == "q since 2024"

    def test_an_annotated_description_survives_a_field_default(self) -> None:
        from typing import Annotated

        from pydantic import Field

        @tool
        def pick(
            x: Annotated[int, Field(description="From the annotation.")] = Field(3, ge=0),
        ) -> int:
            """Pick.

            Args:
                x: From the docstring.
            """
            return x

        assert pick.input_schema["properties"]["x"] == {
            "default": 3,
            "description": "From the annotation.",
            "minimum": 0,
            "type": "integer",
        }


HANGING_TOOL = """
from heron import SimpleAgent, tool
from heron.testing import ScriptedProvider, call
import time

@tool(timeout=0.1)
def hang() -> str:
    \"\"\"Never returns in time.\"\"\"
    time.sleep(600)
    return "late"

agent = SimpleAgent(provider=ScriptedProvider([call("hang"), "gave up"]), tools=[hang])
print(agent.run_sync("go").tool_calls[0].result, flush=True)
"""


@pytest.mark.slow
def test_a_hung_sync_tool_does_not_keep_the_program_from_exiting(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = tmp_path / "hang.py"
    script.write_text(HANGING_TOOL)
    # The tool sleeps for ten minutes; the program must end long before that.
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "tool 'hang' timed out after 0.1 s"


# -- tools made anew by one def (a node's tools, each run) ------------------------


def _made_with(limit: int) -> FunctionTool:
    def read(path: str, upto: int = limit) -> str:
        """Read a file.

        Args:
            path: Which file.
            upto: How many characters.
        """
        return path[:upto]

    return FunctionTool(read)


def test_tools_made_by_one_def_share_their_signature_but_not_their_schema() -> None:
    first, second = _made_with(10), _made_with(10)
    assert first._model is second._model  # inspected once
    assert first.input_schema == second.input_schema
    assert first.input_schema is not second.input_schema
    first.input_schema["properties"]["path"]["description"] = "changed"
    assert second.input_schema["properties"]["path"]["description"] == "Which file."
    assert _made_with(10).input_schema["properties"]["path"]["description"] == "Which file."


def test_a_different_default_is_a_different_signature() -> None:
    ten, five = _made_with(10), _made_with(5)
    assert ten._model is not five._model
    assert ten.input_schema["properties"]["upto"]["default"] == 10
    assert five.input_schema["properties"]["upto"]["default"] == 5
    assert five.validate({"path": "abc"}) == {"path": "abc", "upto": 5}


def test_an_unhashable_default_is_inspected_each_time() -> None:
    def make() -> FunctionTool:
        def pick(names: list[str] = ["a", "b"]) -> str:  # noqa: B006
            """Pick one."""
            return names[0]

        return FunctionTool(pick)

    one, two = make(), make()
    assert one._model is not two._model
    assert one.input_schema == two.input_schema
