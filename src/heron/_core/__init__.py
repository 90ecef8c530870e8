"""The floor every layer of Heron stands on: pure data and small helpers, importing nothing
else of Heron.

Messages, chunks, responses and errors; the compaction request agents send and providers
recognise (:mod:`.compaction`); the version string, the lazy names of a package
(:mod:`.lazy`) and the ``with`` / ``async with`` closing mixins (:mod:`.closing`). Names
resolve on first use, so importing one module here (``heron._core.version`` on every
``import heron``) does not load the others.
"""

import typing

from .lazy import attach as _attach

if typing.TYPE_CHECKING:
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

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            ".errors": (
                "HeronError",
                "OutputValidationError",
                "ProviderError",
                "RunError",
                "ScriptExhaustedError",
                "ToolError",
                "UserError",
            ),
            ".messages": (
                "ImagePart",
                "Message",
                "Part",
                "Role",
                "TextPart",
                "ToolCall",
                "part_from_dict",
            ),
            ".responses": ("Capabilities", "ChatResponse", "FinishReason", "ToolSchema", "Usage"),
            ".stream": ("ChunkCallback", "StreamChunk", "emit"),
        },
    )

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
