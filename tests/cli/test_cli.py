"""``heron run`` and the global options: exact live output, ``--json``, ``--state``, errors.

Everything runs on ``scripted:`` files, in process through Typer's ``CliRunner`` and
as a real ``heron`` subprocess.
"""

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from heron import RunResult, __version__
from heron.cli import app

HERON = Path(sys.executable).with_name("heron")

TOKYO_SCRIPT: list[Any] = [
    {
        "text": "Checking.",
        "thinking": "need the clock",
        "tool_calls": [{"name": "get-current-time", "arguments": {"timezone": "Asia/Tokyo"}}],
    },
    "It is late in Tokyo.",
]

# The whole of stdout; only the clock reading, token estimates and duration vary.
TOKYO_OUTPUT = re.compile(
    r"need the clock\n"
    r"Checking\.\n"
    r'  ↳ get-current-time\(timezone="Asia/Tokyo"\) → (?P<stamp>\S+) \((?P<day>\w+), Asia/Tokyo\)\n'
    r"It is late in Tokyo\.\n"
    r"tokens [1-9]\d* in / [1-9]\d* out · 2 turns · 1 tool call · \d+\.\d\d s\n"
)


@dataclass
class Outcome:
    """What one ``heron`` invocation did."""

    code: int
    stdout: str
    stderr: str


Heron = Callable[..., Outcome]


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No colours, no provider or debug choice inherited from whoever runs the tests."""
    for variable in (
        "FORCE_COLOR",
        "TTY_COMPATIBLE",
        "TTY_INTERACTIVE",
        "HERON_PROVIDER",
        "HERON_DEBUG",
        "HERON_LOCAL_MODEL",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("COLUMNS", "120")


def in_process(*args: str) -> Outcome:
    result = CliRunner().invoke(app, list(args), prog_name="heron")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # an escaped exception is a bug, not an outcome
    return Outcome(result.exit_code, result.stdout, result.stderr)


def as_subprocess(*args: str) -> Outcome:
    done = subprocess.run(
        [str(HERON), *args],
        capture_output=True,
        encoding="utf-8",
        stdin=subprocess.DEVNULL,
        env=dict(os.environ),
        timeout=60,
        check=False,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


@pytest.fixture(params=["in-process", "subprocess"])
def heron(request: pytest.FixtureRequest) -> Heron:
    """Run ``heron`` one way or the other."""
    return in_process if request.param == "in-process" else as_subprocess


@pytest.fixture
def script(tmp_path: Path) -> Callable[[list[Any]], str]:
    """Write a script file; returns the ``scripted:`` spec for it."""
    count = 0

    def write(steps: list[Any]) -> str:
        nonlocal count
        count += 1
        path = tmp_path / f"script{count}.json"
        path.write_text(json.dumps(steps), encoding="utf-8")
        return f"scripted:{path}"

    return write


def check_clock(stamp: str, offset: timedelta, started: datetime) -> None:
    """``stamp`` is now (give or take the test's run), at ``offset`` from UTC."""
    moment = datetime.fromisoformat(stamp)
    assert moment.utcoffset() == offset
    assert started.replace(microsecond=0) <= moment <= datetime.now(UTC)


def error_line(outcome: Outcome, *, stdout: str | None = "") -> str:
    """The single ``heron: error:`` line of a handled failure (no traceback).

    ``stdout`` is what was printed before failing (``None``: not checked).
    """
    assert outcome.code == 1, outcome
    if stdout is not None:
        assert outcome.stdout == stdout
    assert "Traceback" not in outcome.stderr
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1, outcome.stderr
    assert lines[0].startswith("heron: error: ")
    return lines[0].removeprefix("heron: error: ")


class TestLiveView:
    def test_thinking_text_tool_line_answer_and_summary(
        self, heron: Heron, script: Callable[[list[Any]], str]
    ) -> None:
        started = datetime.now(UTC)
        outcome = heron("run", "What time is it in Tokyo?", "-p", script(TOKYO_SCRIPT))
        assert (outcome.code, outcome.stderr) == (0, "")
        match = TOKYO_OUTPUT.fullmatch(outcome.stdout)
        assert match, outcome.stdout
        check_clock(match["stamp"], timedelta(hours=9), started)
        assert match["day"] == datetime.fromisoformat(match["stamp"]).strftime("%A")

    def test_a_plain_answer(self, script: Callable[[list[Any]], str]) -> None:
        outcome = in_process("run", "hi", "--provider", script(["Hello there, friend."]))
        assert outcome.code == 0
        assert re.fullmatch(
            r"Hello there, friend\.\n"
            r"tokens \d+ in / \d+ out · 1 turn · 0 tool calls · \d+\.\d\d s\n",
            outcome.stdout,
        ), outcome.stdout

    def test_a_failing_tool_call_shows_its_error(self, script: Callable[[list[Any]], str]) -> None:
        steps = [
            {"tool_calls": [{"name": "get-current-time", "arguments": {"timezone": "Mars/Base"}}]},
            "Mars has no timezone.",
        ]
        outcome = in_process("run", "time on Mars?", "-p", script(steps))
        assert outcome.code == 0
        assert re.fullmatch(
            r'  ↳ get-current-time\(timezone="Mars/Base"\) → '
            r"unknown timezone 'Mars/Base': use an IANA name such as Europe/Paris\n"
            r"Mars has no timezone\.\n"
            r"tokens \d+ in / \d+ out · 2 turns · 1 tool call · \d+\.\d\d s\n",
            outcome.stdout,
        ), outcome.stdout

    def test_two_calls_in_one_turn_and_a_multiline_answer(
        self, script: Callable[[list[Any]], str]
    ) -> None:
        started = datetime.now(UTC)
        steps = [
            {
                "tool_calls": [
                    {"name": "get-current-time"},
                    {"name": "get-current-time", "arguments": {"timezone": "Asia/Kolkata"}},
                ]
            },
            {"text": "UTC: early.\nKolkata: later.", "thinking": "compare them"},
        ]
        outcome = in_process("run", "compare", "-p", script(steps))
        assert outcome.code == 0
        match = re.fullmatch(
            r"  ↳ get-current-time\(\) → (?P<utc>\S+) \(\w+, UTC\)\n"
            r'  ↳ get-current-time\(timezone="Asia/Kolkata"\) → (?P<india>\S+) '
            r"\(\w+, Asia/Kolkata\)\n"
            r"compare them\n"
            r"UTC: early\.\n"
            r"Kolkata: later\.\n"
            r"tokens \d+ in / \d+ out · 2 turns · 2 tool calls · \d+\.\d\d s\n",
            outcome.stdout,
        )
        assert match, outcome.stdout
        check_clock(match["utc"], timedelta(0), started)
        check_clock(match["india"], timedelta(hours=5, minutes=30), started)

    def test_running_out_of_turns_says_so(self, script: Callable[[list[Any]], str]) -> None:
        outcome = in_process("run", "time?", "-p", script(TOKYO_SCRIPT), "--max-turns", "1")
        assert outcome.code == 0
        assert re.fullmatch(
            r"need the clock\n"
            r"Checking\.\n"
            r'  ↳ get-current-time\(timezone="Asia/Tokyo"\) → \S+ \(\w+, Asia/Tokyo\)\n'
            r"tokens \d+ in / \d+ out · 1 turn · 1 tool call · \d+\.\d\d s · stopped: max_turns\n",
            outcome.stdout,
        ), outcome.stdout

    def test_heron_provider_is_the_default(
        self, script: Callable[[list[Any]], str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HERON_PROVIDER", script(["From the environment."]))
        outcome = in_process("run", "hi")
        assert outcome.code == 0
        assert outcome.stdout.startswith("From the environment.\n")

    def test_python_dash_m_heron(self, script: Callable[[list[Any]], str]) -> None:
        started = datetime.now(UTC)
        done = subprocess.run(
            [sys.executable, "-m", "heron", "run", "time?", "-p", script(TOKYO_SCRIPT)],
            capture_output=True,
            encoding="utf-8",
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, "")
        match = TOKYO_OUTPUT.fullmatch(done.stdout)
        assert match, done.stdout
        check_clock(match["stamp"], timedelta(hours=9), started)


class TestJson:
    def test_the_result_record(self, heron: Heron, script: Callable[[list[Any]], str]) -> None:
        started = datetime.now(UTC)
        outcome = heron("run", "What time is it in Tokyo?", "-p", script(TOKYO_SCRIPT), "--json")
        assert (outcome.code, outcome.stderr) == (0, "")
        data = json.loads(outcome.stdout)  # stdout is the JSON and nothing else
        assert data["reply"] == "It is late in Tokyo."  # as the README lists it
        assert data["output"] == [{"role": "assistant", "content": "It is late in Tokyo."}]
        (call,) = data["tool_calls"]
        assert call["id"] == "call_1"
        assert call["name"] == "get-current-time"
        assert call["arguments"] == {"timezone": "Asia/Tokyo"}
        stamp, _, rest = call["result"].partition(" ")
        assert rest.endswith(", Asia/Tokyo)")
        check_clock(stamp, timedelta(hours=9), started)
        assert data["stop_reason"] == "end_turn"
        assert data["turns"] == 2
        assert data["input_tokens"] > 0 and data["output_tokens"] > 0
        assert re.fullmatch(r"[0-9a-f]{64}", data["checksum"])
        # from_dict refuses a checksum that does not match the record's content.
        assert RunResult.from_dict(data).checksum == data["checksum"]

    def test_long_and_non_ascii_text_survives_intact(
        self, script: Callable[[list[Any]], str]
    ) -> None:
        reply = "Très bien — " + " ".join(f"word{n}" for n in range(60)) + " ✓"
        outcome = in_process("run", "hi", "-p", script([reply]), "--json")
        assert outcome.code == 0
        assert json.loads(outcome.stdout)["output"][0]["content"] == reply

    def test_max_turns_stop_reason(self, script: Callable[[list[Any]], str]) -> None:
        outcome = in_process("run", "t", "-p", script(TOKYO_SCRIPT), "--max-turns", "1", "--json")
        data = json.loads(outcome.stdout)
        assert data["stop_reason"] == "max_turns"
        assert data["turns"] == 1
        assert [c["name"] for c in data["tool_calls"]] == ["get-current-time"]

    def test_the_instruction_reaches_the_model(self, script: Callable[[list[Any]], str]) -> None:
        plain = json.loads(in_process("run", "hi", "-p", script(["ok"]), "--json").stdout)
        instructed = json.loads(
            in_process(
                "run", "hi", "-p", script(["ok"]), "--json", "-i", "Answer in French. " * 20
            ).stdout
        )
        assert instructed["input_tokens"] > plain["input_tokens"] + 20


class TestState:
    @pytest.mark.slow  # three invocations
    def test_a_second_run_resumes_the_first(
        self, heron: Heron, script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "sessions" / "ada.json"  # the folder is made on first save
        first = heron("run", "My name is Ada.", "-p", script(["Hello Ada."]), "--state", str(state))
        assert first.code == 0, first
        saved = json.loads(state.read_text(encoding="utf-8"))
        exchange = [
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": "Hello Ada."},
        ]
        assert saved["messages_full"] == exchange

        second_script = script(["Your name is Ada."])
        resumed = heron(
            "run", "What is my name?", "-p", second_script, "--state", str(state), "--json"
        )
        assert resumed.code == 0, resumed
        saved = json.loads(state.read_text(encoding="utf-8"))
        assert saved["messages_full"] == [
            *exchange,
            {"role": "user", "content": "What is my name?"},
            {"role": "assistant", "content": "Your name is Ada."},
        ]
        assert saved["messages"] == saved["messages_full"]
        # The model was sent the first exchange too: more input than the same run afresh.
        fresh = heron("run", "What is my name?", "-p", second_script, "--json")
        assert json.loads(resumed.stdout)["input_tokens"] > json.loads(fresh.stdout)["input_tokens"]
        assert sorted(p.name for p in state.parent.iterdir()) == ["ada.json"]

    def test_tool_calls_are_saved_and_resumed(
        self, script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "state.json"
        assert (
            in_process("run", "time?", "-p", script(TOKYO_SCRIPT), "--state", str(state)).code == 0
        )
        again = [{"tool_calls": [{"name": "get-current-time"}]}, "Done."]
        assert in_process("run", "again", "-p", script(again), "--state", str(state)).code == 0
        messages = json.loads(state.read_text(encoding="utf-8"))["messages_full"]
        assert [m["role"] for m in messages] == [
            *("user", "assistant", "tool", "assistant"),
            *("user", "assistant", "tool", "assistant"),
        ]
        assert messages[1]["thinking"] == "need the clock"
        # The resumed run numbered its call after the saved one: ids stay unique.
        assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == [
            "call_1",
            "call_2",
        ]

    @pytest.mark.slow  # two invocations
    def test_a_failed_run_leaves_the_state_file_untouched(
        self, heron: Heron, script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "state.json"
        assert heron("run", "hi", "-p", script(["Hello."]), "--state", str(state)).code == 0
        before = state.read_bytes()
        # The script ends after the tool call: the run fails midway.
        exhausted = script([{"tool_calls": [{"name": "get-current-time"}]}])
        outcome = heron("run", "time?", "-p", exhausted, "--state", str(state))
        assert "ran out of steps" in error_line(outcome, stdout=None)
        assert outcome.stdout.startswith("  ↳ get-current-time() → ")
        assert state.read_bytes() == before
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    def test_a_failed_first_run_creates_no_state_file(
        self, script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "state.json"
        exhausted = script([{"tool_calls": [{"name": "get-current-time"}]}])
        error_line(in_process("run", "time?", "-p", exhausted, "--state", str(state)), stdout=None)
        assert not state.exists()

    @pytest.mark.parametrize(
        ("content", "problem"),
        [
            ("{not json", "is not valid JSON"),
            ("", "is not valid JSON"),
            ('["a", "list"]', "does not hold a saved agent state"),
            ('"a string"', "does not hold a saved agent state"),
            ('{"messages": []}', "version"),
            ('{"version": 99, "messages": []}', "version 99"),
            ('{"version": 1, "messages_full": [{"role": "alien"}]}', "invalid agent state"),
            ('{"version": 1, "turns": 3}', "invalid agent state"),
        ],
        ids=["syntax", "empty", "list", "string", "no-version", "future", "bad-message", "extra"],
    )
    def test_a_bad_state_file_is_an_error_and_is_kept(
        self, content: str, problem: str, tmp_path: Path, script: Callable[[list[Any]], str]
    ) -> None:
        state = tmp_path / "state.json"
        state.write_text(content, encoding="utf-8")
        message = error_line(in_process("run", "hi", "-p", script(["x"]), "--state", str(state)))
        assert problem in message
        assert state.read_text(encoding="utf-8") == content

    def test_a_bad_state_file_as_a_subprocess(
        self, tmp_path: Path, script: Callable[[list[Any]], str]
    ) -> None:
        state = tmp_path / "state.json"
        state.write_text("[]", encoding="utf-8")
        assert error_line(
            as_subprocess("run", "hi", "-p", script(["x"]), "--state", str(state))
        ) == (f"state file {state} does not hold a saved agent state")
        assert state.read_text(encoding="utf-8") == "[]"

    @pytest.mark.parametrize("content", ["{not json", '["a", "list"]', '{"messages": []}'])
    def test_a_bad_state_file_error_names_the_file(
        self, content: str, tmp_path: Path, script: Callable[[list[Any]], str]
    ) -> None:
        state = tmp_path / "state.json"
        state.write_text(content, encoding="utf-8")
        message = error_line(in_process("run", "hi", "-p", script(["x"]), "--state", str(state)))
        assert str(state) in message

    def test_a_state_file_in_undecodable_bytes(
        self, tmp_path: Path, script: Callable[[list[Any]], str]
    ) -> None:
        state = tmp_path / "state.json"
        state.write_bytes(b"\xff\xfe\x00garbage")
        message = error_line(in_process("run", "hi", "-p", script(["x"]), "--state", str(state)))
        assert f"state file {state} is not valid JSON" in message

    def test_a_directory_is_not_a_state_file(
        self, tmp_path: Path, script: Callable[[list[Any]], str]
    ) -> None:
        outcome = in_process("run", "hi", "-p", script(["x"]), "--state", str(tmp_path))
        assert outcome.code == 2
        assert "--state" in outcome.stderr


class TestErrors:
    def test_unknown_provider(self, heron: Heron) -> None:
        assert error_line(heron("run", "hi", "-p", "gemini:pro")) == (
            "unknown provider 'gemini:pro': "
            "use one of local, openai, deepseek, anthropic, ollama, scripted"
        )

    @pytest.mark.parametrize(
        ("spec", "variable", "vendor"),
        [
            ("openai", "OPENAI_API_KEY", "OpenAI"),
            ("openai:gpt-5", "OPENAI_API_KEY", "OpenAI"),
            ("deepseek", "DEEPSEEK_API_KEY", "DeepSeek"),
            ("anthropic:claude-sonnet-5", "ANTHROPIC_API_KEY", "Anthropic"),
        ],
    )
    def test_missing_api_key(
        self, spec: str, variable: str, vendor: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv(variable, raising=False)
        assert error_line(in_process("run", "hi", "-p", spec)) == (
            f"{vendor} needs an API key: set {variable}"
        )

    def test_missing_api_key_as_a_subprocess(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        assert error_line(as_subprocess("run", "hi", "-p", "anthropic")) == (
            "Anthropic needs an API key: set ANTHROPIC_API_KEY"
        )

    def test_missing_script_file(self, heron: Heron, tmp_path: Path) -> None:
        missing = tmp_path / "missing.json"
        assert error_line(heron("run", "hi", "-p", f"scripted:{missing}")) == (
            f"script file not found: {missing}"
        )

    def test_invalid_script_content(self, heron: Heron, tmp_path: Path) -> None:
        path = tmp_path / "bad.json"
        path.write_text('["fine", {"txt": "typo"}]', encoding="utf-8")
        assert error_line(heron("run", "hi", "-p", f"scripted:{path}")) == (
            f"script {path}: step 1: unknown keys txt"
        )

    def test_script_that_is_not_json(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.json"
        path.write_text("- not json", encoding="utf-8")
        message = error_line(in_process("run", "hi", "-p", f"scripted:{path}"))
        assert message.startswith(f"script {path} is not valid JSON: ")

    @pytest.mark.parametrize(
        "step", [{"tool_calls": None}, {"delay": "soon"}, {"tool_calls": [{"name": 1}]}]
    )
    def test_malformed_script_steps_never_show_a_traceback(self, step: Any, tmp_path: Path) -> None:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps([step]), encoding="utf-8")
        message = error_line(as_subprocess("run", "hi", "-p", f"scripted:{path}"))
        assert message.startswith(f"script {path}: step 0")

    @pytest.mark.parametrize("command", ["run", "chat"])
    def test_max_turns_zero_is_a_usage_error(
        self, command: str, script: Callable[[list[Any]], str]
    ) -> None:
        args = [command, "hi"] if command == "run" else [command]
        outcome = in_process(*args, "-p", script(["unused"]), "--max-turns", "0")
        assert outcome.code == 2
        assert "--max-turns" in outcome.stderr
        assert outcome.stdout == ""

    def test_max_turns_zero_as_a_subprocess(self, script: Callable[[list[Any]], str]) -> None:
        outcome = as_subprocess("run", "hi", "-p", script(["unused"]), "--max-turns", "0")
        assert outcome.code == 2
        assert "--max-turns" in outcome.stderr
        assert "Traceback" not in outcome.stderr

    def test_a_prompt_is_required(self) -> None:
        outcome = in_process("run")
        assert outcome.code == 2
        assert "Missing argument" in outcome.stderr


class TestGlobalOptions:
    def test_version(self, heron: Heron) -> None:
        outcome = heron("--version")
        assert (outcome.code, outcome.stdout, outcome.stderr) == (0, f"heron {__version__}\n", "")
        assert re.fullmatch(r"\d+\.\d+\.\d+\S*", __version__)

    def test_no_traceback_without_debug(self) -> None:
        outcome = as_subprocess("run", "hi", "-p", "nope")
        error_line(outcome)

    @pytest.mark.parametrize("how", ["--debug", "HERON_DEBUG"])
    def test_debug_shows_the_traceback(self, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
        args = ["run", "hi", "-p", "nope"]
        if how == "--debug":
            args.insert(0, "--debug")
        else:
            monkeypatch.setenv("HERON_DEBUG", "1")
        outcome = as_subprocess(*args)
        assert outcome.code == 1
        assert outcome.stdout == ""
        assert outcome.stderr.startswith("Traceback (most recent call last):\n")
        assert "from_spec" in outcome.stderr
        assert "UserError: unknown provider 'nope'" in outcome.stderr
        assert outcome.stderr.endswith(
            "heron: error: unknown provider 'nope': use one of "
            "local, openai, deepseek, anthropic, ollama, scripted\n"
        )

    def test_debug_in_process(self) -> None:
        outcome = in_process("--debug", "run", "hi", "-p", "nope")
        assert outcome.code == 1
        assert "Traceback (most recent call last)" in outcome.stderr

    def test_help_lists_the_commands(self) -> None:
        outcome = in_process("--help")
        assert outcome.code == 0
        assert "run" in outcome.stdout and "chat" in outcome.stdout
