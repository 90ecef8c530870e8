"""The in-process tool client, and the storage and ids it hands to tools."""

import asyncio

import pytest

from heron import (
    IdGenerator,
    LocalToolClient,
    MemoryStorage,
    Storage,
    Tool,
    ToolClient,
    ToolContext,
    ToolSchema,
    UserError,
    tool,
)


class YieldingStorage(Storage):
    """Storage that gives the loop away on every access, as a networked store would."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        await asyncio.sleep(0)
        return self.data.get(key)

    async def set(self, key: str, value: str) -> None:
        await asyncio.sleep(0)
        self.data[key] = value


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="ask-user", stop_iteration_after_use=True)
def ask(question: str) -> str:
    """Ask the user."""
    return f"asked: {question}"


@tool(name="new-ref")
async def new_ref(ctx: ToolContext) -> str:
    """Make a reference id."""
    assert ctx.ids is not None
    return await ctx.ids.next()


@tool
async def count_visits(ctx: ToolContext) -> int:
    """Count how often this was called, per environment."""
    key = ctx.scoped_key("visits")
    visits = int(await ctx.storage.get(key) or 0) + 1
    await ctx.storage.set(key, str(visits))
    return visits


class TestListAndCall:
    async def test_lists_schemas_in_registration_order(self) -> None:
        client = LocalToolClient([ask, add])
        schemas = await client.list_tools()
        assert [s.name for s in schemas] == ["ask-user", "add"]
        assert schemas[1] == ToolSchema(
            name="add", description="Add two integers.", input_schema=add.input_schema
        )

    async def test_calls_a_tool(self) -> None:
        result = await LocalToolClient([add]).call_tool("add", {"a": 2, "b": 3})
        assert (result.text, result.structured, result.is_error) == ("5", 5, False)

    async def test_an_unknown_tool_is_an_error_listing_the_known_ones(self) -> None:
        result = await LocalToolClient([new_ref, add, ask]).call_tool("subtract", {})
        assert result.is_error
        assert result.text == "unknown tool 'subtract'; available tools: add, ask-user, new-ref"

    async def test_an_empty_client_knows_no_tools(self) -> None:
        client = LocalToolClient()
        assert await client.list_tools() == []
        result = await client.call_tool("add", {})
        assert result.text == "unknown tool 'add'; available tools: none"

    async def test_bad_arguments_are_an_error_result_not_an_exception(self) -> None:
        result = await LocalToolClient([add]).call_tool("add", {"a": 1})
        assert result.is_error
        assert "b: Field required" in result.text

    async def test_stop_iteration_is_propagated(self) -> None:
        client = LocalToolClient([ask, add])
        asked = await client.call_tool("ask-user", {"question": "Which file?"})
        added = await client.call_tool("add", {"a": 1, "b": 1})
        assert asked.stop_iteration is True
        assert asked.text == "asked: Which file?"
        assert added.stop_iteration is False

    def test_is_a_tool_client(self) -> None:
        assert isinstance(LocalToolClient(), ToolClient)


class TestRegistration:
    async def test_register_and_get(self) -> None:
        client = LocalToolClient()
        client.register_tool(add)
        assert client.get_tool("add") is add
        assert client.get_tool("missing") is None
        assert [s.name for s in await client.list_tools()] == ["add"]

    async def test_registering_the_same_tool_twice_keeps_one(self) -> None:
        client = LocalToolClient([add, add])
        client.register_tool(add)
        assert len(await client.list_tools()) == 1

    async def test_an_equivalent_wrapper_is_accepted(self) -> None:
        client = LocalToolClient([add])
        client.register_tool(tool(add.func))
        assert len(await client.list_tools()) == 1

    def test_a_different_tool_with_a_taken_name_is_refused(self) -> None:
        def impostor(a: int, b: int) -> int:
            """Subtract, despite the name."""
            return a - b

        client = LocalToolClient([add])
        with pytest.raises(UserError, match="a different tool named 'add' is already registered"):
            client.register_tool(tool(name="add")(impostor))
        assert client.get_tool("add") is add

    def test_a_conflict_at_construction_is_refused(self) -> None:
        class Add(Tool):
            name = "add"

        with pytest.raises(UserError):
            LocalToolClient([add, Add()])


class TestContext:
    async def test_tools_see_the_client_env_id_and_storage(self) -> None:
        storage = MemoryStorage()
        client = LocalToolClient([count_visits], env_id="env-a", storage=storage)
        assert client.storage is storage
        first = await client.call_tool("count_visits", {})
        second = await client.call_tool("count_visits", {})
        assert (first.structured, second.structured) == (1, 2)
        assert await storage.get("env-a/visits") == "2"

    async def test_environments_sharing_storage_stay_separate(self) -> None:
        storage = MemoryStorage()
        a = LocalToolClient([count_visits], env_id="a", storage=storage)
        b = LocalToolClient([count_visits], env_id="b", storage=storage)
        await a.call_tool("count_visits", {})
        await a.call_tool("count_visits", {})
        assert (await b.call_tool("count_visits", {})).structured == 1

    async def test_each_client_has_its_own_storage_by_default(self) -> None:
        first, second = LocalToolClient([count_visits]), LocalToolClient([count_visits])
        await first.call_tool("count_visits", {})
        assert (await second.call_tool("count_visits", {})).structured == 1

    async def test_tools_get_ids_from_the_client(self) -> None:
        client = LocalToolClient([new_ref], env_id="job-1")
        texts = [(await client.call_tool("new-ref", {})).text for _ in range(3)]
        assert texts == ["ref-1", "ref-2", "ref-3"]
        assert await client.ids.next() == "ref-4"

    async def test_a_given_id_generator_is_used(self) -> None:
        storage = MemoryStorage()
        ids = IdGenerator(storage, "shared")
        assert await ids.next() == "ref-1"
        client = LocalToolClient([new_ref], env_id="other", storage=storage, ids=ids)
        assert (await client.call_tool("new-ref", {})).text == "ref-2"

    def test_context_defaults(self) -> None:
        context = ToolContext()
        assert context.env_id == "local"
        assert isinstance(context.storage, MemoryStorage)
        assert context.ids is None
        assert context.scoped_key("k") == "local/k"
        assert ToolContext().storage is not context.storage


class TestIdGenerator:
    async def test_counts_up_from_one(self) -> None:
        ids = IdGenerator(MemoryStorage(), "env")
        assert [await ids.next() for _ in range(3)] == ["ref-1", "ref-2", "ref-3"]

    async def test_each_prefix_has_its_own_sequence(self) -> None:
        ids = IdGenerator(MemoryStorage(), "env")
        got = [await ids.next(), await ids.next("img"), await ids.next(), await ids.next("img")]
        assert got == ["ref-1", "img-1", "ref-2", "img-2"]

    async def test_each_environment_has_its_own_sequence(self) -> None:
        storage = MemoryStorage()
        a, b = IdGenerator(storage, "a"), IdGenerator(storage, "b")
        assert [await a.next(), await a.next(), await b.next()] == ["ref-1", "ref-2", "ref-1"]

    async def test_continues_across_generators_on_the_same_storage(self) -> None:
        storage = MemoryStorage()
        first = IdGenerator(storage, "env")
        await first.next()
        await first.next()
        restarted = IdGenerator(storage, "env")
        assert await restarted.next() == "ref-3"

    async def test_the_counter_lives_in_storage(self) -> None:
        storage = MemoryStorage()
        await storage.set("heron.ids/env/ref", "41")
        assert await IdGenerator(storage, "env").next() == "ref-42"

    @pytest.mark.parametrize("storage_kind", [MemoryStorage, YieldingStorage])
    async def test_concurrent_calls_never_duplicate(self, storage_kind: type[Storage]) -> None:
        ids = IdGenerator(storage_kind(), "env")
        got = await asyncio.gather(*(ids.next() for _ in range(50)))
        assert sorted(got, key=lambda s: int(s.split("-")[1])) == [f"ref-{n}" for n in range(1, 51)]

    async def test_concurrent_tool_calls_never_duplicate(self) -> None:
        client = LocalToolClient([new_ref], storage=YieldingStorage())
        results = await asyncio.gather(*(client.call_tool("new-ref", {}) for _ in range(20)))
        assert len({r.text for r in results}) == 20


class TestMemoryStorage:
    async def test_get_set(self) -> None:
        storage = MemoryStorage()
        assert await storage.get("k") is None
        await storage.set("k", "v1")
        await storage.set("k", "v2")
        assert await storage.get("k") == "v2"
