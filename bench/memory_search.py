"""Memory's store at growing sizes: write, update and search costs, SQLite beside PostgreSQL.

Entries of about 120 words are written through the daemon's own ``MemoryStore`` (one
transaction each: the row, its version, and on SQLite the FTS5 row), then each
size gets a row of median milliseconds of ``--repeat`` runs:

- **create**: one new entry;
- **update**: a new body for an existing entry (re-indexed);
- **search**: a one-word query (about 7% of entries match), ranked, limit 10;
- **search2**: a two-word query (both words: about 0.5% match);
- **list**: one page of 50 in path order.

PostgreSQL runs only where it is installed (a throwaway server, as the tests start);
its statistics are refreshed (``ANALYZE``, as autovacuum would) before each size.
Run it from the repository root::

    python bench/memory_search.py                  # 1,000 and 10,000 entries
    python bench/memory_search.py --sizes 500      # a quicker look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine
from heron.runtime.db._handle import Database
from heron.runtime.memory._paths import new_entry_id
from heron.runtime.memory._store import MemoryStore

SYLLABLES = "ka lo mi ne ru ta vo shi pe da gu ri".split()
WORDS = sorted({a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES})
"""1,728 made-up words: one is in about 7% of entries, two together in about 0.5%."""


def body(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(120))


def row(n: int, rng: random.Random) -> dict[str, Any]:
    path = f"area{n % 37}/topic{n % 101}/note{n}"
    return {
        "entry_id": new_entry_id(),
        "profile": "default",
        "path": path,
        "slug": path.rsplit("/", 1)[-1],
        "title": f"Note {n}",
        "body": body(rng),
        "tags": "bench",
    }


async def timed(repeat: int, action: Callable[[int], Awaitable[Any]]) -> float:
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        await action(i)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(url: str, sizes: list[int], repeat: int) -> dict[int, dict[str, float]]:
    database = Database(create_engine(url))
    database.migrate(SCHEMAS)
    store = MemoryStore(database)
    rng = random.Random(7)
    figures: dict[int, dict[str, float]] = {}
    written = 0
    ids: list[str] = []
    try:
        for size in sizes:
            while written < size:
                entry, _ = await store.memory_create(row(written, rng))
                ids.append(entry["entry_id"])
                written += 1
            base = written
            if store.db.engine.dialect.name == "postgresql":
                # Fresh statistics, as autovacuum keeps them: without them the planner
                # guesses, and the figures measure its guess, not the search.
                with store.db.engine.begin() as conn:
                    conn.execute(sa.text("ANALYZE heron_memory_entries"))

            async def create(i: int, base: int = base) -> None:
                await store.memory_create(row(base + 1_000_000 + i, rng))

            async def update(i: int) -> None:
                await store.memory_change(ids[i], "default", "update", {"body": body(rng)})

            async def search(i: int) -> None:
                query = WORDS[(i * 37) % len(WORDS)]
                await store.memory_search(query, profile="default", limit=10)

            async def search2(i: int) -> None:
                query = f"{WORDS[(i * 37) % len(WORDS)]} {WORDS[(i * 91) % len(WORDS)]}"
                await store.memory_search(query, profile="default", limit=10)

            async def page(i: int) -> None:
                await store.memory_page("default", prefix=None, limit=50, after=None)

            figures[size] = {
                "create": await timed(repeat, create),
                "update": await timed(repeat, update),
                "search": await timed(repeat, search),
                "search2": await timed(repeat, search2),
                "list": await timed(repeat, page),
            }
    finally:
        database.close()
    return figures


@contextlib.contextmanager
def postgres() -> Iterator[str | None]:
    """A URL on a throwaway PostgreSQL server, or ``None`` where none is installed."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support import pg

    if pg.bin_dir() is None:
        yield None
        return
    with pg.cluster() as cluster:
        yield cluster.create_database("heron_bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    results: dict[str, dict[int, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{home}/bench.db"
        results["sqlite"] = asyncio.run(measure(url, sizes, args.repeat))
    with postgres() as pg_url:
        if pg_url is not None:
            results["postgresql"] = asyncio.run(measure(pg_url, sizes, args.repeat))
    kinds = list(results)
    print(f"median ms of {args.repeat} runs")
    print(f"{'entries':>8} {'op':<8} " + " ".join(f"{k:>11}" for k in kinds))
    for size in sizes:
        for op in ("create", "update", "search", "search2", "list"):
            cells = " ".join(f"{results[k][size][op]:>11.2f}" for k in kinds)
            print(f"{size:>8} {op:<8} {cells}")


if __name__ == "__main__":
    main()
