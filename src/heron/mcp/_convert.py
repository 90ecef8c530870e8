"""Heron's tool values to MCP's wire types and back."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import mcp_types as types

from .._core import ImagePart, Part, TextPart, ToolSchema
from ..tools import ToolResult

__all__ = [
    "ENV_ID_META_KEY",
    "STOP_ITERATION_META_KEY",
    "from_mcp_result",
    "from_mcp_tool",
    "to_mcp_result",
    "to_mcp_tool",
]

ENV_ID_META_KEY = "heron/env_id"
"""Request ``_meta`` key carrying the calling client's environment id."""
STOP_ITERATION_META_KEY = "heron/stop_iteration"
"""Result ``_meta`` key telling a Heron client to end the agent's run after this tool."""


def to_mcp_tool(schema: ToolSchema) -> types.Tool:
    """A Heron tool schema as an MCP tool listing entry."""
    return types.Tool(
        name=schema.name,
        description=schema.description or None,
        input_schema=schema.to_dict()["input_schema"],
    )


def from_mcp_tool(tool: types.Tool) -> ToolSchema:
    """An MCP tool listing entry as the schema a Heron agent shows its model."""
    input_schema = dict(tool.input_schema)
    input_schema.setdefault("type", "object")
    return ToolSchema(
        name=tool.name, description=tool.description or tool.title or "", input_schema=input_schema
    )


def to_mcp_result(result: ToolResult, *, structured_any_json: bool) -> types.CallToolResult:
    """A Heron tool result as an MCP ``tools/call`` result.

    ``structured_any_json``: whether the negotiated protocol allows any JSON
    value as structured content (older ones allow only objects; the text
    content carries the value either way).
    """
    content: list[types.ContentBlock] = []
    for part in result.content:
        if isinstance(part, TextPart):
            content.append(types.TextContent(text=part.text))
        elif part.data is not None:
            content.append(types.ImageContent(data=part.base64, mime_type=part.media_type))
        else:
            assert part.url is not None
            content.append(
                types.ResourceLink(uri=part.url, name="image", mime_type=part.media_type)
            )
    structured = result.structured
    if not structured_any_json and not isinstance(structured, dict):
        structured = None
    meta = {STOP_ITERATION_META_KEY: True} if result.stop_iteration else None
    return types.CallToolResult(
        content=content,
        structured_content=structured,
        is_error=result.is_error,
        _meta=meta,
    )


def from_mcp_result(result: types.CallToolResult) -> ToolResult:
    """An MCP ``tools/call`` result as the Heron result the model will see."""
    parts: list[Part] = []
    for block in result.content:
        parts.append(_part(block))
    meta = result.meta or {}
    return ToolResult(
        content=tuple(parts),
        structured=result.structured_content,
        is_error=result.is_error,
        stop_iteration=meta.get(STOP_ITERATION_META_KEY) is True,
    )


def _part(block: types.ContentBlock) -> Part:
    if isinstance(block, types.TextContent):
        return TextPart(text=block.text)
    if isinstance(block, types.ImageContent):
        data = _b64(block.data)
        if data is None:
            return TextPart(text=f"[{block.mime_type} image with invalid base64 data]")
        return ImagePart(data=data, media_type=block.mime_type)
    if isinstance(block, types.ResourceLink):
        mime = block.mime_type or ""
        if mime.startswith("image/"):
            return ImagePart(url=str(block.uri), media_type=mime)
        return TextPart(text=f"[resource {block.name}: {block.uri}]")
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return TextPart(text=resource.text)
        mime = resource.mime_type or "application/octet-stream"
        data = _b64(resource.blob)
        if mime.startswith("image/") and data is not None:
            return ImagePart(data=data, media_type=mime)
        return TextPart(text=f"[{mime} resource {resource.uri} not shown]")
    # Audio: no Heron part carries it, so the model is told what it missed.
    return TextPart(text=f"[{block.mime_type} audio not shown]")


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def meta_value(meta: Any, key: str) -> Any:
    """``meta[key]`` for a request or result ``_meta`` that may be missing."""
    return meta.get(key) if isinstance(meta, dict) else None
