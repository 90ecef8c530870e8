"""The live view of a run in the terminal: text as it streams, one line per tool call."""

from __future__ import annotations

import json
import traceback
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.status import Status
from rich.text import Text

from ._markdown import MarkdownStream

if TYPE_CHECKING:  # the agent loop's types: a listing command never loads them
    from .._core import StreamChunk, ToolCall
    from ..agents import RunResult

__all__ = ["LiveView", "fail", "summary_line"]

_RESULT_WIDTH = 100


def _one_line(text: str, width: int = _RESULT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _call_text(call: ToolCall) -> str:
    args = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items()
    )
    return f"{call.name}({args})"


class LiveView:
    """Renders a run's chunks: answer text as it arrives, thinking dimmed, and
    each tool call with its result as one compact line."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._calls: dict[str, ToolCall] = {}
        self._column = 0  # characters on the current line, to know when to break it
        self._thinking = False
        self._status: Status | None = None
        self._markdown = MarkdownStream(console)

    def working(self, text: str = "reading the prompt…") -> None:
        """Show ``text`` with a spinner until the first chunk arrives (on a terminal only:
        a small model can read a prompt for seconds before it writes anything)."""
        if self.console.is_terminal and self._status is None:
            self._status = Status(Text(text, style="dim"), console=self.console, spinner="dots")
            self._status.start()

    def stop_working(self) -> None:
        """Take the spinner of :meth:`working` away, and print the text still held to
        be rendered (idempotent)."""
        self._markdown.end()
        self._stop_spinner()

    def _stop_spinner(self) -> None:
        if self._status is not None:
            status, self._status = self._status, None
            status.stop()

    def _write(self, text: str, style: str | None = None) -> None:
        if not text:
            return
        self.console.print(Text(text, style=style or ""), end="", soft_wrap=True)
        last_break = text.rfind("\n")
        self._column = len(text) - last_break - 1 if last_break >= 0 else self._column + len(text)

    def _line_break(self) -> None:
        if self._column:
            self._write("\n")

    def on_chunk(self, chunk: StreamChunk) -> None:
        """Draw one chunk (pass this as ``on_chunk``)."""
        if chunk.role == "user":
            return  # the user typed it; echoing it back is noise
        self._stop_spinner()
        if chunk.role == "tool":
            self._tool_line(chunk)
            return
        if chunk.thinking:
            if not self._thinking:
                self._markdown.end()
                self._line_break()
                self._thinking = True
            self._write(chunk.thinking, "dim italic")
        if chunk.content:
            if self._thinking:
                self._thinking = False
                self._line_break()
            if self._markdown.rendering:
                self._markdown.feed(chunk.content)
            else:
                self._write(chunk.content)
        for call in chunk.tool_calls:
            self._calls[call.id] = call
        if chunk.done:
            self._thinking = False
            self._markdown.end()
            self._line_break()

    def _tool_line(self, chunk: StreamChunk) -> None:
        self._markdown.end()
        self._line_break()
        call = self._calls.pop(chunk.tool_call_id or "", None)
        shown = _call_text(call) if call else chunk.tool_name or "tool"
        line = Text("  ↳ ", style="dim")
        line.append(shown, style="cyan")
        line.append(" → ", style="dim")
        line.append(_one_line(chunk.content), style="red" if chunk.is_error else "dim")
        self.console.print(line, soft_wrap=True)

    def note(self, text: str, style: str | None) -> None:
        """Print ``text`` on a line of its own (after the current one, if any)."""
        self.stop_working()
        self._line_break()
        if text:
            self.console.print(Text(text, style=style or ""), soft_wrap=True)

    def finish(self, result: RunResult[Any]) -> None:
        """Close the last line and print the one-line summary."""
        self.stop_working()
        self._line_break()
        self.console.print(Text(summary_line(result), style="dim"), soft_wrap=True)


def summary_line(result: RunResult[Any]) -> str:
    """``tokens 467 in / 49 out · 2 turns · 1 tool call · 2.19 s``, plus why it stopped."""
    calls = len(result.tool_calls)
    parts = [
        f"tokens {result.input_tokens} in / {result.output_tokens} out",
        f"{result.turns} turn{'s' if result.turns != 1 else ''}",
        f"{calls} tool call{'s' if calls != 1 else ''}",
        f"{result.duration:.2f} s",
    ]
    if result.stop_reason not in (None, "end_turn", "tool_stop"):
        parts.append(f"stopped: {result.stop_reason}")
    return " · ".join(parts)


def fail(message: str, *, debug: bool = False) -> NoReturn:
    """Print ``heron: error: message`` on stderr (after the traceback with ``--debug``)
    and exit with status 1."""
    if debug:
        traceback.print_exc()
    error = Text(f"heron: error: {message}", style="red")
    Console(stderr=True, highlight=False).print(error, soft_wrap=True)
    raise typer.Exit(1)
