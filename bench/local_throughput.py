"""Generation speed of the embedded model, four ways.

1. Weight repacking on and off (llama.cpp's ``use_extra_bufts``), each in its own
   process, so a CPU where repacking crashes (Intel AMX) reports the crash instead of
   ending the benchmark. This is the measurement behind the default: repacking stays on
   only where it is safe.
2. Heron's in-process ``LocalProvider`` against raw llama-cpp-python on the same loaded
   model: the same rendered prompt, greedy decoding, the same token cap. The raw side is
   ``Llama.create_completion(..., stream=True)``; Heron's adds the generation thread,
   the hand-off to the event loop, tag detection and the chunks (goal: >= 0.95x raw).
3. The out-of-process worker the daemon and ``heron run`` use (``LocalProcessProvider``)
   against the in-process provider (goal: >= 0.95x in-process).
4. The time from starting ``heron run`` as a new process to its first byte of streamed
   output and to its exit.

Rounds alternate between the sides compared so machine noise lands on both; the
figures are medians. Run it from the repository root (after ``pip install -e .``)::

    python bench/local_throughput.py              # 5 rounds of 256 tokens
    python bench/local_throughput.py --rounds 3 --tokens 128 --model ~/models/q4_0.gguf
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import selectors
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from heron import Message, StreamChunk
from heron.providers import LocalProvider, Provider
from heron.providers._local_cpu import cpu_flags, repack_safe
from heron.providers._local_process import LocalProcessProvider
from heron.providers._local_prompt import template_messages

PROMPT = "Write a long story about a dragon who learns to paint."


async def provider_round(provider: Provider, tokens: int) -> float:
    """Tokens per second of one streamed reply."""
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


async def measure_repack(model: Path | None, repack: bool, rounds: int, tokens: int) -> None:
    """(In a child process.) Print the median tokens/s with repacking ``repack``."""
    provider = LocalProvider(model, max_tokens=tokens, repack=repack)
    await provider.chat([Message.user("Hi")])
    rates = [await provider_round(provider, tokens) for _ in range(rounds)]
    print(json.dumps({"rate": statistics.median(rates)}))


def repack_figure(model: Path | None, repack: bool, rounds: int, tokens: int) -> str:
    """The child process's tokens/s, or how it died."""
    command = [sys.executable, __file__, "--rounds", str(rounds), "--tokens", str(tokens)]
    command += ["--measure-repack", "on" if repack else "off"]
    if model is not None:
        command += ["--model", str(model)]
    child = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if child.returncode < 0:
        return f"crashed ({signal.Signals(-child.returncode).name})"
    if child.returncode != 0:
        return f"failed: {(child.stderr.strip().splitlines() or ['?'])[-1]}"
    rate = json.loads(child.stdout.strip().splitlines()[-1])["rate"]
    return f"{rate:8.1f} tokens/s (median)"


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
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: SmolLM2)")
    parser.add_argument("--measure-repack", choices=["on", "off"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_repack:
        await measure_repack(args.model, args.measure_repack == "on", args.rounds, args.tokens)
        return

    provider = LocalProvider(args.model, max_tokens=args.tokens)
    print(f"model {provider.model_path.name}, {args.tokens} tokens x {args.rounds} rounds")
    safe = repack_safe(cpu_flags())
    print(f"weight repacking (this CPU: {'no AMX' if safe else 'AMX'}; default: {provider.repack})")
    print(f"  on   {repack_figure(args.model, True, args.rounds, args.tokens)}")
    print(f"  off  {repack_figure(args.model, False, args.rounds, args.tokens)}")

    worker = LocalProcessProvider.like(provider)
    await provider.chat([Message.user("Hi")])  # load and warm up outside the timing
    await worker.chat([Message.user("Hi")])
    raw_round(provider, 16)
    heron_rates, raw_rates, worker_rates = [], [], []
    for _ in range(args.rounds):
        raw_rates.append(raw_round(provider, args.tokens))
        heron_rates.append(await provider_round(provider, args.tokens))
        worker_rates.append(await provider_round(worker, args.tokens))
    await worker.aclose()
    heron, raw = statistics.median(heron_rates), statistics.median(raw_rates)
    out = statistics.median(worker_rates)
    print(f"  raw llama-cpp-python  {raw:8.1f} tokens/s (median)")
    print(f"  heron LocalProvider   {heron:8.1f} tokens/s (median)")
    print(f"  ratio heron / raw     {heron / raw:8.3f}   (goal >= 0.95)")
    print(f"  worker process        {out:8.1f} tokens/s (median)")
    print(f"  ratio worker / heron  {out / heron:8.3f}   (goal >= 0.95)")

    heron_cli = Path(sys.executable).with_name("heron")
    env_note = "" if "HERON_PROVIDER" not in os.environ else " (HERON_PROVIDER is set!)"
    first, total = first_output([str(heron_cli), "run", "What time is it in UTC?"])
    print(f'heron run "What time is it in UTC?"{env_note}')
    print(f"  first streamed output after {first:6.2f} s; finished after {total:6.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
