"""What a network's router agent is sent per routing decision, step after step.

A ``Network`` with a router agent asks it, before every step, which agent acts next.
Printed side by side for each decision, all offline over ``ScriptedProvider``:

- **fresh**: ``Network(router=agent)``, which briefs the router on an empty
  conversation each time (the task, the members, this run's replies so far);
- **kept**: the same briefing sent by a function router to an agent that keeps its
  conversation, as the router agent used to: every earlier briefing and answer is
  sent again with each new one.

Columns: characters of the request (system prompt and messages), and the router's
input tokens, for that decision and in total. Each member's reply is ``--reply``
characters long.

Run it from the repository root::

    python bench/network_router.py             # 8 steps
    python bench/network_router.py --steps 16
"""

from __future__ import annotations

import argparse
import asyncio
import json

from heron import Network, Route, SimpleAgent, TeamResult
from heron.testing import ScriptedProvider


def members(steps: int, reply: int) -> list[SimpleAgent]:
    text = ("Herons wade in shallow water and wait for fish. " * 40)[:reply]
    return [
        SimpleAgent(provider=ScriptedProvider([text] * steps), name=name, instruction=role)
        for name, role in (("researcher", "You find facts."), ("writer", "You write."))
    ]


def decisions(steps: int) -> list[str]:
    names = ["researcher", "writer"]
    picks = [json.dumps({"next": names[i % 2]}) for i in range(steps)]
    return [*picks, json.dumps({"next": "done"})]


def request_chars(provider: ScriptedProvider) -> list[int]:
    return [sum(len(m.text) for m in r.messages) for r in provider.requests]


async def fresh(steps: int, reply: int) -> tuple[list[int], list[int]]:
    router = SimpleAgent(provider=ScriptedProvider(decisions(steps)), name="router")
    result = await Network(members(steps, reply), router=router, max_steps=steps + 1).run(
        "Write about herons"
    )
    return request_chars(router.provider), [r.input_tokens for r in result.routing]  # type: ignore[arg-type]


async def kept(steps: int, reply: int) -> tuple[list[int], list[int]]:
    team = members(steps, reply)
    router = SimpleAgent(provider=ScriptedProvider(decisions(steps)), name="router")
    network = Network(team, router=lambda run: None)  # only for its briefing text
    spent: list[int] = []

    async def route(run: TeamResult) -> Route | None:
        result = await router.run(network._briefing(run), output_type=network._decision)
        spent.append(result.input_tokens)
        choice = result.output_value.next
        return None if choice == "done" else Route(agent=choice)

    await Network(team, router=route, max_steps=steps + 1).run("Write about herons")
    return request_chars(router.provider), spent  # type: ignore[arg-type]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="agent steps (default 8)")
    parser.add_argument("--reply", type=int, default=400, help="reply length (default 400)")
    args = parser.parse_args()

    (fresh_chars, fresh_tokens), (kept_chars, kept_tokens) = (
        await fresh(args.steps, args.reply),
        await kept(args.steps, args.reply),
    )
    print(f"{'decision':>8} | {'fresh chars':>11} {'tokens':>7} | {'kept chars':>11} {'tokens':>7}")
    rows = zip(fresh_chars, fresh_tokens, kept_chars, kept_tokens, strict=True)
    for i, (fc, ft, kc, kt) in enumerate(rows, start=1):
        print(f"{i:>8} | {fc:>11,} {ft:>7,} | {kc:>11,} {kt:>7,}")
    print(
        f"{'total':>8} | {sum(fresh_chars):>11,} {sum(fresh_tokens):>7,} | "
        f"{sum(kept_chars):>11,} {sum(kept_tokens):>7,}"
    )


if __name__ == "__main__":
    asyncio.run(main())
