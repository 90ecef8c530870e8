"""The README's node examples on the embedded model, timed from ``heron daemon start``.

Starts a real daemon (``heron daemon start``) on a temporary ``HERON_HOME`` with no
``HERON_PROVIDER`` (so nodes run on the embedded SmolLM2-135M), then runs each example
the README shows a node doing, one after the other, through the client's stream:

- ``time``: the README's first node example, ``"What time is it in UTC?"`` with
  ``scopes: []`` (the curl block and the ``AsyncHeron`` stream block);
- ``package``: ``client.nodes.parse(prompt="Read pyproject.toml here and report the
  package's name and version.", cwd=..., output_schema=Package)`` (in a folder holding a
  ``pyproject.toml`` of name ``heron-bench``, version ``9.8.7``);
- ``summary``: ``heron nodes create "Summarise README.md" --cwd .`` (a short README).

For each it prints seconds from the start of ``heron daemon start`` (for the first
example; from the create for the others) to the node's first streamed event, to the
model's first output (a text delta or a tool call), and to ``node.settled``; the tools
called; the answer; and whether it is right. Run from the repository root::

    python bench/embedded_node.py
    python bench/embedded_node.py --examples time
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from heron.client import Heron

BIN = Path(sys.executable).parent
EXAMPLES = {
    "time": {"prompt": "What time is it in UTC?", "scopes": []},
    "package": {
        "prompt": "Read pyproject.toml here and report the package's name and version.",
        "output_schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
            "required": ["name", "version"],
        },
    },
    "summary": {"prompt": "Summarise README.md"},
}


def right(name: str, outcome: dict[str, Any], calls: list[str]) -> bool:
    """Whether the node answered as the README says it does."""
    if outcome.get("kind") != "result":
        return False
    text = outcome.get("output_text") or ""
    if name == "time":
        return "get-current-time" in calls and str(time.gmtime().tm_year) in text
    if name == "package":
        value = outcome.get("structured_result") or {}
        return value.get("name") == "heron-bench" and value.get("version") == "9.8.7"
    return "fs-read-file" in calls and "heron" in text.lower()


def run(client: Heron, name: str, work: Path, since: float) -> None:
    params = {**EXAMPLES[name], "cwd": str(work)}
    first = model = None
    calls: list[str] = []
    outcome: dict[str, Any] = {}
    with client.nodes.stream(**params) as stream:
        for event in stream:
            now = time.perf_counter() - since
            first = first if first is not None else now
            kind = event.type
            if model is None and kind in ("node.output_text.delta", "node.tool_call.started"):
                model = now
            if kind == "node.tool_call.started":
                calls.append(event.tool)
            if kind == "node.settled":
                outcome = event.outcome.model_dump(mode="json")
                break
    settled = time.perf_counter() - since
    answer = outcome.get("structured_result") or outcome.get("output_text")
    print(
        f"{name:8} first event {first:7.2f} s   model's first output "
        f"{model if model is not None else float('nan'):7.2f} s   settled {settled:7.2f} s"
    )
    print(f"{'':8} tools {calls}  right: {right(name, outcome, calls)}")
    print(f"{'':8} answer: {str(answer)[:200]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", nargs="*", default=list(EXAMPLES), choices=list(EXAMPLES))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="heron-bench-"))
    work = root / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text('[project]\nname = "heron-bench"\nversion = "9.8.7"\n')
    (work / "README.md").write_text("# Heron\n\nHeron runs AI agents as durable jobs.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    env["HERON_HOME"] = str(root / "home")
    heron = str(BIN / "heron")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    since = time.perf_counter()
    subprocess.run([heron, "daemon", "start"], env=env, check=True, capture_output=True)
    print(f"heron daemon start returned after {time.perf_counter() - since:.2f} s")
    try:
        os.environ.update(HERON_HOME=env["HERON_HOME"])
        with Heron(auto_start=False) as client:
            for index, name in enumerate(args.examples):
                run(client, name, work, since if index == 0 else time.perf_counter())
    finally:
        subprocess.run([heron, "daemon", "stop"], env=env, check=False, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
