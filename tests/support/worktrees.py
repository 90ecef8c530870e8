"""Worktree tests' helpers: a git repository, its branches, and a refusal's code."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest


def git(repo: Path, *args: str) -> str:
    """Run ``git`` in ``repo`` (asserting it succeeds); its stdout."""
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit: ``README.md`` and ``pkg/mod.py``."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "README.md").write_text("hello\n")
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    env = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    git(root, *env, "commit", "-q", "-m", "first")
    return root


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The error body of a refusal, asserting its status and code."""
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    return error


def branches(repo: Path) -> list[str]:
    """The repository's branch names."""
    return git(repo, "branch", "--format=%(refname:short)").split()
