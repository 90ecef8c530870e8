"""Generation speed of the embedded model: Heron's LocalProvider against raw llama-cpp-python.

Both sides run the same model file, loaded once with the same settings (the Llama object
LocalProvider loaded is the one the raw side uses), on the same rendered prompt with
greedy decoding and the same token cap. The raw side is ``Llama.create_completion(...,
stream=True)``, the way a user of llama-cpp-python streams; Heron's side is
``await provider.chat(messages, on_chunk=...)``, which adds the worker thread, the hand-off
to the event loop, tag detection and the chunks. Rounds alternate between the two so
machine noise lands on both; the script reports the median tokens per second of each, the
ratio Heron / raw (goal: at least 0.95) and, last, the time from starting ``heron run`` as
a new process to its first byte of streamed output and to its exit.

Run it from the repository root (after ``pip install -e .``)::

    python bench/local_throughput.py              # 7 rounds of 256 tokens
    python bench/local_throughput.py --rounds 3 --tokens 128
"""

from __future__ import annotations

import argparse
import asyncio
import os
import selectors
import statistics
import subprocess
import sys
import time
from pathlib import Path

from heron import Message, StreamChunk
from heron.providers import LocalProvider
from heron.providers._local_prompt import template_messages

PROMPT = "Write a long story about a dragon who learns to paint."


async def heron_round(provider: LocalProvider, tokens: int) -> float:
    """Tokens per second of one LocalProvider reply."""
    chunks = 0

    def count(chunk: StreamChunk) -> None:
        nonlocal chunks
        chunks += 1

    started = time.perf_counter()
    response = await provider.chat([Message.user(PROMPT)], on_chunk=count)
    elapsed = time.perf_counter() - started
    assert chunks > 1 and response.output_tokens > tokens // 2, "the model stopped early"
    return response.output_tokens / elapsed


def raw_round(provider: LocalProvider, tokens: int) -> float:
    """Tokens per second of the same reply straight from llama-cpp-python."""
    loaded = provider._load()
    prompt = loaded.formatter(messages=template_messages([Message.user(PROMPT)], [])).prompt
    started = time.perf_counter()
    produced = 0
    for _ in loaded.llm.create_completion(
        prompt, max_tokens=tokens, temperature=0.0, stream=True, stop=loaded.stop
    ):
        produced += 1
    elapsed = time.perf_counter() - started
    return produced / elapsed


def first_output(command: list[str]) -> tuple[float, float]:
    """Seconds from spawning ``command`` to its first stdout byte, and to its exit."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        selector.select(timeout=300)
    first = time.perf_counter() - started
    process.stdout.read()
    process.wait(timeout=300)
    return first, time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()

    provider = LocalProvider(max_tokens=args.tokens)
    await provider.chat([Message.user("Hi")])  # load the model and warm up outside the timing
    raw_round(provider, 16)

    heron_rates, raw_rates = [], []
    for _ in range(args.rounds):
        raw_rates.append(raw_round(provider, args.tokens))
        heron_rates.append(await heron_round(provider, args.tokens))
    heron, raw = statistics.median(heron_rates), statistics.median(raw_rates)

    print(f"model {provider.model_path.name}, {args.tokens} tokens x {args.rounds} rounds")
    print(f"  raw llama-cpp-python  {raw:8.1f} tokens/s (median)")
    print(f"  heron LocalProvider   {heron:8.1f} tokens/s (median)")
    print(f"  ratio heron / raw     {heron / raw:8.3f}   (goal >= 0.95)")

    heron_cli = Path(sys.executable).with_name("heron")
    env_note = "" if "HERON_PROVIDER" not in os.environ else " (HERON_PROVIDER is set!)"
    first, total = first_output([str(heron_cli), "run", "What time is it in UTC?"])
    print(f'heron run "What time is it in UTC?"{env_note}')
    print(f"  first streamed output after {first:6.2f} s; finished after {total:6.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
