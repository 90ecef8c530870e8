"""Rendering a node's event stream in the terminal, as ``heron run`` renders a run.

Text is written as it arrives; each tool step shows a spinner while it runs (on a
terminal) and ends as one ``✓``/``✗`` line; pushed reports, status changes worth
knowing and the settled outcome follow in order. Piped (to a file, or a program that
tails it) nothing is redrawn: each step is a ``↳`` line when it starts, and each turn and
status change a line of its own, so a reader knows at once what the node is doing. The
renderer only consumes :mod:`heron.api` events, so it is fed from a live stream or a
recorded list alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.padding import Padding
from rich.spinner import Spinner
from rich.text import Text

from .. import api
from ._markdown import MarkdownStream
from ._markdown import markdown as rendered_markdown
from ._view import _one_line

__all__ = ["NodeView", "outcome_lines"]

_STATUS_NOTES = {
    "dormant": "waiting for a message (heron nodes message {id} TEXT)",
    "interrupted": "interrupted: its turn was stopped (heron nodes revive {id} to go on)",
}
"""Statuses worth a line of their own while watching (piped, the others are named)."""
_SETTLED = ("completed", "failed", "cancelled")
"""Statuses the outcome's own line says (``✓ completed``, ``✗ failed: ...``)."""


@dataclass(slots=True)
class _Step:
    """A tool call that started and has not completed yet."""

    tool: str
    """The tool's name."""
    summary: str
    """The shape of its arguments."""


def _step_text(tool: str, summary: str) -> str:
    """``fs-read-file · reading a file``: Heron's own tools say what they do; the
    arguments' shape (``object with 1 field``) tells a reader nothing and is left out."""
    from ..client import describe_tool_default

    label = describe_tool_default(tool, summary)
    if label == f"Using {tool}":
        return tool
    return f"{tool} · {label[:1].lower()}{label[1:]}"


class NodeView:
    """Draws a node's events on ``console``; :attr:`outcome` once ``node.settled`` came.

    On a terminal running tool steps spin in a live region below the text, as does a
    turn that has written nothing yet. Elsewhere (a pipe, a file) nothing is redrawn:
    a step is a ``  ↳ tool …`` line when it starts and a ``✓``/``✗`` line when it ends,
    a turn is ``· turn 3`` when it starts and a status change ``· running``, each
    written (and flushed) the moment its event comes.

    ``status`` is the node's status already shown (a change to another is drawn);
    ``turns`` the turns it finished before the first event fed (``None``: unknown, and
    turns are drawn unnumbered).
    """

    def __init__(
        self,
        console: Console,
        node_id: str,
        *,
        status: api.StreamStatus | None = None,
        turns: int | None = 0,
    ) -> None:
        self.console = console
        self.node_id = node_id
        self.outcome: api.NodeOutcome | None = None
        """How the node settled (``None`` until its ``node.settled`` event)."""
        self.last_sequence: int | None = None
        """The number of the last event drawn (resume after it with ``--after``)."""
        self.status = status
        """The node's last status drawn or known."""
        self.turns = turns
        """The turns the node finished so far (``None`` when not known)."""
        self._turn: str | None = None  # a turn started that has written nothing yet
        self._running: dict[str, _Step] = {}
        self._live: Live | None = None
        self._column = 0
        self._message = ""  # the assistant text drawn since its last ``done``
        self._last_text = ""  # the last complete assistant message
        self._markdown = MarkdownStream(console)

    # -- writing ---------------------------------------------------------------

    def _write(self, text: str, style: str | None = None) -> None:
        if not text:
            return
        self._stop_live()  # a partial line cannot be drawn above a live region
        self.console.print(Text(text, style=style or ""), end="", soft_wrap=True)
        last_break = text.rfind("\n")
        self._column = len(text) - last_break - 1 if last_break >= 0 else self._column + len(text)

    def _line(self, line: RenderableType) -> None:
        """Print ``line`` on a line of its own (above the spinners, if they run)."""
        self._markdown.end()
        if self._column:
            self._write("\n")
        self.console.print(line, soft_wrap=isinstance(line, Text))

    def _text(self, text: str) -> None:
        """Answer text: rendered as Markdown on a terminal, as it came elsewhere."""
        if self._markdown.rendering:
            self._stop_live()  # one live region at a time: the text's own
            self._markdown.feed(text)
        else:
            self._write(text)

    # -- the live region of running steps --------------------------------------

    def _spinners(self) -> Group:
        spinners = [
            Spinner("dots", Text(_step_text(step.tool, step.summary), style="cyan"))
            for step in self._running.values()
        ]
        if self._turn is not None:
            spinners.append(Spinner("dots", Text(self._turn, style="dim")))
        return Group(*spinners)

    def _refresh_live(self) -> None:
        if not self.console.is_terminal:
            return
        if not self._running and self._turn is None:
            self._stop_live()
            return
        if self._live is None:
            self._markdown.end()
            if self._column:
                self._write("\n")
            self._live = Live(
                self._spinners(), console=self.console, transient=True, refresh_per_second=12.5
            )
            self._live.start()
        else:
            self._live.update(self._spinners())

    def _stop_live(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    # -- events ------------------------------------------------------------------

    def feed(self, event: api.NodeEvent) -> None:
        """Draw one event."""
        if not isinstance(event, api.StreamError):
            self.last_sequence = event.sequence_number
        if isinstance(event, api.OutputTextDelta):
            self._turn = None
            self._message += event.delta
            self._text(event.delta)
        elif isinstance(event, api.OutputTextDone):
            self._turn = None
            self._text_done(event.text)
        elif isinstance(event, api.ToolCallStarted):
            self._tool_started(event)
        elif isinstance(event, api.ToolCallCompleted):
            self._tool_done(event)
        elif isinstance(event, api.ReportPushed):
            self._report(event.report)
        elif isinstance(event, api.HumanRequestFiled):
            request = event.request
            line = Text(f"? asks a person: {request.title}", style="yellow")
            line.append(f" (heron inbox respond {request.request_id})", style="dim")
            self._line(line)
        elif isinstance(event, api.HumanRequestResolved):
            request = event.request
            self._line(Text(f"· request {request.request_id} {request.status}", style="dim"))
        elif isinstance(event, api.NodeStatusChanged):
            self._status(event.status)
        elif isinstance(event, api.TurnStarted):
            self._turn_started()
        elif isinstance(event, api.TurnCompleted):
            if self.turns is not None:
                self.turns += 1
            self._turn = None
            self._refresh_live()
        elif isinstance(event, api.NodeSettled):
            self._settled(event.outcome)
        elif isinstance(event, api.StreamError):
            self._stream_error(event.error)

    def _tool_started(self, event: api.ToolCallStarted) -> None:
        self._turn = None
        step = _Step(event.tool, event.summary)
        self._running[event.tool_call_id] = step
        if self.console.is_terminal:
            self._refresh_live()
            return
        line = Text("  ↳ ", style="dim")
        line.append(_step_text(step.tool, step.summary), style="cyan")
        line.append(" …", style="dim")
        self._line(line)

    def _turn_started(self) -> None:
        turn = "a new turn" if self.turns is None else f"turn {self.turns + 1}"
        if self.console.is_terminal:
            # The model may read for seconds before its first word: spin until it comes.
            self._turn = f"{turn} · the model is working"
            self._refresh_live()
        else:
            self._line(Text(f"· {turn}", style="dim"))

    def _status(self, status: api.StreamStatus) -> None:
        if status == self.status:
            return  # already said (the line before the stream, or a repeat after a restart)
        self.status = status
        note = _STATUS_NOTES.get(status)
        if note is not None:
            self._line(Text(f"· {note.format(id=self.node_id)}", style="dim"))
        elif not self.console.is_terminal and status not in _SETTLED:
            self._line(Text(f"· {status}", style="dim"))

    def _text_done(self, text: str) -> None:
        # Replayed from the daemon's log, a message comes without its deltas; after a
        # gap, only part of it was drawn. Draw what is missing.
        if text.startswith(self._message):
            self._text(text[len(self._message) :])
        elif text and not self._message:
            self._text(text)
        self._markdown.end()
        if self._column:
            self._write("\n")
        self._message = ""
        self._last_text = text

    def _tool_done(self, event: api.ToolCallCompleted) -> None:
        step = self._running.pop(event.tool_call_id, None) or _Step(event.tool, event.summary)
        ok = event.status == "ok"
        line = Text("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
        line.append(_step_text(step.tool, step.summary), style="cyan" if ok else "red")
        if not ok:
            line.append(" failed", style="red")
        self._line(line)
        if not ok and event.error:
            for reason in event.error.rstrip().splitlines():
                self._line(Text(f"    {reason}", style="red"))
        self._refresh_live()

    def _report(self, report: api.Report) -> None:
        head = Text(f"▍ report · {report.tier}", style="magenta")
        if report.title:
            head.append(f" · {report.title}", style="bold")
        self._line(head)
        if self.console.is_terminal:
            self._line(Padding(rendered_markdown(report.body.rstrip()), (0, 0, 0, 2)))
        else:
            for body_line in report.body.rstrip().splitlines():
                self._line(Text(f"  {body_line}"))
        if report.path:
            self._line(Text(f"  (written to {report.path})", style="dim"))

    def _stream_error(self, error: api.StreamErrorBody) -> None:
        if error.code == "stream_gap":
            self._message = ""  # the text before the gap is no prefix of what follows
            self._line(Text(f"· {error.message}", style="yellow"))
        else:
            self._line(Text(f"· stream: {error.code}: {error.message}", style="yellow"))

    def _settled(self, outcome: api.NodeOutcome) -> None:
        self.outcome = outcome
        self.close()
        for line in outcome_lines(
            outcome, shown_text=self._last_text, markdown=self.console.is_terminal
        ):
            self._line(line)

    def close(self) -> None:
        """Stop the spinners and end the current line (call when watching stops)."""
        self._turn = None
        self._markdown.end()
        self._stop_live()
        if self._column:
            self._write("\n")


def outcome_lines(
    outcome: api.NodeOutcome, *, shown_text: str = "", markdown: bool = False
) -> list[RenderableType]:
    """How a node settled, as lines: ``✓ completed`` and the result, or ``✗ failed`` and why.

    The result's text is left out when it is ``shown_text`` (already on screen); with
    ``markdown`` (a terminal) it is rendered as Markdown.
    """
    if isinstance(outcome, api.NodeResult):
        lines: list[RenderableType] = [Text("✓ completed", style="bold green")]
        if outcome.structured_result is not None:
            dumped = json.dumps(outcome.structured_result, indent=2, ensure_ascii=False)
            lines += [Text(line) for line in dumped.splitlines()]
        elif outcome.output_text and outcome.output_text.strip() != shown_text.strip():
            if markdown:
                lines.append(rendered_markdown(outcome.output_text))
            else:
                lines += [Text(line) for line in outcome.output_text.splitlines()]
        if outcome.final_report_path:
            lines.append(Text(f"final report: {outcome.final_report_path}", style="dim"))
        return lines
    failed: list[RenderableType] = [Text(f"✗ failed: {outcome.reason}", style="bold red")]
    if outcome.declined is not None:
        declined = outcome.declined
        code = f" [{declined.code}]" if declined.code else ""
        retry = " (retryable)" if declined.retryable else ""
        failed.append(
            Text(f"declined{code}: {_one_line(declined.reason, 400)}{retry}", style="red")
        )
    elif outcome.detail is not None:
        kind = f"{outcome.detail.error_type}: " if outcome.detail.error_type else ""
        failed.append(Text(f"{kind}{outcome.detail.message}", style="red"))
    return failed
