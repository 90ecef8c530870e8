"""Network: agents taking turns in the order a router (a function or an agent) decides."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pytest

from heron import (
    Message,
    Network,
    Provider,
    Route,
    RunError,
    SimpleAgent,
    StreamChunk,
    TeamResult,
    UserError,
)
from heron.agents import DONE
from heron.testing import ScriptedProvider, Step, call


def agent(name: str, *steps: Step, instruction: str = "") -> SimpleAgent:
    return SimpleAgent(provider=ScriptedProvider(steps), name=name, instruction=instruction)


def echo(prefix: str) -> Step:
    def answer(messages: Sequence[Message]) -> str:
        return f"{prefix}({messages[-1].text})"

    return answer


async def test_a_function_router_picks_each_step() -> None:
    researcher = agent("researcher", echo("facts"))
    writer = agent("writer", echo("draft"), echo("final"))
    critic = agent("critic", echo("notes"))
    seen: list[list[str]] = []

    def router(run: TeamResult) -> str | Route | None:
        seen.append(run.history)
        order = ["researcher", "writer", "critic"]
        if len(run.steps) < 3:
            return order[len(run.steps)]
        if len(run.steps) == 3:
            return Route(agent="writer", task=f"Revise: {run.steps[1].reply} per {run.reply}")
        return None

    network = Network([researcher, writer, critic], router=router, name="desk")
    result = await network.run("herons")

    assert result.history == ["researcher", "writer", "critic", "writer"]
    assert seen == [
        [],
        ["researcher"],
        ["researcher", "writer"],
        result.history[:3],
        result.history,
    ]
    assert [s.messages[0].text for s in result.steps] == [
        "herons",
        "facts(herons)",
        "draft(facts(herons))",
        "Revise: draft(facts(herons)) per notes(draft(facts(herons)))",
    ]
    assert result.stop_reason == "done" and result.team == "desk"
    assert result.routing == []
    members = (researcher, writer, critic)
    assert result.input_tokens == sum(a.usage.input_tokens for a in members)
    assert result.tokens_by_agent() == {
        a.name: (a.usage.input_tokens, a.usage.output_tokens) for a in members
    }


async def test_an_async_router_and_the_done_name() -> None:
    async def router(run: TeamResult) -> str:
        return "solo" if not run.steps else DONE

    result = await Network([agent("solo", "hi")], router=router).run("go")
    assert result.history == ["solo"] and result.stop_reason == "done"


async def test_a_scripted_router_agent_routes_by_structured_output() -> None:
    researcher = agent("researcher", echo("facts"), instruction="You find facts.\nCite them.")
    writer = agent("writer", echo("article"), instruction="You write articles.")
    router = agent(
        "router",
        '{"next": "researcher"}',
        '{"next": "nobody"}',  # not an agent: sent back to be corrected
        '{"next": "writer", "task": "Write about herons using the facts"}',
        '{"next": "done"}',
    )
    chunks: list[StreamChunk] = []
    network = Network([researcher, writer], router=router)
    result = await network.run("herons", on_chunk=chunks.append)

    assert result.history == ["researcher", "writer"]
    assert result.reply == "article(Write about herons using the facts)"
    assert len(result.routing) == 3
    assert [r.output_value.next for r in result.routing] == ["researcher", "writer", "done"]
    assert result.routing[1].turns == 2  # the invalid choice was retried

    # The router was told the task, the members and what happened so far.
    briefing = router.provider.requests[1].messages[-1].text  # type: ignore[attr-defined]
    assert "Task: herons" in briefing
    assert "- researcher: You find facts." in briefing and "Cite them" not in briefing
    assert "- writer: You write articles." in briefing
    assert "1. researcher: facts(herons)" in briefing

    # The router's own runs count: the team total is every member's spending.
    members = (researcher, writer, router)
    assert result.input_tokens == sum(a.usage.input_tokens for a in members)
    assert result.output_tokens == sum(a.usage.output_tokens for a in members)
    assert set(result.tokens_by_agent()) == {"researcher", "writer", "router"}
    assert {c.agent for c in chunks} == {"researcher", "writer", "router"}

    data = json.loads(json.dumps(result.export()))
    assert len(data["routing"]) == 3
    assert TeamResult.from_dict(data).export() == result.export()


async def test_the_step_limit_ends_the_run() -> None:
    ping = agent("ping", *(["pong"] * 5))
    network = Network([ping], router=lambda run: "ping", max_steps=3)
    result = await network.run("go")
    assert result.history == ["ping"] * 3
    assert result.stop_reason == "max_steps"


async def test_a_router_naming_a_stranger_fails_clearly() -> None:
    network = Network([agent("a", "x")], router=lambda run: "b")
    with pytest.raises(UserError, match=r"router chose 'b', which is not in network 'network'"):
        await network.run("go")
    assert network.last_result is not None and network.last_result.stop_reason == "error"


async def test_a_router_returning_nonsense_fails_clearly() -> None:
    network = Network([agent("a", "x")], router=lambda run: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(UserError, match="expected an agent's name, a Route, or None"):
        await network.run("go")


@pytest.mark.parametrize(
    ("names", "kwargs", "message"),
    [
        (["a", "a"], {}, "names must differ"),
        (["done"], {}, "may be named 'done'"),
        (["a"], {"router": "a"}, "router must be a function or an agent"),
        (["a"], {"max_steps": 0}, "max_steps must be a whole number"),
        (["a"], {"max_steps": True}, "max_steps must be a whole number"),
    ],
)
def test_bad_networks_are_refused(
    names: list[str], kwargs: dict[str, object], message: str
) -> None:
    options: dict[str, object] = {"router": lambda run: None, **kwargs}
    with pytest.raises(UserError, match=message):
        Network([agent(n) for n in names], **options)  # type: ignore[arg-type]


async def test_the_router_decides_each_step_from_a_fresh_briefing() -> None:
    ping = agent("ping", *(f"pong {i}" for i in range(6)))
    router = agent("router", *(['{"next": "ping"}', '{"next": "ping"}', '{"next": "done"}'] * 2))
    network = Network([ping], router=router)
    first = await network.run("first")
    second = await network.run("second")

    requests = router.provider.requests  # type: ignore[attr-defined]
    # One system prompt and one briefing per decision: nothing earlier is resent.
    assert [[m.role for m in r.messages] for r in requests] == [["system", "user"]] * 6
    assert "(none yet)" in requests[3].messages[-1].text
    assert "first" not in requests[3].messages[-1].text
    assert requests[5].messages[-1].text.count("pong") == 2  # this run's steps only
    assert router.messages == []  # the router agent's own conversation is left alone
    # Its tokens still count, in the team's totals and in its lifetime usage.
    routing = [*first.routing, *second.routing]
    assert router.usage.input_tokens == sum(r.input_tokens for r in routing) > 0
    assert router.usage.requests == 6


async def test_a_step_without_a_reply_fails_the_next_step_clearly() -> None:
    # The first member runs out of turns (a tool call, then its one-turn limit).
    mute = SimpleAgent(provider=ScriptedProvider([call("missing")]), name="mute", max_turns=1)
    network = Network(
        [mute, agent("writer", "never")], router=lambda run: "writer" if run.steps else "mute"
    )
    with pytest.raises(
        RunError, match=r"network 'network': step 1 \('mute'\) ended \(max_turns\) without a reply"
    ):
        await network.run("go")
    assert network.last_result is not None
    assert network.last_result.history == ["mute"]
    assert network.last_result.stop_reason == "error"


async def test_a_route_with_a_task_needs_no_reply_before_it() -> None:
    mute = SimpleAgent(provider=ScriptedProvider([call("missing")]), name="mute", max_turns=1)
    writer = agent("writer", echo("article"))

    def router(run: TeamResult) -> Route | None:
        if not run.steps:
            return Route(agent="mute")
        return Route(agent="writer", task="Write anyway") if len(run.steps) == 1 else None

    result = await Network([mute, writer], router=router).run("go")
    assert result.reply == "article(Write anyway)"


@pytest.mark.parametrize("task", ["", "   ", 42])
def test_a_route_task_is_a_real_task_or_none(task: object) -> None:
    with pytest.raises(UserError, match="a Route's task must be a non-empty string, or None"):
        Route(agent="a", task=task)  # type: ignore[arg-type]


async def test_the_router_is_told_when_a_reply_was_cut_off(
    cut_off: Callable[[str], Provider],
) -> None:
    cut = SimpleAgent(provider=cut_off("Herons are"), name="cut")
    router = agent("router", '{"next": "cut"}', '{"next": "done"}')
    await Network([cut], router=router).run("Describe herons")
    briefing = router.provider.requests[1].messages[-1].text  # type: ignore[attr-defined]
    assert "1. cut: Herons are (cut off by the token limit)" in briefing
