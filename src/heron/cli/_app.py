"""The ``heron`` command: run an agent on a prompt, or chat with one."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.core
import typer.main
import typer.models
from rich.console import Console
from rich.text import Text

from .._core import HeronError, UserError
from .._core.version import __version__
from ..agents import DEFAULT_MAX_TURNS
from ._help import plain_help
from ._view import LiveView, fail

if TYPE_CHECKING:  # the agent loop loads when a command runs one, not for `heron nodes`
    from ..agents import RunResult, SimpleAgent
    from ..providers import Provider

__all__ = ["app", "main"]

plain_help()

T = TypeVar("T")

# The commands of other modules, in the order ``heron --help`` lists them: name -> (module,
# attribute, whether it is a group). Each loads when a command line names it, so `heron nodes
# list` imports and builds the `nodes` group, not all twelve (`--help` loads them all).
_LAZY: dict[str, tuple[str, str, bool]] = {
    "bash": ("._files", "bash", False),
    "daemon": ("._daemon", "daemon_app", True),
    "nodes": ("._lineage", "nodes_app", True),  # _lineage adds its commands to nodes_app
    "models": ("._models", "models_app", True),
    "memory": ("._memory", "memory_app", True),
    "crons": ("._crons", "crons_app", True),
    "inbox": ("._inbox", "inbox_app", True),
    "sys": ("._daemon", "sys_app", True),
    "files": ("._files", "files_app", True),
    "canvas": ("._canvas", "canvas_app", True),
    "profiles": ("._profiles", "profiles_app", True),
    "kinds": ("._profiles", "kinds_app", True),
    "ui": ("._ui", "ui", False),
}


class _Commands(MutableMapping[str, Any]):
    """The root group's commands: those of this module, then those of :data:`_LAZY`, each
    built the first time it is looked up (as ``add_typer`` would have built it)."""

    def __init__(self, group: typer.core.TyperGroup, built: dict[str, Any]) -> None:
        self._group = group
        self._built = built
        self._names = [*built, *(name for name in _LAZY if name not in built)]

    def _build(self, name: str) -> Any:
        module, attribute, is_group = _LAZY[name]
        target = getattr(importlib.import_module(module, __package__), attribute)
        short = app.pretty_exceptions_short
        markup = self._group.rich_markup_mode
        if is_group:
            return typer.main.get_group_from_info(
                typer.models.TyperInfo(target, name=name),
                pretty_exceptions_short=short,
                rich_markup_mode=markup,
                suggest_commands=self._group.suggest_commands,
            )
        return typer.main.get_command_from_info(
            typer.models.CommandInfo(name=name, callback=target),
            pretty_exceptions_short=short,
            rich_markup_mode=markup,
        )

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in _LAZY:
                raise KeyError(name)
            self._built[name] = self._build(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        if name not in self._names:
            self._names.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


class _Root(typer.core.TyperGroup):
    """The ``heron`` group: its subcommands load on first use (see :data:`_LAZY`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands(self, dict(self.commands))


app = typer.Typer(
    cls=_Root,
    name="heron",
    help="Heron: AI agents with tools, on the embedded model or a hosted one.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ProviderOption = Annotated[
    str | None,
    typer.Option(
        "--provider",
        "-p",
        help="local | local:FILE.gguf | openai:MODEL | anthropic:MODEL | deepseek:MODEL | "
        "ollama:MODEL | scripted:FILE.json  [default: $HERON_PROVIDER or local]",
        show_default=False,
    ),
]
InstructionOption = Annotated[
    str, typer.Option("--instruction", "-i", help="The agent's system instruction.")
]
StateOption = Annotated[
    Path | None,
    typer.Option(
        "--state",
        help="Resume from this state file (if it exists) and save the new state to it.",
        dir_okay=False,
    ),
]
MaxTurnsOption = Annotated[
    int, typer.Option("--max-turns", min=1, help="Model turns allowed per prompt.")
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"heron {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show full tracebacks on errors.", envvar="HERON_DEBUG")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    ctx.obj = {"debug": debug}


def _guarded(ctx: typer.Context, action: Callable[[], T]) -> T:
    """Run ``action``; expected failures become one readable line and exit code 1."""
    debug = bool(ctx.obj and ctx.obj.get("debug"))
    try:
        return action()
    except (HeronError, OSError) as exc:
        fail(str(exc) or type(exc).__name__, debug=debug)
    except KeyboardInterrupt:
        fail("interrupted", debug=debug)


def _load_state(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HeronError(f"state file {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HeronError(f"state file {path} does not hold a saved agent state")
    from ..agents import AgentState

    try:
        return AgentState.load(data).model_dump(mode="json")
    except UserError as exc:
        raise UserError(f"state file {path}: {exc}") from None


def _save_state(path: Path | None, agent: SimpleAgent) -> None:
    """Write the state atomically: a crash mid-write leaves the old file intact."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(agent.state(), f, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _agent(
    provider_spec: str | None, instruction: str, state_file: Path | None, max_turns: int
) -> SimpleAgent:
    from ..providers import default_provider, from_spec, out_of_process

    provider: Provider = from_spec(provider_spec) if provider_spec else default_provider()
    # The embedded model runs in a worker process: a native crash in it becomes one
    # clear error (what crashed, the override to try), not a bare segmentation fault.
    provider = out_of_process(provider)
    return _build(provider, instruction, _load_state(state_file), max_turns)


def _build(
    provider: Provider, instruction: str, state: dict[str, Any] | None, max_turns: int
) -> SimpleAgent:
    from ..agents import SimpleAgent
    from ..tools import get_current_time

    return SimpleAgent(
        provider=provider,
        instruction=instruction,
        tools=[get_current_time],
        state=state,
        max_turns=max_turns,
    )


def _taken_back(
    agent: SimpleAgent, before: dict[str, Any], instruction: str, max_turns: int
) -> SimpleAgent:
    """The agent as it was before a cancelled prompt: Ctrl-C takes the question back.

    Keeping an unanswered prompt (or a note standing in for its answer) leads a
    small model to answer the cancelled prompt next, or to repeat the note.
    The lifetime token counts keep what the cancelled answer cost.
    """
    spent = agent.state()
    for key in ("input_tokens", "output_tokens", "requests"):
        before[key] = spent[key]
    return _build(agent.provider, instruction, before, max_turns)


async def _answer(
    agent: SimpleAgent, prompt: str, view: LiveView | None, *, close: bool
) -> RunResult:
    """One run; with ``close``, the provider's connections are released after it."""
    if view is not None:
        view.working()
    try:
        return await agent.run(prompt, on_chunk=view.on_chunk if view else None)
    finally:
        if view is not None:
            view.stop_working()
        if close:
            await agent.provider.aclose()


CHAT_COMMANDS = {
    "/help": "show these commands",
    "/reset": "forget the conversation (the token counts stay)",
    "/exit": "leave (also /quit, Ctrl-D, or Ctrl-C at the prompt)",
}
"""The commands ``heron chat`` answers itself (never sent to the model)."""


def _chat_command(console: Console, line: str) -> str | None:
    """A slash command typed in ``chat``: ``"exit"``, ``"reset"``, or ``None`` once
    answered here (help, or a command it does not know)."""
    word = line.split()[0].lower()
    if word in ("/exit", "/quit"):
        return "exit"
    if word == "/reset":
        return "reset"
    if word != "/help":
        console.print(
            Text(f"unknown command {word} (/help lists them; //text sends /text)", "yellow"),
            soft_wrap=True,
        )
        return None
    for name, what in CHAT_COMMANDS.items():
        console.print(Text(f"  {name:<8} {what}", style="dim"), soft_wrap=True)
    console.print(Text("  //text   send a line that starts with /", style="dim"), soft_wrap=True)
    return None


@app.command()
def run(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(help="What to ask the agent.")],
    provider: ProviderOption = None,
    instruction: InstructionOption = "",
    state: StateOption = None,
    max_turns: MaxTurnsOption = DEFAULT_MAX_TURNS,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run's result as JSON instead of live.")
    ] = False,
) -> None:
    """Run an agent (with the get-current-time tool) on PROMPT and stream its work."""

    def go() -> None:
        if not prompt.strip():
            raise typer.BadParameter("the prompt is empty", param_hint="PROMPT")
        agent = _agent(provider, instruction, state, max_turns)
        console = Console(highlight=False)
        if as_json:
            result = asyncio.run(_answer(agent, prompt, None, close=True))
            # The reply first (what a script wants), then the record export() keeps.
            console.print_json(data={"reply": result.reply, **result.export()})
        else:
            view = LiveView(console)
            result = asyncio.run(_answer(agent, prompt, view, close=True))
            view.finish(result)
        _save_state(state, agent)

    _guarded(ctx, go)


@app.command()
def chat(
    ctx: typer.Context,
    provider: ProviderOption = None,
    instruction: InstructionOption = "",
    state: StateOption = None,
    max_turns: MaxTurnsOption = DEFAULT_MAX_TURNS,
) -> None:
    """Talk with an agent; it keeps the conversation.

    Lines starting with / are commands answered here, never sent to the model:
    /help lists them, /reset forgets the conversation, /exit leaves. Ctrl-C cancels
    the current answer and takes its question back; Ctrl-D or Ctrl-C at the prompt
    also ends the session.
    """
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - line editing and history for input()
    console = Console(highlight=False)
    errors = Console(stderr=True, highlight=False)
    agent = _guarded(ctx, lambda: _agent(provider, instruction, state, max_turns))
    console.print(
        Text("heron chat · /help for commands, /exit to leave, Ctrl-C cancels an answer", "dim")
    )
    with asyncio.Runner() as runner:
        try:
            while True:
                try:
                    prompt = console.input("[bold]you>[/bold] ")
                except (EOFError, KeyboardInterrupt):
                    console.print()
                    return
                if not prompt.strip():
                    continue
                if prompt.lstrip().startswith("//"):
                    prompt = prompt.lstrip()[1:]  # sent as typed, less the escaping slash
                elif prompt.lstrip().startswith("/"):
                    command = _chat_command(console, prompt.strip())
                    if command == "exit":
                        return
                    if command == "reset":
                        fresh = _build(agent.provider, instruction, None, max_turns).state()
                        agent = _taken_back(agent, fresh, instruction, max_turns)
                        console.print(Text("(conversation forgotten)", style="dim"))
                    continue
                view = LiveView(console)
                before = agent.state()
                try:
                    result = runner.run(_answer(agent, prompt, view, close=False))
                except KeyboardInterrupt:
                    view.note("(cancelled)", "yellow")
                    agent = _taken_back(agent, before, instruction, max_turns)
                    continue
                except HeronError as exc:
                    view.note("", None)
                    errors.print(Text(f"heron: error: {exc}", style="red"), soft_wrap=True)
                    continue
                view.finish(result)
                _guarded(ctx, functools.partial(_save_state, state, agent))
        finally:
            runner.run(agent.provider.aclose())


def main() -> None:
    """Entry point of the ``heron`` console script."""
    app(prog_name="heron")
