"""Kinds: personas a node takes (instruction, tools, skills, model), built in or read from
``$HERON_HOME/kinds/<name>.toml``."""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import inspect
import logging
import os
import stat
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ... import api, skills
from ...tools import (
    BashTools,
    Skill,
    Tool,
    bash_tools,
    browser_tools,
    filesystem_tools,
    get_current_time,
    question_answer_tool,
)
from ..nodes import (
    KIND_FIXED_TOOLS,
    MEMORY_READ_TOOLS,
    MEMORY_WRITE_TOOLS,
    SCHEDULE_TOOLS,
    Feature,
    Kernel,
    NodeTools,
    RunSetup,
    Section,
    workspace_files,
)
from ..server import ApiError
from ._routes import add_kind_routes

if TYPE_CHECKING:
    from fastapi import FastAPI


__all__ = ["BUILTIN_KINDS", "DEFAULT_KIND", "SKILLS", "Kind", "Kinds", "kind_skills"]

log = logging.getLogger("heron.runtime")

DEFAULT_KIND = "general"
"""The kind a node takes when neither its create nor its profile names one."""

SKILLS: dict[str, Callable[..., Skill]] = {name: getattr(skills, name) for name in skills.__all__}
"""The skill factories a kind may name (``heron.skills``; ``-`` may stand for ``_``)."""

MAX_KIND_FILE = 256 * 1024
"""Bytes a kind file may have (a bigger one is listed as a problem, not read)."""

_FIELDS = frozenset({"description", "instruction", "model", "tools", "skills"})

_READ_ONLY = ("get-current-time", "fs-read-file", "fs-list-directory", "fs-glob", "fs-grep")


@dataclass(frozen=True, kw_only=True, slots=True)
class Kind:
    """A persona, built in or read from a TOML file."""

    name: str
    """What ``kind`` on create names."""
    description: str
    """What the kind is for."""
    instruction: str
    """Joined into the node's system prompt."""
    model: str | None = None
    """The model its nodes use unless the create names one."""
    tools: tuple[str, ...] | None = None
    """Tool name patterns kept (``None``: every tool the node's scopes allow)."""
    skills: tuple[str, ...] = ()
    """``heron.skills`` factory names."""
    source: Literal["builtin", "file"] = "builtin"
    """Where it comes from."""
    path: str | None = None
    """Its TOML file, if any."""
    overrides_builtin: bool = False
    """Whether its file replaces a built-in kind."""

    def to_api(self) -> api.Kind:
        """The kind on the wire."""
        return api.Kind(
            name=self.name,
            description=self.description,
            instruction=self.instruction,
            model=self.model,
            tools=list(self.tools) if self.tools is not None else None,
            skills=list(self.skills),
            source=self.source,
            path=self.path,
            overrides_builtin=self.overrides_builtin,
        )


BUILTIN_KINDS: tuple[Kind, ...] = (
    Kind(
        name="general",
        description="A general-purpose agent: the default kind.",
        instruction=(
            "Work on the task with the tools you have. Say plainly what you did, what you "
            "found, and what you could not do."
        ),
    ),
    Kind(
        name="coder",
        description="Writes and changes code in its working directory, and verifies it.",
        instruction=(
            "You are a careful software engineer. Read the code around a change before "
            "making it, keep changes small and in the project's style, and run the tests or "
            "the program to check your work before you say it is done."
        ),
        skills=("code_verification",),
    ),
    Kind(
        name="researcher",
        description="Finds and reads material and answers with sources; changes nothing.",
        instruction=(
            "You are a researcher. Gather what the question needs from the files you can "
            "read, say where each finding comes from, separate facts from inferences, and "
            "say what you could not establish. Do not change anything."
        ),
        tools=(*_READ_ONLY, "ask-questions"),
    ),
    Kind(
        name="reviewer",
        description="Reviews work (code, documents) and reports findings; changes nothing.",
        instruction=(
            "You are a reviewer. Read the work and report concrete findings, most severe "
            "first, each with where it is and why it matters. Do not change anything."
        ),
        tools=_READ_ONLY,
    ),
    Kind(
        name="planner",
        description="Breaks a goal into steps on a todo list kept in the profile's store.",
        instruction=(
            "You are a planner. Understand the goal, then break it into small, checkable "
            "steps on the todo list; keep the list current as steps are done or change."
        ),
        tools=(*_READ_ONLY, "ask-questions", "todo-*"),
        skills=("planner",),
    ),
)
"""The kinds every daemon has (a TOML file of the same name replaces one)."""

_BUILTINS = {kind.name: kind for kind in BUILTIN_KINDS}


@functools.cache
def skill_tools(name: str) -> frozenset[str]:
    """The names of the tools skill ``name`` brings (made once, against a dummy root)."""
    factory = SKILLS[name]
    params = inspect.signature(factory).parameters
    if "root" in params:
        skill = factory(Path(os.sep))
    elif "browser" in params:
        skill = factory(browser=browser_tools())
    else:
        skill = factory()
    return frozenset(t.name for t in skill.tools)


@functools.cache
def _tool_names() -> frozenset[str]:
    """Every tool name a kind's ``tools`` can keep or drop: the scope tools and the
    skills' tools (not :data:`KIND_FIXED_TOOLS`, which no kind removes)."""
    here = Path(os.sep)
    made: list[Tool] = [get_current_time, question_answer_tool(), *filesystem_tools(here)]
    made += [*bash_tools(here), *browser_tools()]
    names = {t.name for t in made} | {*SCHEDULE_TOOLS, *MEMORY_READ_TOOLS, *MEMORY_WRITE_TOOLS}
    for skill in SKILLS:
        names |= skill_tools(skill)
    return frozenset(names - set(KIND_FIXED_TOOLS))


def _skill_name(name: str) -> str:
    """A skill name as the factory is called (``code-verification``: ``code_verification``)."""
    return name.strip().replace("-", "_")


def parse_kind(name: str, path: Path, text: str) -> Kind:
    """The kind a TOML file defines; ``ValueError`` saying what is wrong otherwise."""
    if not api.is_valid_id(name):
        raise ValueError(f"{name!r} is not a valid kind name (letters, digits, _ . -)")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown keys {unknown} (known: {sorted(_FIELDS)})")
    instruction = data.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise ValueError("`instruction` must be a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ValueError("`description` must be a string")
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValueError("`model` must be a provider spec such as 'openai:gpt-4o'")
    tools = _string_list(data, "tools")
    if tools is not None:
        known = _tool_names()
        for pattern in tools:
            if not fnmatch.filter(known, pattern):
                raise ValueError(
                    f"tool {pattern!r} matches no tool a kind controls (known: {sorted(known)}; "
                    f"always kept, whatever the kind: {', '.join(KIND_FIXED_TOOLS)})"
                )
    wanted = [_skill_name(s) for s in _string_list(data, "skills") or ()]
    missing = [s for s in wanted if s not in SKILLS]
    if missing:
        raise ValueError(f"unknown skills {missing} (known: {sorted(SKILLS)})")
    keep = keeps(tools)
    for skill in wanted:
        dropped = sorted(t for t in skill_tools(skill) if keep is not None and not keep(t))
        if dropped:
            raise ValueError(
                f"skill {skill!r} needs tools that `tools` leaves out: {dropped} "
                "(add them to `tools`, or drop the skill)"
            )
    return Kind(
        name=name,
        description=description.strip(),
        instruction=instruction.strip(),
        model=model.strip() if model is not None else None,
        tools=tuple(tools) if tools is not None else None,
        skills=tuple(dict.fromkeys(wanted)),
        source="file",
        path=str(path),
        overrides_builtin=name in _BUILTINS,
    )


def _string_list(data: dict[str, Any], key: str) -> list[str] | None:
    """``data[key]`` as a list of stripped strings (``None`` if absent); ``ValueError``
    when it is anything else."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"`{key}` must be a list of non-empty strings")
    return [v.strip() for v in value]


@dataclass(kw_only=True, slots=True)
class _Cached:
    """A kind file as last read: its (mtime, size), and its kind or what is wrong with it."""

    stamp: tuple[int, int]
    kind: Kind | None = None
    problem: str | None = None


@dataclass(kw_only=True, slots=True)
class Kinds(Feature):
    """The daemon's kinds: built-ins and ``$HERON_HOME/kinds/*.toml``."""

    directory: Path
    """Where kind files are read from."""
    _files: dict[Path, _Cached] = field(default_factory=dict)

    @classmethod
    def of(cls, kernel: Kernel) -> Kinds:
        """The kinds of the daemon's home (how the daemon makes the feature)."""
        return cls(directory=kernel.config.home / "kinds")

    def setup(self, run: RunSetup) -> None:
        """Give a run its kind: its instruction (not to a small model), its tool filter,
        its skills; ``422 unknown_kind`` fails the run's start if the kind is gone."""
        # .get: a run resumed across an upgrade replays a plan recorded without it.
        kind = self.get(run.plan.get("kind") or DEFAULT_KIND, status=422)
        run.keep = keeps(kind.tools)
        if not run.small:
            run.say(Section.PERSONA, kind.instruction)

        def skills(made: NodeTools) -> list[Skill]:
            assert run.shell is not None  # the kernel refuses a run without one
            return kind_skills(kind.skills, workspace=run.workspace, made=made, shell=run.shell)

        run.skills = skills

    def routes(self, app: FastAPI) -> None:
        """Serve the kind listing and lookup."""
        add_kind_routes(app, self)

    def scan(self) -> tuple[dict[str, Kind], list[api.KindProblem]]:
        """Every usable kind by name, and the files that are broken (re-read when changed)."""
        kinds = dict(_BUILTINS)
        problems: list[api.KindProblem] = []
        try:
            entries = sorted(p for p in self.directory.iterdir() if p.suffix == ".toml")
        except FileNotFoundError:
            entries = []
        except OSError as exc:
            problem = api.KindProblem(name="*", path=str(self.directory), message=str(exc))
            return kinds, [problem]
        self._files = {p: c for p, c in self._files.items() if p in set(entries)}  # deleted ones
        for path in entries:
            cached = self._read(path)
            if cached is None:
                continue
            if cached.kind is not None:
                kinds[cached.kind.name] = cached.kind
            elif cached.problem is not None:
                problems.append(
                    api.KindProblem(name=path.stem, path=str(path), message=cached.problem)
                )
        return dict(sorted(kinds.items())), problems

    def _read(self, path: Path) -> _Cached | None:
        """The kind in ``path`` (re-read only when its mtime or size changed); ``None``
        for what is not a regular file (a directory, a socket ... named ``*.toml``)."""
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                return None
            stamp = (info.st_mtime_ns, info.st_size)
            cached = self._files.get(path)
            if cached is not None and cached.stamp == stamp:
                return cached
            if info.st_size > MAX_KIND_FILE:
                cached = _Cached(
                    stamp=stamp,
                    problem=f"the file has {info.st_size} bytes; a kind file may have "
                    f"{MAX_KIND_FILE} at most",
                )
                self._files[path] = cached
                return cached
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return _Cached(stamp=(0, 0), problem=f"cannot read the file: {exc}")
        try:
            cached = _Cached(stamp=stamp, kind=parse_kind(path.stem, path, text))
        except ValueError as exc:
            cached = _Cached(stamp=stamp, problem=str(exc))
            log.warning("kind file %s is broken: %s", path, exc)
        self._files[path] = cached
        return cached

    def listing(self) -> api.KindList:
        """``GET /v1/kinds``."""
        kinds, problems = self.scan()
        return api.KindList(kinds=[k.to_api() for k in kinds.values()], problems=problems)

    async def find(self, name: str, *, status: int = 404) -> Kind:
        """:meth:`get`, with the directory read off the event loop."""
        return await asyncio.to_thread(self.get, name, status=status)

    def get(self, name: str, *, status: int = 404) -> Kind:
        """The kind called ``name``.

        Unknown: ``status`` (404 ``kind_not_found`` for reads, 422 ``unknown_kind``
        for creates) listing the known ones; a broken file: ``422 invalid_kind``.
        """
        kinds, problems = self.scan()
        kind = kinds.get(name)
        if kind is not None:
            return kind
        broken = next((p for p in problems if p.name == name), None)
        if broken is not None:
            raise ApiError(
                422, "invalid_kind", f"kind {name!r} ({broken.path}) is broken: {broken.message}"
            )
        code = "kind_not_found" if status == 404 else "unknown_kind"
        known = ", ".join(kinds)
        raise ApiError(status, code, f"no kind {name!r}; known kinds: {known}", {"known": [*kinds]})


def keeps(kind_tools: Sequence[str] | None) -> Callable[[str], bool] | None:
    """Whether a tool name passes the kind's tool patterns (``None``: no filter)."""
    if kind_tools is None:
        return None
    patterns = tuple(kind_tools)
    return lambda name: any(fnmatch.fnmatchcase(name, p) for p in patterns)


def kind_skills(
    names: Sequence[str],
    *,
    workspace: Path,
    made: NodeTools,
    shell: Callable[[Path], BashTools],
) -> list[Skill]:
    """The kind's skills for one run, their tools added to ``made`` (once per name).

    A skill is left out whole when the node may not have one of its tools (its
    scopes, or its kind's ``tools``, exclude it: the skill's instructions rely on
    its tools, and a read-only kind stays read-only). Skills working on files get
    the node's workspace and share its file tools and its long-lived shell
    (``shell(workspace)``, the one the node's own bash tools come from).
    """
    result: list[Skill] = []
    have = {t.name: t for t in made.tools}
    for name in names:
        excluded = sorted(t for t in skill_tools(name) if not made.admits(t))
        if excluded:
            log.info("skill %s left out: the node may not have %s", name, excluded)
            continue
        factory = SKILLS[name]
        params = inspect.signature(factory).parameters
        if "root" in params:
            kwargs: dict[str, Any] = {}
            if "files" in params:
                if made.shell is None:
                    made.shell = shell(workspace)  # owned by the node, not the run
                files = made.files or workspace_files(workspace)
                kwargs.update(files=list(files), bash=made.shell)
            if "hidden" in params:  # the present skill: the daemon's home is not output
                kwargs.update(hidden=made.hidden)
            skill = factory(workspace, **kwargs)
        elif "browser" in params:
            browser = browser_tools()
            made.closers.append(browser)
            skill = factory(browser=browser)
        else:
            skill = factory()
        for tool in skill.tools:
            # The node's own tool of that name serves the skill (one tool per name).
            if tool.name not in have:
                have[tool.name] = tool
                made.tools.append(tool)
        result.append(skill)
    return result
