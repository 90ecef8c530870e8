"""README.md agrees with the code: every command of the ``heron`` app and every route of
the daemon's OpenAPI document is named in it, and every ``heron ...`` in its prose is a
real command with real options (``tests/test_readme.py`` runs its blocks)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.readme import (
    BLOCKS,
    README,
    check_command_line,
    cli_tree,
    command_lines,
    is_group,
)

INLINE = re.compile(r"`(heron [^`]+)`")


def _readme_command_lines() -> Iterator[tuple[str, str]]:
    """Every ``heron`` command line of the README: in its blocks and in its prose."""
    for block in BLOCKS:
        if block.lang != "python":
            yield from command_lines(block.text)
    prose = re.sub(r"^```.*?^```", "", README.read_text(encoding="utf-8"), flags=re.S | re.M)
    for span in INLINE.findall(prose.replace("\n", " ")):
        yield from command_lines(span)


def _leaves(command: Any, path: str = "heron") -> Iterator[tuple[str, Any]]:
    if not is_group(command):
        yield path, command
        return
    for name, sub in command.commands.items():
        if not getattr(sub, "hidden", False):
            yield from _leaves(sub, f"{path} {name}")


def test_every_command_is_in_the_readme() -> None:
    """Each command of the ``heron`` app is named somewhere in the README, and every
    ``heron ...`` in its prose names a real command with real options."""
    reached: set[int] = set()
    problems = [
        f"{line!r}: {problem}"
        for line, comment in _readme_command_lines()
        for problem in check_command_line(line, comment, reached)
    ]
    assert not problems, "\n".join(problems)
    missing = [path for path, command in _leaves(cli_tree()) if id(command) not in reached]
    assert not missing, f"commands the README never names: {missing}"


ROUTE_PARAMETER = re.compile(r"\\\{[^}]*\\\}")


def route_named(path: str, readme: str) -> bool:
    """Whether the README names ``path`` (``/v1/memory/{entry_id}``): whole, with any
    parameter names (``/v1/memory/{id}``), or, under a parameter, by its tail after an
    ellipsis (``…/outcome``, ``…/jobs/{job}/cancel``) or as a sibling tail listed after
    its first one (```/resume```)."""
    whole = ROUTE_PARAMETER.sub(r"\\{[^}]*\\}", re.escape(path))
    if re.search(whole + r"(?![\w/-])", readme):
        return True
    if "{" not in path:
        return False
    tail = path[path.index("}") + 1 :]
    pattern = ROUTE_PARAMETER.sub(r"\\{[^}]*\\}", re.escape(tail))
    if tail and re.search(r"(…|\.\.\.)" + pattern + r"(?![\w/-])", readme):
        return True
    return bool(tail) and "/" not in tail[1:] and f"`{tail}`" in readme


def _openapi_paths() -> dict[str, Any]:
    """The paths of a real daemon's ``GET /openapi.json`` (started in a private home by
    the client, stopped after)."""
    home = Path(tempfile.mkdtemp(prefix="heron-api-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    script = home / "script.json"
    script.write_text('["ok"]', encoding="utf-8")
    env.update(HERON_HOME=str(home / "home"), HERON_PROVIDER=f"scripted:{script}")
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "import json; from heron.client import Heron; "
                "print(json.dumps(Heron().request('GET', '/openapi.json')))",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return dict(json.loads(proc.stdout)["paths"])
    finally:
        heron = Path(sys.executable).parent / "heron"
        subprocess.run([heron, "daemon", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow
def test_every_route_is_in_the_readme() -> None:
    """Each path of the daemon's own OpenAPI document is named in the README."""
    paths = _openapi_paths()
    readme = README.read_text(encoding="utf-8")
    missing = [path for path in paths if not route_named(path, readme)]
    assert not missing, f"routes the README never names: {missing}"
    assert len(paths) > 50


def test_the_route_matcher() -> None:
    readme = "`GET /v1/memory/{id}`, `…/outcome?wait=0..25`, `/v1/crons/{id}/pause`, `/run`"
    assert route_named("/v1/memory/{entry_id}", readme)
    assert route_named("/v1/nodes/{node_id}/outcome", readme)
    assert route_named("/v1/crons/{cron_id}/run", readme)
    assert not route_named("/v1/memory", readme)
    assert not route_named("/v1/nodes/{node_id}/fork", readme)


def test_every_file_the_readme_links_or_names_exists() -> None:
    """Links and ``python bench/...`` / ``examples/...`` paths point at files of the
    repository (the README once pointed at a design file outside it)."""
    root = README.parent
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"\]\(([^)#:]+)\)", text))
    named |= set(re.findall(r"\b((?:bench|examples|docker|tests)/[\w./-]+\.\w+)", text))
    named |= set(re.findall(r"`(\.\./[^`]+)`", text))
    missing = sorted(p for p in named if not (root / p).exists())
    assert not missing, f"the README names files that are not there: {missing}"
