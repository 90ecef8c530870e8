"""Commands in bubblewrap (``bwrap``): their own namespaces, a filesystem they mostly only read.

A :class:`Sandbox` turns a command line into one run under ``bwrap``: its own
user, PID, IPC, UTS and cgroup namespaces (and network, unless ``network``), a
fresh ``/proc`` that shows only its own processes, a minimal ``/dev``, a private
``/tmp``, and the host's files read-only except ``writable`` paths; ``hidden``
paths do not exist inside. Everything a command starts dies with it (the PID
namespace ends with its first process), or, with ``outlive``, when its process
group is killed: ``setsid`` and double forks cannot escape either way.

:func:`contained` is the lighter wrapper for the owner's own commands: the host
as it is, only a PID namespace of its own, so nothing the command starts
(``setsid``, double forks) outlives it.

The bash tools (``bash_tools(..., sandbox=...)``), the daemon's node shells and
:class:`heron.mcp.Computer` build their ``bwrap`` command lines here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SANDBOX_ENV",
    "SYSTEM_PATHS",
    "Sandbox",
    "contained",
    "find_bwrap",
    "sandbox_environment",
    "sandbox_problem",
]

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
"""What a sandbox that sees only ``visible`` paths still reads: programs, libraries, settings."""

SANDBOX_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM")
"""The variables :func:`sandbox_environment` keeps (with every ``LC_*``)."""


def find_bwrap() -> str | None:
    """The ``bwrap`` program's path, or ``None`` when bubblewrap is not installed."""
    return shutil.which("bwrap")


def sandbox_environment(
    base: Mapping[str, str] | None = None, *, keep: Sequence[str] = ()
) -> dict[str, str]:
    """A scrubbed environment: ``PATH``, locale, ``TZ``, ``TERM`` (and ``keep``) of ``base``
    (default: this process's), with ``HOME`` and ``TMPDIR`` at the sandbox's ``/tmp``.

    Everything else goes: API keys, tokens, database URLs, whatever the parent holds.
    """
    source = os.environ if base is None else base
    wanted = {*SANDBOX_ENV, *keep}
    kept = {
        name: value for name, value in source.items() if name in wanted or name.startswith("LC_")
    }
    return {**kept, "HOME": "/tmp", "TMPDIR": "/tmp"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Sandbox:
    """How commands run under bubblewrap: what they see, what they may write, the network.

    ::

        sandbox = Sandbox(writable=["/srv/job"], hidden=["/home/me/.heron"])
        tools = bash_tools("/srv/job", sandbox=sandbox, base_env=sandbox_environment())

    Paths are host paths and appear at the same place inside.
    """

    writable: tuple[str, ...] = ()
    """Bound read-write (the work directory)."""
    hidden: tuple[str, ...] = ()
    """Made invisible: an empty read-only folder, or an empty file, in their place."""
    readonly: tuple[str, ...] = ()
    """Bound read-only again below a writable path (a git directory's hooks)."""
    visible: tuple[str, ...] | None = None
    """``None``: the whole host filesystem, read-only. Otherwise only :data:`SYSTEM_PATHS`
    and these, read-only (the rest does not exist inside)."""
    tmp: str | None = None
    """A host folder shown as ``/tmp`` (kept between commands); ``None``: a fresh, empty one."""
    network: bool = True
    """Whether the host network is reachable; otherwise a network namespace of its own
    (a loopback only)."""
    program: str | None = None
    """The ``bwrap`` to run (default: the one on ``PATH``)."""
    outlive: bool = False
    """Whether what a command leaves running lives on once it exits (in the command's
    process group, until that is killed: the namespace's init is in it too); by default
    everything goes when the command does."""

    def __post_init__(self) -> None:
        for name in ("writable", "hidden", "readonly"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError(f"Sandbox.{name} is a list of paths, not one string")
            object.__setattr__(self, name, tuple(_absolute(p, name) for p in value))
        if "/" in self.writable:
            # Bound whole, the host's / would bring its /proc (the parent's environment)
            # and /dev back over the sandbox's own.
            raise ValueError("Sandbox.writable cannot hold / itself: name narrower folders")
        if self.visible is not None:
            if isinstance(self.visible, str):
                raise TypeError("Sandbox.visible is a list of paths, not one string")
            seen = tuple(_absolute(path, "visible") for path in self.visible)
            object.__setattr__(self, "visible", seen)

    def prefix(self, cwd: str | os.PathLike[str]) -> list[str]:
        """The ``bwrap ...`` arguments to put before a command that should start in ``cwd``."""
        program = self.program or find_bwrap()
        if program is None:
            raise FileNotFoundError("bubblewrap (bwrap) is not installed")
        command = [program]
        if self.visible is None:
            command += ["--ro-bind", "/", "/"]
        else:
            for path in SYSTEM_PATHS:
                command += ["--ro-bind-try", path, path]
        command += ["--dev", "/dev", "--proc", "/proc"]
        command += ["--tmpfs", "/tmp"] if self.tmp is None else ["--bind", self.tmp, "/tmp"]
        # After /tmp: what is visible there (a virtual environment ...) stays visible.
        for path in sorted(set(self.visible or ()) - set(SYSTEM_PATHS), key=_depth):
            command += ["--ro-bind-try", path, path]
        # Parents before children: a path bound inside a hidden one stays reachable, a
        # hidden one inside a writable one stays hidden. At one path, hiding comes last.
        steps = [(path, 0) for path in self.writable]
        steps += [(path, 1) for path in self.readonly]
        steps += [(path, 2) for path in self.hidden if not self._hidden_already(path)]
        emptied: list[str] = []
        for path, kind in sorted(steps, key=lambda step: (_depth(step[0]), step[1])):
            if kind == 0:
                command += ["--bind", path, path]
            elif kind == 1:
                command += ["--ro-bind-try", path, path]
            elif os.path.isdir(path):
                command += ["--tmpfs", path]
                emptied.append(path)
            elif os.path.lexists(path):
                command += ["--ro-bind", "/dev/null", path]
        for path in emptied:  # read-only once whatever goes inside is bound
            command += ["--remount-ro", path]
        # No capabilities, even for root: with them (bwrap keeps root's by default) a
        # command could unmount what hides a path and read what lies beneath.
        command += ["--unshare-all", "--cap-drop", "ALL"]
        if self.network:
            command += ["--share-net"]
        if not self.outlive:
            command += ["--die-with-parent"]
        command += ["--chdir", os.fspath(cwd), "--"]
        return command

    def _hidden_already(self, path: str) -> bool:
        """Whether ``path`` lies in a hidden folder with no bound path between them."""
        for folder in self.hidden:
            if _inside(path, folder) and not any(
                _inside(bound, folder) and _inside(path, bound)
                for bound in (*self.writable, *self.readonly)
            ):
                return True
        return False

    def wrap(self, argv: Sequence[str], cwd: str | os.PathLike[str]) -> list[str]:
        """``argv`` run in the sandbox, starting in ``cwd``."""
        return [*self.prefix(cwd), *argv]


def contained(argv: Sequence[str], *, program: str | None = None) -> list[str]:
    """``argv`` in a PID namespace of its own and nothing else (the host's files, network,
    user): it and all it starts die together, when it exits or is killed."""
    bwrap = program or find_bwrap()
    if bwrap is None:
        raise FileNotFoundError("bubblewrap (bwrap) is not installed")
    # A fresh /proc: pids inside match what the command's ps and kill see.
    return [bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc",
            "--die-with-parent", "--", *argv]  # fmt: skip


def sandbox_problem(sandbox: Sandbox | None = None, *, timeout: float = 10.0) -> str | None:
    """Why commands cannot run in ``sandbox`` here (``None``: they can), found by trying one.

    Bubblewrap may be missing, or the kernel may refuse it namespaces (a container
    without user namespaces, ``kernel.unprivileged_userns_clone=0``).
    """
    sandbox = sandbox or Sandbox()
    try:
        argv = sandbox.wrap(["/bin/sh", "-c", "exit 0"], "/")
    except FileNotFoundError as exc:
        return str(exc)
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
        return f"bubblewrap cannot start a sandbox here: {said}"
    return None


def _absolute(path: str | os.PathLike[str], what: str) -> str:
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"Sandbox.{what}: {text!r} is not an absolute path")
    return os.path.realpath(text)  # bwrap follows links: sort and bind by what they reach


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` lies strictly below ``folder``."""
    return path != folder and path.startswith(folder.rstrip("/") + "/")


def _depth(path: str) -> int:
    return len(Path(path).parts)
