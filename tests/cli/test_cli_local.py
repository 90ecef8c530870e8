"""The README's first command: ``heron run`` on the embedded model, as a user runs it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERON = Path(sys.executable).with_name("heron")


@pytest.mark.slow
def test_heron_run_answers_the_time_after_a_real_tool_call(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    env["HOME"] = str(tmp_path)  # nothing from the user's configuration
    executable = str(HERON) if HERON.exists() else shutil.which("heron")
    assert executable, "the heron console script is not installed"
    done = subprocess.run(
        [executable, "run", "What time is it in UTC?"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    call = next(line for line in lines if "↳ get-current-time(" in line)
    timestamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"
    assert re.search(rf"→ {timestamp} \(\w+day, UTC\)", call), call
    answer = lines[lines.index(call) + 1 : -1]
    assert "".join(answer).strip(), "no reply after the tool call"
    assert re.fullmatch(
        r"tokens \d+ in / \d+ out · 2 turns · 1 tool call · \d+\.\d\d s", lines[-1]
    ), lines[-1]


def _crashing(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment whose model worker kills itself with SIGSEGV at its first request
    (once: the worker that replaces it works)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    env["HOME"] = str(tmp_path)
    marker = tmp_path / "crash-once"
    marker.touch()
    return {**env, "HERON_TEST_LOCAL_WORKER_CRASH": str(marker), **extra}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("repack", "hint"),
    [("on", "try HERON_LOCAL_REPACK=off"), ("off", "weight repacking was already off")],
)
def test_a_model_crash_in_heron_run_is_one_clear_line(
    tmp_path: Path, repack: str, hint: str
) -> None:
    done = subprocess.run(
        [str(HERON), "run", "What time is it in UTC?"],
        capture_output=True,
        text=True,
        env=_crashing(tmp_path, HERON_LOCAL_REPACK=repack),
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("heron: error: local: the embedded model crashed"), line
    assert "SIGSEGV" in line and "SmolLM2-135M-Instruct" in line and hint in line
    assert "Segmentation fault" not in done.stdout + done.stderr


@pytest.mark.slow
def test_heron_chat_survives_a_model_crash_and_answers_the_next_question(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [str(HERON), "chat"],
        input="Hello?\nWhat is 2 + 2?\n/exit\n",
        capture_output=True,
        encoding="utf-8",
        env=_crashing(tmp_path),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "the embedded model crashed" in line and "SIGSEGV" in line
    # The next question got a fresh worker and its answer.
    replies = [line for line in done.stdout.splitlines() if not line.startswith("tokens ")]
    assert "4" in "".join(replies), done.stdout
