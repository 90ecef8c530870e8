"""The web-end-to-end-test skill: its prompt entry and its browser tools."""

from __future__ import annotations

from heron import SimpleAgent
from heron.skills import web_end_to_end_test
from heron.testing import ScriptedProvider
from heron.tools import browser_tools

BROWSER_TOOLS = [
    "browser-navigate",
    "browser-read",
    "browser-click",
    "browser-type",
    "browser-screenshot",
]


def test_bundles_the_browser_tools() -> None:
    skill = web_end_to_end_test()
    assert skill.name == "web-end-to-end-test"
    assert [t.name for t in skill.tools] == BROWSER_TOOLS
    assert skill.description.startswith("Use when")


def test_each_call_makes_its_own_browser_unless_given_one() -> None:
    first, second = web_end_to_end_test(), web_end_to_end_test()
    assert first.tools[0] is not second.tools[0]
    shared = browser_tools()
    assert list(web_end_to_end_test(browser=shared).tools) == list(shared)


async def test_renders_into_the_system_prompt_and_registers_its_tools_once() -> None:
    shared = browser_tools()
    provider = ScriptedProvider(["Nothing to test yet."])
    # The same tools passed directly and through the skill are registered once.
    agent = SimpleAgent(
        provider=provider,
        tools=list(shared),
        skills=[web_end_to_end_test(browser=shared)],
    )
    await agent.run("Test the sign-up page")
    (request,) = provider.requests
    system = request.messages[0].text
    assert "SKILLS:" in system
    assert "web-end-to-end-test - Use when a web app's behaviour must be checked" in system
    assert "browser-read" in system and "[ref=ref-4]" in system
    assert sorted(t.name for t in request.tools) == sorted(BROWSER_TOOLS)
    await shared.aclose()
