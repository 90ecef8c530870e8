"""Conversation values: messages, their content parts and tool calls.

Everything here is pure data: frozen, keyword-only dataclasses with a
lossless ``to_dict()`` / ``from_dict()`` round trip to plain JSON values, so
an agent's history can be saved and resumed anywhere.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "ImagePart",
    "Message",
    "Part",
    "Role",
    "TextPart",
    "ToolCall",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
"""Who authored a message."""

_ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))


@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    """A run of plain text inside a message."""

    text: str
    """The text itself."""

    def to_dict(self) -> dict[str, Any]:
        """Return this part as JSON-ready data."""
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, kw_only=True, slots=True)
class ImagePart:
    """An image inside a message: inline bytes or a URL, never both."""

    data: bytes | None = None
    """The encoded image (PNG, JPEG, ...), when it travels inline."""
    url: str | None = None
    """Where the image can be fetched, when it is not inline."""
    media_type: str = "image/png"
    """MIME type of the image."""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("ImagePart takes exactly one of `data` or `url`")

    @property
    def base64(self) -> str:
        """The inline bytes as base64 text (empty for a URL image)."""
        return base64.b64encode(self.data).decode("ascii") if self.data is not None else ""

    @property
    def data_url(self) -> str:
        """A ``data:`` URL for inline images, or the plain URL."""
        if self.url is not None:
            return self.url
        return f"data:{self.media_type};base64,{self.base64}"

    def to_dict(self) -> dict[str, Any]:
        """Return this part as JSON-ready data (bytes as base64)."""
        out: dict[str, Any] = {"type": "image", "media_type": self.media_type}
        if self.url is not None:
            out["url"] = self.url
        else:
            out["data"] = self.base64
        return out


Part: TypeAlias = TextPart | ImagePart
"""One piece of message content."""


def part_from_dict(data: Mapping[str, Any]) -> Part:
    """Rebuild a content part from :meth:`TextPart.to_dict` / :meth:`ImagePart.to_dict`."""
    kind = data.get("type")
    if kind == "text":
        return TextPart(text=str(data["text"]))
    if kind == "image":
        media_type = str(data.get("media_type", "image/png"))
        if "url" in data:
            return ImagePart(url=str(data["url"]), media_type=media_type)
        return ImagePart(data=base64.b64decode(data["data"], validate=True), media_type=media_type)
    raise ValueError(f"unknown content part type: {kind!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """A model's request to run one tool."""

    id: str
    """Identifier the tool's result must echo back (``tool_call_id``)."""
    name: str
    """Name of the tool to run."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Parsed JSON arguments."""

    def to_dict(self) -> dict[str, Any]:
        """Return this call as JSON-ready data."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Rebuild a call from :meth:`to_dict` output."""
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=dict(data["arguments"]))


@dataclass(frozen=True, kw_only=True, slots=True)
class Message:
    """One message of a conversation.

    ``content`` is either a plain string or a tuple of :class:`TextPart` and
    :class:`ImagePart`. Use the constructors :meth:`system`, :meth:`user`,
    :meth:`assistant` and :meth:`tool` rather than spelling out roles::

        Message.user("What is in this picture?", ImagePart(data=png))
    """

    role: Role
    """Who authored the message."""
    content: str | tuple[Part, ...] = ""
    """Text, or a sequence of text and image parts."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls the assistant made in this message."""
    tool_call_id: str | None = None
    """On ``tool`` messages: the call this result answers."""
    tool_name: str | None = None
    """On ``tool`` messages: the tool that produced the result."""
    is_error: bool = False
    """On ``tool`` messages: whether the tool failed."""
    thinking: str | None = None
    """The assistant's plain reasoning text for this turn, if any."""
    provider_thinking: tuple[Any, ...] | None = None
    """Opaque provider data (e.g. signed thinking blocks) replayed verbatim."""

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"unknown message role: {self.role!r}")
        content = self.content
        if not isinstance(content, str) and not (
            isinstance(content, tuple) and all(isinstance(p, TextPart | ImagePart) for p in content)
        ):
            raise ValueError(
                "message content must be a str or a tuple of TextPart and ImagePart, "
                f"not {type(content).__name__}"
            )
        if not isinstance(self.tool_calls, tuple) or not all(
            isinstance(c, ToolCall) for c in self.tool_calls
        ):
            raise ValueError("message tool_calls must be a tuple of ToolCall")

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message."""
        return cls(role="system", content=text)

    @classmethod
    def user(cls, *content: str | Part) -> Message:
        """A user message from text and image parts (plain text stays a string)."""
        return cls(role="user", content=_normalise(content))

    @classmethod
    def assistant(
        cls,
        text: str = "",
        *,
        tool_calls: Iterable[ToolCall] = (),
        thinking: str | None = None,
        provider_thinking: Sequence[Any] | None = None,
    ) -> Message:
        """An assistant message, optionally with tool calls and thinking."""
        return cls(
            role="assistant",
            content=text,
            tool_calls=tuple(tool_calls),
            thinking=thinking,
            provider_thinking=tuple(provider_thinking) if provider_thinking is not None else None,
        )

    @classmethod
    def tool(
        cls,
        *content: str | Part,
        tool_call_id: str,
        tool_name: str,
        is_error: bool = False,
    ) -> Message:
        """A tool result answering the call ``tool_call_id``."""
        return cls(
            role="tool",
            content=_normalise(content),
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            is_error=is_error,
        )

    @property
    def text(self) -> str:
        """All text of the message, images left out."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def parts(self) -> tuple[Part, ...]:
        """The content as parts (a plain string becomes one text part)."""
        if isinstance(self.content, str):
            return (TextPart(text=self.content),) if self.content else ()
        return self.content

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """The image parts of the message."""
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, ImagePart))

    def to_dict(self) -> dict[str, Any]:
        """Return the message as JSON-ready data, leaving out empty fields."""
        out: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, str):
            out["content"] = self.content
        else:
            out["content"] = [p.to_dict() for p in self.content]
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.tool_name is not None:
            out["tool_name"] = self.tool_name
        if self.is_error:
            out["is_error"] = True
        if self.thinking is not None:
            out["thinking"] = self.thinking
        if self.provider_thinking is not None:
            out["provider_thinking"] = list(self.provider_thinking)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Rebuild a message from :meth:`to_dict` output."""
        raw = data.get("content", "")
        content: str | tuple[Part, ...]
        if isinstance(raw, str):
            content = raw
        else:
            content = tuple(part_from_dict(p) for p in raw)
        pt = data.get("provider_thinking")
        return cls(
            role=data["role"],
            content=content,
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls", ())),
            tool_call_id=data.get("tool_call_id"),
            tool_name=data.get("tool_name"),
            is_error=bool(data.get("is_error", False)),
            thinking=data.get("thinking"),
            provider_thinking=tuple(pt) if pt is not None else None,
        )


def _normalise(content: Sequence[str | Part]) -> str | tuple[Part, ...]:
    if all(isinstance(c, str) for c in content):
        return "".join(c for c in content if isinstance(c, str))
    return tuple(TextPart(text=c) if isinstance(c, str) else c for c in content)
