"""An agent's two provider roles (main and image) and the image describer.

Tool output can hold images (a screenshot, a chart). Rather than carry raw
image bytes through the whole conversation, an agent has them described to
text by its *image* provider; with none, they are dropped and the model is
told why.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from .._core import ChatResponse, ImagePart, Message, Part, ProviderError, TextPart, UserError
from ..providers import Provider
from ..tools import ToolResult

__all__ = [
    "AgentProviders",
    "ImageDescriber",
    "ProviderRole",
    "ProvidersInput",
    "resolve_providers",
]

ProviderRole: TypeAlias = Literal["main", "image"]
"""What a provider does for an agent: drive the loop, or describe images."""

ProvidersInput: TypeAlias = Provider | Sequence[tuple[ProviderRole, Provider]]
"""One provider for both roles, or ``[("main", p1), ("image", p2)]``."""

_ROLES: tuple[ProviderRole, ...] = ("main", "image")

DESCRIBE_INSTRUCTION = (
    "You describe images for another AI model that cannot see them. Describe what the image "
    "shows as precisely as that model needs to act on it: layout, objects, colours, numbers, "
    "and any text, transcribed verbatim. Answer with the description only."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentProviders:
    """The providers an agent uses, by role."""

    main: Provider
    """Drives the agent loop."""
    image: Provider | None
    """Describes images in tool output (``None``: images are dropped)."""


def resolve_providers(value: ProvidersInput) -> AgentProviders:
    """Sort ``provider=`` into roles.

    A single provider drives the loop and, if it accepts images, describes
    them too. A list names each role once: ``main`` is required; ``image``
    is optional (by default the main provider, if it accepts images) and must
    accept images::

        resolve_providers([("main", deepseek), ("image", OllamaProvider("llava"))])
    """
    if isinstance(value, Provider):
        _check(value, "provider")
        return AgentProviders(main=value, image=value if _sees(value) else None)
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise UserError(
            f"provider must be a heron Provider or a list of (role, Provider) pairs, "
            f"not {type(value).__name__}"
        )
    roles: dict[str, Provider] = {}
    for entry in value:
        if not (isinstance(entry, tuple) and len(entry) == 2):
            raise UserError(f"each provider entry must be a (role, Provider) pair, not {entry!r}")
        role, provider = entry
        if role not in _ROLES:
            raise UserError(f"unknown provider role {role!r}; roles are 'main' and 'image'")
        if role in roles:
            raise UserError(f"provider role {role!r} is given twice")
        _check(provider, f"the {role!r} provider")
        roles[role] = provider
    main = roles.get("main")
    if main is None:
        raise UserError("a 'main' provider is required to drive the agent")
    image = roles.get("image")
    if image is None:
        image = main if _sees(main) else None
    elif not _sees(image):
        raise UserError(
            f"the 'image' provider {image.name!r} does not accept images "
            "(its capabilities say supports_images=False)"
        )
    return AgentProviders(main=main, image=image)


def _check(provider: object, what: str) -> None:
    if not isinstance(provider, Provider):
        raise UserError(f"{what} must be a heron Provider, not {type(provider).__name__}")
    if not inspect.iscoroutinefunction(provider.chat):
        raise UserError(f"{type(provider).__name__}.chat must be `async def`")


def _sees(provider: Provider) -> bool:
    return provider.capabilities.supports_images


class ImageDescriber:
    """Turns the images in a tool's result into text, with the image provider.

    Each image becomes a text part holding its description; the provider's
    responses are returned so their tokens are counted into the run. With no
    provider, each image becomes a note telling the model it was dropped; an
    image the provider fails to describe (a server error, an image it refuses)
    becomes a note saying why, and the run goes on.
    """

    def __init__(self, provider: Provider | None) -> None:
        self.provider = provider
        """The image-capable provider, or ``None``."""

    async def describe(
        self, result: ToolResult, *, tool_name: str
    ) -> tuple[ToolResult, list[ChatResponse]]:
        """``result`` with its images replaced by text, and the describing responses."""
        images = [p for p in result.content if isinstance(p, ImagePart)]
        if not images:
            return result, []
        if self.provider is None:
            texts = [_dropped(tool_name)] * len(images)
            responses: list[ChatResponse] = []
        else:
            outcomes = await asyncio.gather(
                *(self._ask(self.provider, p, tool_name) for p in images)
            )
            texts = [_described(tool_name, o) for o in outcomes]
            responses = [o for o in outcomes if isinstance(o, ChatResponse)]
        replacements = iter(texts)
        content: tuple[Part, ...] = tuple(
            TextPart(text=next(replacements)) if isinstance(p, ImagePart) else p
            for p in result.content
        )
        return replace(result, content=content), responses

    @staticmethod
    async def _ask(
        provider: Provider, image: ImagePart, tool_name: str
    ) -> ChatResponse | ProviderError | UserError:
        """The description of one image, or why there is none.

        A failure is the image's, not the run's: the tool did run, and the
        model can go on without the picture.
        """
        try:
            # Without on_chunk: the non-streaming path, whose usage every provider reports.
            return await provider.chat(
                [
                    Message.system(DESCRIBE_INSTRUCTION),
                    Message.user(f"The tool {tool_name!r} returned this image.", image),
                ]
            )
        except (ProviderError, UserError) as exc:
            return exc


def _described(tool_name: str, outcome: ChatResponse | ProviderError | UserError) -> str:
    if isinstance(outcome, ChatResponse):
        return (
            f"[image returned by tool {tool_name!r}, described by an image model: "
            f"{outcome.content.strip() or '(no description)'}]"
        )
    return (
        f"[image returned by tool {tool_name!r} could not be described, so you cannot "
        f"see it: {outcome}]"
    )


def _dropped(tool_name: str) -> str:
    return (
        f"[image returned by tool {tool_name!r} was dropped: this agent has no "
        "image-capable provider to describe it, so you cannot see it]"
    )
