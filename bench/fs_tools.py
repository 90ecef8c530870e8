"""The filesystem tools beside the system's own tools, on one generated source tree.

A tree of ``--files`` Python files (about 40 lines each, in nested folders, with a
``node_modules`` folder of as many files that the tools do not enter) is written to a
temporary directory. Each row times one search done three ways, after a warm-up:

- **heron**: the tool called through ``LocalToolClient`` (validation, worker thread,
  result wrapping included), as an agent would;
- **system**: GNU ``grep -rn`` / ``find`` in a subprocess (told to skip ``node_modules``
  too), what a bash tool would run instead;
- **pathlib**: ``Path.glob`` / a ``re`` loop over ``Path.rglob`` in this process, the floor
  for pure Python.

Figures are the median milliseconds of ``--repeat`` runs. Run it from the repository root::

    python bench/fs_tools.py               # 4,000 files
    python bench/fs_tools.py --files 500   # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from heron.tools import LocalToolClient, filesystem_tools


def make_tree(root: Path, files: int) -> None:
    """``files`` source files and as many dependency files under ``root``."""
    body = "".join(f"def f{n}(x):\n    return x + {n}  # plain line\n" for n in range(20))
    for n in range(files):
        folder = root / "src" / f"pkg{n % 20}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        marker = "# TODO: tidy\n" if n % 50 == 0 else ""
        (folder / f"file{n}.py").write_text(body + marker)
        dep = root / "node_modules" / f"lib{n % 30}"
        dep.mkdir(parents=True, exist_ok=True)
        (dep / f"index{n}.js").write_text("// TODO upstream\n" * 20)


def timed(run: Callable[[], object], repeat: int) -> float:
    run()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        make_tree(root, options.files)
        client = LocalToolClient(filesystem_tools(root, max_matches=10_000, max_entries=100_000))

        def tool(name: str, **arguments: object) -> Callable[[], object]:
            return lambda: asyncio.run(client.call_tool(name, dict(arguments)))

        def system(*command: str) -> Callable[[], object]:
            return lambda: subprocess.run(command, cwd=root, capture_output=True, check=False)

        todo = re.compile(r"TODO: \w+")

        def py_grep() -> object:
            return [
                (p, n)
                for p in (root / "src").rglob("*.py")
                for n, line in enumerate(p.read_text().splitlines(), 1)
                if todo.search(line)
            ]

        rows = [
            (
                "grep 'TODO: \\w+' (whole tree)",
                tool("fs-grep", pattern=r"TODO: \w+"),
                system("grep", "-rnE", "--exclude-dir=node_modules", r"TODO: \w+", "."),
                py_grep,
            ),
            (
                "glob **/*.py",
                tool("fs-glob", pattern="**/*.py"),
                system("find", ".", "-path", "./node_modules", "-prune", "-o", "-name", "*.py"),
                lambda: list((root / "src").glob("**/*.py")),
            ),
            (
                "list src, depth 3",
                tool("fs-list-directory", path="src", depth=3),
                system("find", "src", "-maxdepth", "3", "-printf", "%p %y %s\n"),
                lambda: [(p, p.stat().st_size) for p in (root / "src").glob("*/*/*")],
            ),
        ]
        print(f"{options.files} files, median of {options.repeat} runs, milliseconds")
        print(f"{'search':<32}{'heron':>10}{'system':>10}{'pathlib':>10}")
        for label, *runs in rows:
            figures = [timed(run, options.repeat) for run in runs]
            print(f"{label:<32}" + "".join(f"{f:>10.1f}" for f in figures))


if __name__ == "__main__":
    main()
