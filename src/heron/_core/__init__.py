"""Pure data shared by every layer of Heron: messages, chunks, responses, errors."""

from .errors import (
    HeronError,
    OutputValidationError,
    ProviderError,
    RunError,
    ScriptExhaustedError,
    ToolError,
    UserError,
)
from .messages import ImagePart, Message, Part, Role, TextPart, ToolCall, part_from_dict
from .responses import Capabilities, ChatResponse, FinishReason, ToolSchema, Usage
from .stream import ChunkCallback, StreamChunk, emit

__all__ = [
    "Capabilities",
    "ChatResponse",
    "ChunkCallback",
    "FinishReason",
    "HeronError",
    "ImagePart",
    "Message",
    "OutputValidationError",
    "Part",
    "ProviderError",
    "Role",
    "RunError",
    "ScriptExhaustedError",
    "StreamChunk",
    "TextPart",
    "ToolCall",
    "ToolError",
    "ToolSchema",
    "Usage",
    "UserError",
    "emit",
    "part_from_dict",
]
