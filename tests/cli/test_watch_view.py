"""The node watch renderer on recorded event lists: exact text, spinners only on a terminal."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console

from heron import api
from heron.cli._watch import NodeView, outcome_lines

SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def events(*records: tuple[str, dict[str, Any]]) -> list[api.NodeEvent]:
    """Typed events numbered from 1, as the daemon's stream sends them."""
    return [
        api.parse_event(kind, {"node_id": "n1", "sequence_number": number, **data})
        for number, (kind, data) in enumerate(records, start=1)
    ]


def render(
    recorded: list[api.NodeEvent], *, terminal: bool = False, **known: Any
) -> tuple[str, NodeView]:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=terminal, color_system=None)
    view = NodeView(console, "n1", **known)
    for event in recorded:
        view.feed(event)
    view.close()
    return out.getvalue(), view


def started(call: str, tool: str) -> tuple[str, dict[str, Any]]:
    return "node.tool_call.started", {"tool_call_id": call, "tool": tool, "summary": "object"}


def completed(call: str, tool: str, status: str) -> tuple[str, dict[str, Any]]:
    data = {"tool_call_id": call, "tool": tool, "summary": "object", "status": status}
    return "node.tool_call.completed", data


RUN = events(
    ("node.status.changed", {"status": "running"}),
    ("node.turn.started", {}),
    ("node.output_text.delta", {"delta": "Let me "}),
    ("node.output_text.delta", {"delta": "look."}),
    ("node.output_text.done", {"text": "Let me look."}),
    started("c1", "fs-read"),
    started("c2", "bash"),
    completed("c2", "bash", "error"),
    completed("c1", "fs-read", "ok"),
    ("node.turn.completed", {}),
    (
        "node.report.pushed",
        {
            "report": {
                "report_id": 7,
                "node_id": "n1",
                "tier": "milestone",
                "title": "Read it",
                "body": "Two lines\nof report.",
                "path": None,
                "created_at": "2026-11-30T12:00:00Z",
            }
        },
    ),
    ("node.output_text.delta", {"delta": "It says hi."}),
    ("node.output_text.done", {"text": "It says hi."}),
    ("node.settled", {"outcome": {"kind": "result", "output_text": "It says hi."}}),
)


def test_a_run_reads_as_text_tool_lines_report_and_outcome() -> None:
    text, view = render(RUN)
    # Piped, each step is a line when it starts and one when it ends; each status
    # change and turn is a line too, the moment its event comes.
    assert text == (
        "· running\n"
        "· turn 1\n"
        "Let me look.\n"
        "  ↳ fs-read …\n"
        "  ↳ bash …\n"
        "  ✗ bash failed\n"
        "  ✓ fs-read\n"
        "▍ report · milestone · Read it\n"
        "  Two lines\n"
        "  of report.\n"
        "It says hi.\n"
        "✓ completed\n"
    )
    assert isinstance(view.outcome, api.NodeResult)
    assert view.last_sequence == len(RUN)
    assert not any(frame in text for frame in SPINNER_FRAMES)


def test_on_a_terminal_running_steps_spin_then_end_as_check_lines() -> None:
    text, _ = render(RUN, terminal=True)
    assert any(frame in text for frame in SPINNER_FRAMES)
    assert "✗ bash failed" in text and "✓ fs-read\n" in text
    assert text.rstrip().endswith("✓ completed")


def test_on_a_terminal_a_turn_that_wrote_nothing_yet_spins() -> None:
    # The model may read its prompt for seconds: the watcher sees that it is working.
    text, _ = render(RUN[:2], terminal=True)
    assert "turn 1 · the model is working" in text
    assert any(frame in text for frame in SPINNER_FRAMES)
    assert "· turn 1\n" not in text and "· running" not in text  # no lines for them there


def test_piped_turns_count_on_from_the_node_and_say_so_unnumbered_when_unknown() -> None:
    turns = events(
        ("node.turn.started", {}),
        ("node.turn.completed", {}),
        ("node.turn.started", {}),
    )
    assert render(turns, turns=4)[0] == "· turn 5\n· turn 6\n"
    assert render(turns, turns=None)[0] == "· a new turn\n· a new turn\n"


def test_a_status_is_said_once_and_settled_ones_by_the_outcome() -> None:
    recorded = events(
        ("node.status.changed", {"status": "running"}),
        ("node.status.changed", {"status": "dormant"}),
        ("node.status.changed", {"status": "dormant"}),
        ("node.status.changed", {"status": "running"}),
        ("node.status.changed", {"status": "completed"}),
        ("node.settled", {"outcome": {"kind": "result", "output_text": "Done."}}),
    )
    # "running" was said before the stream (the line of what the node is doing).
    text, view = render(recorded, status="running")
    assert text == (
        "· waiting for a message (heron nodes message n1 TEXT)\n· running\n✓ completed\nDone.\n"
    )
    assert view.status == "completed"


def test_a_replayed_message_without_deltas_is_drawn_once() -> None:
    replay = events(
        ("node.output_text.done", {"text": "First answer."}),
        ("node.output_text.delta", {"delta": "Sec"}),
        ("node.output_text.done", {"text": "Second answer."}),
    )
    text, _ = render(replay)
    # The second message's start was seen; only the rest is drawn after it.
    assert text == "First answer.\nSecond answer.\n"


def test_a_gap_is_said_and_the_next_message_drawn_whole() -> None:
    gapped = [
        *events(("node.output_text.delta", {"delta": "Half a"})),
        api.parse_event(
            "error",
            {"error": {"code": "stream_gap", "message": "events 2-4 were missed"}},
        ),
        api.parse_event(
            "node.output_text.done", {"node_id": "n1", "sequence_number": 5, "text": "Whole."}
        ),
    ]
    text, view = render(gapped)
    assert text == "Half a\n· events 2-4 were missed\nWhole.\n"
    assert view.last_sequence == 5


def test_a_dormant_node_says_how_to_wake_it() -> None:
    text, view = render(events(("node.status.changed", {"status": "dormant"})))
    assert text == "· waiting for a message (heron nodes message n1 TEXT)\n"
    assert view.outcome is None


def lines(outcome: dict[str, Any]) -> list[str]:
    settled = api.parse_event(
        "node.settled", {"node_id": "n1", "sequence_number": 1, "outcome": outcome}
    )
    assert isinstance(settled, api.NodeSettled)
    return [line.plain for line in outcome_lines(settled.outcome)]


def test_outcomes_say_the_result_or_why_it_failed() -> None:
    assert lines({"kind": "result", "structured_result": {"name": "heron", "n": 2}}) == [
        "✓ completed",
        "{",
        '  "name": "heron",',
        '  "n": 2',
        "}",
    ]
    assert lines({"kind": "result", "output_text": "Done.", "final_report_path": "/tmp/r.md"}) == [
        "✓ completed",
        "Done.",
        "final report: /tmp/r.md",
    ]
    assert lines(
        {
            "kind": "failure",
            "reason": "declined",
            "declined": {"reason": "no access", "code": "perm", "retryable": True},
        }
    ) == ["✗ failed: declined", "declined [perm]: no access (retryable)"]
    assert lines(
        {
            "kind": "failure",
            "reason": "provider_error",
            "detail": {"message": "HTTP 500 from the model", "error_type": "ProviderError"},
        }
    ) == ["✗ failed: provider_error", "ProviderError: HTTP 500 from the model"]


REPORT: dict[str, Any] = {
    "report_id": 8,
    "node_id": "n1",
    "tier": "progress",
    "title": None,
    "body": "",
    "path": None,
    "created_at": "2026-11-30T12:00:00Z",
}

MARKDOWN = (
    "# Plan\n\nRead **pyproject.toml** first.\n\n- name\n- version\n\n```toml\n[project]\n```\n"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _final(text: str) -> str:
    """The terminal output without its control sequences."""
    return ANSI.sub("", text)


def test_answer_markdown_is_rendered_on_a_terminal_and_kept_raw_in_a_pipe() -> None:
    deltas = [MARKDOWN[i : i + 7] for i in range(0, len(MARKDOWN), 7)]
    recorded = events(
        ("node.turn.started", {}),
        *(("node.output_text.delta", {"delta": piece}) for piece in deltas),
        ("node.output_text.done", {"text": MARKDOWN}),
        ("node.report.pushed", {"report": REPORT | {"body": "Found **two** fields."}}),
        ("node.settled", {"outcome": {"kind": "result", "output_text": MARKDOWN}}),
    )
    shown, _ = render(recorded, terminal=True)
    tail = _final(shown).split("[project]")[-1]  # after the last (rendered) code line
    assert "Read pyproject.toml first." in _final(shown)
    assert "**" not in tail and "```" not in tail
    assert "• name" in _final(shown) and "Found two fields." in _final(shown)
    piped, _ = render(recorded)
    assert MARKDOWN in piped and "Found **two** fields." in piped  # a pipe gets the text


def test_heron_run_renders_markdown_on_a_terminal() -> None:
    from heron._core import StreamChunk
    from heron.cli._view import LiveView

    out = io.StringIO()
    view = LiveView(Console(file=out, width=80, force_terminal=True, color_system=None))
    for i in range(0, len(MARKDOWN), 5):
        view.on_chunk(StreamChunk(role="assistant", content=MARKDOWN[i : i + 5]))
    view.on_chunk(StreamChunk(role="assistant", done=True))
    final = _final(out.getvalue()).split("[project]")[-1]
    assert "**" not in final and "```" not in final
    assert "Read pyproject.toml first." in _final(out.getvalue())


def test_outcome_lines_render_markdown_when_asked() -> None:
    result = api.NodeResult.model_validate({"kind": "result", "output_text": "Is **bold**."})
    out = io.StringIO()
    console = Console(file=out, width=60, force_terminal=True, color_system=None)
    for line in outcome_lines(result, markdown=True):
        console.print(line)
    assert "Is bold." in _final(out.getvalue()) and "**" not in out.getvalue()
    plain = outcome_lines(result)
    assert [str(line) for line in plain] == ["✓ completed", "Is **bold**."]


def test_a_long_block_being_written_shows_its_newest_words() -> None:
    from heron.cli._markdown import MarkdownStream

    out = io.StringIO()
    stream = MarkdownStream(Console(file=out, width=20, height=5, force_terminal=True))
    stream.feed("one " * 50 + "last words")
    shown = stream._tail()
    assert shown.endswith("last words") and len(shown) <= 3 * 20
    stream.end()
    assert "last words" in _final(out.getvalue()).rsplit("one", 1)[-1]
