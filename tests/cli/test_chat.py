"""``heron chat`` as a real subprocess fed through stdin, and Ctrl-C (SIGINT) handling."""

import array
import codecs
import fcntl
import json
import os
import re
import select
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.polling import eventually

from heron import SimpleAgent
from heron.testing import ScriptedProvider

HERON = Path(sys.executable).with_name("heron")
BANNER = "heron chat · /help for commands, /exit to leave, Ctrl-C cancels an answer\n"
SUMMARY = r"tokens (\d+) in / \d+ out · {turns} · {calls} · \d+\.\d\d s\n"
ONE_TURN = SUMMARY.format(turns="1 turn", calls="0 tool calls")
WAIT = 15.0  # seconds; generous for a loaded CI machine, never slept through


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No colours, no provider or debug choice inherited from whoever runs the tests."""
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "HERON_PROVIDER"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("HERON_DEBUG", raising=False)


@pytest.fixture
def script(tmp_path: Path) -> Callable[[list[Any]], str]:
    """Write a script file; returns the ``scripted:`` spec for it."""

    def write(steps: list[Any]) -> str:
        path = tmp_path / f"script{len(list(tmp_path.glob('script*')))}.json"
        path.write_text(json.dumps(steps), encoding="utf-8")
        return f"scripted:{path}"

    return write


def chat(*args: str, lines: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a whole chat session with ``lines`` as the user's input."""
    return subprocess.run(
        [str(HERON), "chat", *args],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        encoding="utf-8",
        env=dict(os.environ),
        timeout=60,
        check=False,
    )


class Session:
    """A live ``heron`` process whose output is read as it arrives."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [str(HERON), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
        )
        self._text = ""
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        decoder = codecs.getincrementaldecoder("utf-8")()
        while data := self.process.stdout.read1(4096):
            with self._changed:
                self._text += decoder.decode(data)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()  # end of output: wake waiters to fail fast

    @property
    def stdout(self) -> str:
        with self._changed:
            return self._text

    def wait_for(self, text: str, count: int = 1) -> None:
        """Wait until ``text`` has appeared ``count`` times on stdout."""
        deadline = time.monotonic() + WAIT
        with self._changed:
            while self._text.count(text) < count:
                left = deadline - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    raise AssertionError(
                        f"never saw {text!r} (x{count}) in {self._text!r}; {self._ended()}"
                    )
                self._changed.wait(min(left, 0.5))

    def _ended(self) -> str:
        if self.process.poll() is None:
            return "still running"
        assert self.process.stderr is not None
        return f"exited {self.process.returncode}: {self.process.stderr.read().decode()!r}"

    def wait_until_blocked(self) -> None:
        """Wait until the process sleeps (in the model's delay, or reading stdin).

        Seeing a line printed is not enough to know where the process is: a
        SIGINT sent right after it could land before the next model turn has
        begun, or inside Rich's print of the prompt. A sleeping process is
        past those points.
        """
        stat = Path(f"/proc/{self.process.pid}/stat")
        eventually(  # polling /proc: nothing to wait on
            lambda: stat.read_text().rpartition(")")[2].split()[0] == "S",
            timeout=WAIT,
            interval=0.005,
            what="the process going to sleep",
        )

    def wait_until_read(self) -> None:
        """Wait until the process has taken everything sent to it, then sleeps.

        A process that has read its line and then sleeps is past the prompt,
        in the turn that line started (a sleep at the prompt would leave the
        line unread in the pipe).
        """
        assert self.process.stdin is not None
        stdin = self.process.stdin

        def unread() -> int:
            count = array.array("i", [0])
            fcntl.ioctl(stdin.fileno(), termios.FIONREAD, count)
            return count[0]

        eventually(  # polling the pipe: nothing to wait on
            unread,
            lambda count: count == 0,
            timeout=WAIT,
            interval=0.005,
            what="the process reading its input",
        )
        self.wait_until_blocked()

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{line}\n".encode())
        self.process.stdin.flush()

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def finish(self) -> tuple[int, str, str]:
        """Wait for the exit; the exit code, all of stdout and all of stderr."""
        code = self.process.wait(timeout=WAIT)
        self._reader.join(timeout=WAIT)
        assert self.process.stderr is not None
        return code, self.stdout, self.process.stderr.read().decode("utf-8")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def session() -> Iterator[Callable[..., Session]]:
    """Start ``heron`` sessions; any left running are killed at the end."""
    started: list[Session] = []

    def start(*args: str) -> Session:
        started.append(Session(*args))
        return started[-1]

    yield start
    for s in started:
        s.kill()


def saved_messages(state: Path) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads(state.read_text(encoding="utf-8"))["messages_full"]
    return messages


class TestChat:
    def test_two_prompts_share_the_conversation(
        self, script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "chat.json"
        spec = script(["Hello Ada.", "Your name is Ada."])
        done = chat(
            "-p",
            spec,
            "--state",
            str(state),
            lines=["My name is Ada.", "What is my name?", "/exit"],
        )
        assert (done.returncode, done.stderr) == (0, "")
        match = re.fullmatch(
            re.escape(BANNER)
            + r"you> Hello Ada\.\n"
            + ONE_TURN
            + r"you> Your name is Ada\.\n"
            + ONE_TURN
            + r"you> ",
            done.stdout,
        )
        assert match, done.stdout
        # The second request carried the first exchange.
        assert int(match[2]) > int(match[1])
        assert saved_messages(state) == [
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": "What is my name?"},
            {"role": "assistant", "content": "Your name is Ada."},
        ]

        # A new session with the same state file carries on from there.
        again = chat("-p", script(["Still Ada."]), "--state", str(state), lines=["Who am I?"])
        assert again.returncode == 0
        assert "you> Still Ada.\n" in again.stdout
        assert [m["content"] for m in saved_messages(state)][-2:] == ["Who am I?", "Still Ada."]

    def test_blank_lines_are_skipped_and_exit_ends_the_session(
        self, script: Callable[[list[Any]], str]
    ) -> None:
        done = chat("-p", script(["First.", "Never played."]), lines=["", "   ", "hi", "/exit"])
        assert (done.returncode, done.stderr) == (0, "")
        assert re.fullmatch(
            re.escape(BANNER) + r"(you> ){3}First\.\n" + ONE_TURN + r"you> ", done.stdout
        ), done.stdout

    def test_quit_also_ends_it(self, script: Callable[[list[Any]], str]) -> None:
        done = chat("-p", script(["unused"]), lines=["  /quit  ", "hi"])
        assert (done.returncode, done.stdout, done.stderr) == (0, BANNER + "you> ", "")

    def test_end_of_input_ends_the_session(self, script: Callable[[list[Any]], str]) -> None:
        done = chat("-p", script(["Only answer."]), lines=["hi"])
        assert (done.returncode, done.stderr) == (0, "")
        assert re.fullmatch(
            re.escape(BANNER) + r"you> Only answer\.\n" + ONE_TURN + r"you> \n", done.stdout
        ), done.stdout

    def test_a_failed_answer_does_not_end_the_session(
        self, script: Callable[[list[Any]], str]
    ) -> None:
        done = chat("-p", script(["One answer only."]), lines=["a", "b", "/exit"])
        assert done.returncode == 0
        output = done.stdout + done.stderr
        assert "heron: error: ScriptedProvider ran out of steps" in output
        assert "Traceback" not in output
        assert done.stdout.endswith("you> ")
        assert done.stdout.count("you> ") == 3

    def test_slash_commands_are_answered_here_never_sent_to_the_model(
        self, script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "chat.json"
        spec = script(["Got it.", "Fresh start."])
        lines = ["/help", "/nope", "//etc/hosts is a file", "/reset", "Who am I?", "/exit"]
        done = chat("-p", spec, "--state", str(state), lines=lines)
        assert (done.returncode, done.stderr) == (0, ""), done
        assert "  /help    show these commands\n" in done.stdout
        assert "  /reset   forget the conversation" in done.stdout
        assert "unknown command /nope (/help lists them; //text sends /text)" in done.stdout
        assert "(conversation forgotten)" in done.stdout
        assert "Fresh start." in done.stdout
        # Only what was meant for the model reached it: "//" sent the line less a slash,
        # and /reset left only the exchange after it.
        assert [m["content"] for m in saved_messages(state)] == ["Who am I?", "Fresh start."]

    def test_a_terminal_shows_the_model_is_working_before_its_first_word(
        self, script: Callable[[list[Any]], str]
    ) -> None:
        import pty

        spec = script([{"text": "Answer.", "delay": 1.5}])
        main, secondary = pty.openpty()
        with subprocess.Popen(
            [str(HERON), "chat", "-p", spec],
            stdin=secondary, stdout=secondary, stderr=secondary,
            env={**os.environ, "COLUMNS": "100"},
        ) as process:  # fmt: skip
            os.close(secondary)
            seen = b""
            try:
                deadline = time.monotonic() + WAIT
                sent = False
                while b"Answer." not in seen or b"you>" not in seen.split(b"Answer.")[-1]:
                    assert time.monotonic() < deadline, seen
                    ready, _, _ = select.select([main], [], [], 1.0)
                    if ready:
                        seen += os.read(main, 4096)
                    if not sent and b"you>" in seen:
                        os.write(main, b"hi\r")
                        sent = True
                os.write(main, b"/exit\r")
                assert process.wait(WAIT) == 0
            finally:
                if process.poll() is None:
                    process.kill()
                os.close(main)
        text = seen.decode("utf-8", "replace")
        assert "reading the prompt" in text, text
        assert text.index("reading the prompt") < text.index("Answer.")

    def test_a_bad_provider_is_an_error_before_the_session(self) -> None:
        done = chat("-p", "nope", lines=["hi"])
        assert done.returncode == 1
        assert done.stdout == ""
        assert done.stderr.startswith("heron: error: unknown provider 'nope'")
        assert len(done.stderr.splitlines()) == 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
class TestCtrlC:
    def test_cancels_the_answer_but_not_the_session(
        self, session: Callable[..., Session], script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "chat.json"
        spec = script(
            [
                {"text": "Looking.", "tool_calls": [{"name": "get-current-time"}]},
                {"text": "Far too slow.", "delay": 30},
                "Back again.",
            ]
        )
        chat = session("chat", "-p", spec, "--state", str(state))
        chat.send("What time is it?")
        chat.wait_for("↳ get-current-time")
        chat.wait_until_blocked()  # in the model's 30 s turn
        chat.interrupt()
        chat.wait_for("(cancelled)")
        chat.send("Still there?")
        chat.wait_for("Back again.")
        chat.send("/exit")
        code, stdout, stderr = chat.finish()

        assert (code, stderr) == (0, "")
        assert re.fullmatch(
            re.escape(BANNER)
            + r"you> Looking\.\n"
            + r"  ↳ get-current-time\(\) → \S+ \(\w+, UTC\)\n"
            + r"\(cancelled\)\n"
            + r"you> Back again\.\n"
            + ONE_TURN
            + r"you> ",
            stdout,
        ), stdout
        assert "Far too slow" not in stdout
        # Ctrl-C took the question back: the conversation goes on without it,
        # while the agent's lifetime usage keeps what the cancelled answer cost.
        messages = saved_messages(state)
        assert [(m["role"], m["content"]) for m in messages] == [
            ("user", "Still there?"),
            ("assistant", "Back again."),
        ]
        saved = json.loads(state.read_text())
        # The cancelled question's tool turn (the turn cut off never answered) and the answer.
        assert saved["requests"] == 2

    def test_a_cancelled_question_is_taken_back(
        self, session: Callable[..., Session], script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "chat.json"
        spec = script([{"text": "A long story...", "delay": 30}, "It is noon."])
        chat = session("chat", "-p", spec, "--state", str(state))
        chat.send("Tell me a very long story.")
        chat.wait_until_read()  # in the model's 30 s turn
        chat.interrupt()
        chat.wait_for("(cancelled)")
        chat.send("What time is it?")
        chat.wait_for("It is noon.")
        chat.send("/exit")
        code, stdout, stderr = chat.finish()
        assert (code, stderr) == (0, "")
        assert "A long story" not in stdout
        messages = saved_messages(state)
        assert [(m["role"], m["content"]) for m in messages] == [
            ("user", "What time is it?"),
            ("assistant", "It is noon."),
        ]

    def test_at_the_prompt_ends_the_session(
        self, session: Callable[..., Session], script: Callable[[list[Any]], str]
    ) -> None:
        chat = session("chat", "-p", script(["unused"]))
        chat.wait_for("you> ")
        chat.wait_until_blocked()  # reading stdin
        chat.interrupt()
        code, stdout, stderr = chat.finish()
        assert (code, stdout, stderr) == (0, BANNER + "you> \n", "")

    def test_interrupting_run_is_an_error_and_keeps_the_state(
        self, session: Callable[..., Session], script: Callable[[list[Any]], str], tmp_path: Path
    ) -> None:
        state = tmp_path / "state.json"
        earlier = SimpleAgent(provider=ScriptedProvider(["Hello."]))
        earlier.run_sync("Hi")
        state.write_text(json.dumps(earlier.state()), encoding="utf-8")
        before = state.read_bytes()
        spec = script(
            [
                {"tool_calls": [{"name": "get-current-time"}]},
                {"text": "Far too slow.", "delay": 30},
            ]
        )
        run = session("run", "time?", "-p", spec, "--state", str(state))
        run.wait_for("↳ get-current-time")
        run.wait_until_blocked()
        run.interrupt()
        code, stdout, stderr = run.finish()
        assert code == 1
        assert stdout.startswith("  ↳ get-current-time() → ")
        assert stderr == "heron: error: interrupted\n"
        assert state.read_bytes() == before
