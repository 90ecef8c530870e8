"""Subclassing :class:`Tool`: JSON-schema validation, sync and async ``execute``."""

import asyncio
import threading
from typing import Any

import pytest

from heron import ImagePart, SimpleAgent, Tool, ToolContext, ToolError, ToolResult, UserError
from heron.testing import ScriptedProvider, call

SUM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}

STRICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"q": {"type": "string", "minLength": 1}},
    "required": ["q"],
    "additionalProperties": False,
}


class Noop(Tool):
    """The smallest complete tool: for tests of definitions, not behaviour."""

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return "ok"


class Sum(Tool):
    name = "math-sum"
    description = "Add two numbers."
    input_schema = SUM_SCHEMA

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        return {"sum": arguments["a"] + arguments["b"], "thread": threading.get_ident()}


class AsyncSum(Sum):
    name = "math-sum-async"

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        return {"sum": arguments["a"] + arguments["b"], "thread": threading.get_ident()}


class Strict(Tool):
    name = "strict"
    description = "Takes only `q`."
    input_schema = STRICT_SCHEMA

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        return arguments["q"]


async def run(t: Tool, arguments: dict[str, Any]) -> ToolResult:
    return await t.run(arguments, ToolContext())


class TestDefinition:
    def test_class_attributes_make_the_schema(self) -> None:
        schema = Sum().schema
        assert (schema.name, schema.description) == ("math-sum", "Add two numbers.")
        assert schema.input_schema == SUM_SCHEMA
        assert Sum().stop_iteration_after_use is False

    def test_constructor_overrides_class_attributes(self) -> None:
        t = Sum(name="plus", description="Plus.", stop_iteration_after_use=True)
        assert (t.name, t.description, t.stop_iteration_after_use) == ("plus", "Plus.", True)
        assert Sum().name == "math-sum"  # the class is left alone

    def test_a_name_is_required(self) -> None:
        class Nameless(Noop):
            description = "No name."

        with pytest.raises(UserError, match="tool name '' is not usable"):
            Nameless()

    @pytest.mark.parametrize("name", ["has spaces", "dots.not.allowed", "x" * 65, "naïve"])
    def test_names_model_apis_reject_are_refused(self, name: str) -> None:
        with pytest.raises(UserError, match="not usable"):
            Noop(name=name)

    @pytest.mark.parametrize("name", ["get-current-time", "fs_write_file", "A1", "x" * 64])
    def test_usual_names_are_accepted(self, name: str) -> None:
        assert Noop(name=name).name == name

    def test_an_invalid_schema_is_a_user_error(self) -> None:
        with pytest.raises(UserError, match="tool 'bad' has an invalid input_schema"):
            Noop(name="bad", input_schema={"type": "objekt"})

    def test_the_default_schema_is_an_empty_object(self) -> None:
        assert Noop(name="noop").input_schema == {"type": "object", "properties": {}}

    def test_repr(self) -> None:
        assert repr(Sum()) == "<Sum 'math-sum'>"

    def test_tools_do_not_share_schema_dicts(self) -> None:
        class Ping(Tool):
            name = "ping"

            async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
                return "ping"

        class Pong(Ping):
            name = "pong"

        ping, pong = Ping(), Pong()
        ping.input_schema["properties"]["x"] = {"type": "string"}
        ping.schema.input_schema["properties"]["y"] = {"type": "string"}
        assert pong.input_schema == {"type": "object", "properties": {}}
        assert "y" not in ping.input_schema["properties"]


class TestExecution:
    async def test_sync_execute_runs_in_a_worker_thread(self) -> None:
        result = await run(Sum(), {"a": 1, "b": 2.5})
        assert not result.is_error
        assert result.structured["sum"] == 3.5
        assert result.structured["thread"] != threading.get_ident()

    async def test_async_execute_runs_on_the_loop(self) -> None:
        result = await run(AsyncSum(), {"a": 1, "b": 2})
        assert result.structured == {"sum": 3, "thread": threading.get_ident()}

    async def test_sync_execute_may_return_an_awaitable(self) -> None:
        class Deferred(Tool):
            name = "deferred"

            def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
                async def later() -> str:
                    return "done later"

                return later()

        assert (await run(Deferred(), {})).text == "done later"

    async def test_execute_receives_the_context(self) -> None:
        class Where(Tool):
            name = "where"

            async def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
                return context.scoped_key("notes")

        result = await Where().run({}, ToolContext(env_id="env-3"))
        assert result.text == "env-3/notes"

    def test_a_missing_execute_is_refused_at_construction(self) -> None:
        class Hollow(Tool):
            name = "hollow"

        with pytest.raises(UserError, match="Hollow must implement execute"):
            Hollow()

    async def test_returning_a_tool_result_passes_it_through(self) -> None:
        image = ImagePart(data=b"\x89PNG")

        class Shot(Tool):
            name = "shot"

            async def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
                return ToolResult(content=(image,), structured={"w": 1})

        result = await run(Shot(), {})
        assert result.images == (image,)
        assert result.structured == {"w": 1}

    async def test_exceptions_and_tool_errors(self) -> None:
        class Flaky(Tool):
            name = "flaky"

            def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
                if arguments.get("polite"):
                    raise ToolError("try again with a smaller file")
                raise OSError("disk on fire")

        polite = await run(Flaky(), {"polite": True})
        rude = await run(Flaky(), {})
        assert (polite.is_error, polite.text) == (True, "try again with a smaller file")
        assert (rude.is_error, rude.text) == (True, "tool 'flaky' failed: OSError: disk on fire")

    async def test_stop_iteration_after_use_marks_the_result(self) -> None:
        class Ask(Tool):
            name = "ask"
            stop_iteration_after_use = True

            async def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
                return ToolResult(content=(), structured={"asked": True})

        result = await run(Ask(), {})
        assert result.stop_iteration is True
        assert result.structured == {"asked": True}
        assert (await run(Sum(), {"a": 1, "b": 1})).stop_iteration is False

    async def test_concurrent_sync_calls_overlap(self) -> None:
        barrier = threading.Barrier(2, timeout=5)

        class Meet(Tool):
            name = "meet"

            def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
                barrier.wait()
                return "met"

        results = await asyncio.gather(run(Meet(), {}), run(Meet(), {}))
        assert [r.text for r in results] == ["met", "met"]

    async def test_a_tool_mutating_its_arguments_does_not_rewrite_history(self) -> None:
        class Popper(Tool):
            name = "popper"
            input_schema = {"type": "object", "properties": {"k": {"type": "string"}}}  # noqa: RUF012

            async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
                return str(arguments.pop("k"))

        provider = ScriptedProvider([call("popper", k="v"), "ok"])
        agent = SimpleAgent(provider=provider, tools=[Popper()])
        result = await agent.run("go")
        assert agent.messages[1].tool_calls[0].arguments == {"k": "v"}
        assert result.tool_calls[0].arguments == {"k": "v"}


class TestValidation:
    async def test_a_wrong_type_names_the_field(self) -> None:
        result = await run(Sum(), {"a": "one", "b": 2})
        assert result.is_error
        assert (
            result.text == "invalid arguments for tool 'math-sum': a: 'one' is not of type 'number'"
        )

    async def test_a_missing_field_is_reported_at_the_root(self) -> None:
        result = await run(Sum(), {"a": 1})
        assert result.text == (
            "invalid arguments for tool 'math-sum': (root): 'b' is a required property"
        )

    async def test_every_problem_is_reported(self) -> None:
        result = await run(Sum(), {"a": "x", "b": "y"})
        assert "a: 'x' is not of type 'number'" in result.text
        assert "b: 'y' is not of type 'number'" in result.text

    async def test_extra_arguments_follow_the_schema(self) -> None:
        assert not (await run(Sum(), {"a": 1, "b": 2, "c": 3})).is_error
        strict = await run(Strict(), {"q": "x", "c": 3})
        assert strict.is_error
        assert "Additional properties are not allowed ('c' was unexpected)" in strict.text

    async def test_constraints_are_checked(self) -> None:
        result = await run(Strict(), {"q": ""})
        assert result.is_error
        assert result.text.startswith("invalid arguments for tool 'strict': q: ")

    async def test_validation_failures_never_execute(self) -> None:
        ran: list[bool] = []

        class Record(Sum):
            name = "record"

            def execute(self, arguments: dict[str, Any], context: ToolContext) -> Any:
                ran.append(True)

        await run(Record(), {"a": "nope"})
        assert ran == []

    async def test_a_tool_subclass_that_skips_super_init_still_validates(self) -> None:
        class Lazy(Tool):
            name = "lazy"
            input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}  # noqa: RUF012

            def __init__(self) -> None:
                pass

            async def execute(self, arguments: dict[str, Any], context: ToolContext) -> int:
                return int(arguments["n"]) + 1

        assert (await run(Lazy(), {"n": 1})).text == "2"
        assert (await run(Lazy(), {"n": "one"})).is_error

    def test_validate_raises_a_tool_error(self) -> None:
        with pytest.raises(ToolError, match="'b' is a required property"):
            Sum().validate({"a": 1})
        assert Sum().validate({"a": 1, "b": 2}) == {"a": 1, "b": 2}


class TestSameDefinition:
    def test_only_the_same_instance_is_the_same_tool(self) -> None:
        tool = Sum()
        assert tool.same_definition(tool)
        assert not Sum().same_definition(Sum())

    def test_a_different_description_is_different(self) -> None:
        assert not Sum().same_definition(Sum(description="Other."))

    def test_a_different_class_is_different(self) -> None:
        assert not Sum().same_definition(AsyncSum(name="math-sum"))

    def test_an_override_can_declare_instances_interchangeable(self) -> None:
        class Stateless(Sum):
            def same_definition(self, other: Tool) -> bool:
                return type(other) is type(self)

        assert Stateless().same_definition(Stateless())


class TestDefinitionChanges:
    async def test_a_replaced_input_schema_is_shown_and_enforced(self) -> None:
        class Greeter(Tool):
            name = "greet"

            async def execute(self, arguments: dict[str, Any], context: ToolContext) -> str:
                return f"hi {arguments['who']}"

        greeter = Greeter()
        assert not (await greeter.run({"who": "ada"}, ToolContext())).is_error
        greeter.input_schema = {
            "type": "object",
            "properties": {"who": {"type": "string", "maxLength": 3}},
        }
        assert greeter.schema.input_schema["properties"]["who"]["maxLength"] == 3
        refused = await greeter.run({"who": "grace"}, ToolContext())
        assert refused.is_error and "too long" in refused.text

    def test_a_schemas_dict_form_is_a_copy(self) -> None:
        sum_tool = Sum()
        data = sum_tool.schema.to_dict()
        data["input_schema"]["properties"].clear()
        assert sum_tool.schema.input_schema["properties"]
