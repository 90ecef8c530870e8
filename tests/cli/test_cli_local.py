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
