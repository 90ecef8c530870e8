"""Provider roles: main and image, and images in tool output described to text."""

from __future__ import annotations

import pytest

from heron import Capabilities, ImagePart, Message, SimpleAgent, StreamChunk, UserError, tool
from heron.agents import resolve_providers
from heron.testing import ScriptedProvider, call

TEXT_ONLY = Capabilities(supports_tools=True, supports_images=False)
PNG = ImagePart(data=b"\x89PNG fake", media_type="image/png")


@tool
def screenshot() -> list[object]:
    """Take a screenshot of the page."""
    return ["Page captured:", PNG]


def test_a_single_provider_describes_images_only_if_it_can_see() -> None:
    seeing = ScriptedProvider([])
    assert resolve_providers(seeing).image is seeing
    blind = ScriptedProvider([], capabilities=TEXT_ONLY)
    roles = resolve_providers(blind)
    assert (roles.main, roles.image) == (blind, None)


def test_role_lists_are_checked() -> None:
    main, image = ScriptedProvider([], capabilities=TEXT_ONLY), ScriptedProvider([])
    roles = resolve_providers([("main", main), ("image", image)])
    assert (roles.main, roles.image) == (main, image)
    with pytest.raises(UserError, match="'main' provider is required"):
        resolve_providers([("image", image)])
    with pytest.raises(UserError, match="given twice"):
        resolve_providers([("main", main), ("main", image)])
    with pytest.raises(UserError, match="unknown provider role 'utils'"):
        resolve_providers([("main", main), ("utils", image)])  # type: ignore[list-item]
    with pytest.raises(UserError, match="does not accept images"):
        resolve_providers([("main", image), ("image", main)])
    with pytest.raises(UserError, match="must be a heron Provider"):
        resolve_providers([("main", "gpt-5")])  # type: ignore[list-item]
    with pytest.raises(UserError, match="list of"):
        resolve_providers("gpt-5")  # type: ignore[arg-type]


async def test_tool_images_are_described_by_the_image_provider() -> None:
    main = ScriptedProvider(
        [call("screenshot"), "The page shows a login form."], capabilities=TEXT_ONLY
    )
    image = ScriptedProvider(["A login form with two fields."])
    agent = SimpleAgent(provider=[("main", main), ("image", image)], tools=[screenshot])
    chunks: list[StreamChunk] = []
    result = await agent.run("What is on the page?", on_chunk=chunks.append)

    assert result.reply == "The page shows a login form."
    # The describer saw the image; the main model only ever saw text.
    described = image.requests[0].messages
    assert described[-1].images == (PNG,)
    tool_message = main.requests[1].messages[-1]
    assert tool_message.role == "tool" and not tool_message.images
    assert "A login form with two fields." in tool_message.text
    assert tool_message.text.startswith("Page captured:")
    tool_chunk = next(c for c in chunks if c.role == "tool")
    assert "A login form with two fields." in tool_chunk.content
    # The description's tokens are the run's too: three requests, all counted
    # (the describe request alone reads the image, ~256 estimated tokens).
    assert agent.usage.requests == 3
    assert result.input_tokens == agent.usage.input_tokens > 256


async def test_without_an_image_provider_the_image_is_dropped_and_the_model_told() -> None:
    main = ScriptedProvider([call("screenshot"), "I cannot see it."], capabilities=TEXT_ONLY)
    agent = SimpleAgent(provider=main, tools=[screenshot])
    await agent.run("What is on the page?")

    tool_message = main.requests[1].messages[-1]
    assert not tool_message.images
    assert "was dropped" in tool_message.text and "no image-capable provider" in tool_message.text
    assert agent.usage.requests == 2


async def test_a_seeing_main_provider_describes_its_own_tool_images() -> None:
    main = ScriptedProvider([call("screenshot"), "A chart.", "Done."])
    agent = SimpleAgent(provider=main, tools=[screenshot])
    result = await agent.run("Look")
    # Turn 1 called the tool; the describe request took the next step; then the answer.
    assert main.requests[1].messages[-1].images == (PNG,)
    assert result.reply == "Done."
    assert "A chart." in result.tool_calls[0].result


def test_prompt_images_still_reach_the_main_provider() -> None:
    main = ScriptedProvider(["ok"])
    agent = SimpleAgent(provider=main)
    agent.run_sync(Message.user("See", PNG))
    assert main.requests[0].messages[-1].images == (PNG,)
