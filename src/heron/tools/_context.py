"""What a running tool can reach: its environment id, storage and id generator."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

__all__ = ["IdGenerator", "MemoryStorage", "Storage", "ToolContext"]


class Storage(ABC):
    """A small async key/value store for tool state (strings in, strings out)."""

    @abstractmethod
    async def get(self, key: str) -> str | None:
        """Return the value stored under ``key``, or ``None``."""

    @abstractmethod
    async def set(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing any earlier value."""

    async def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent).

        Optional: a backend that cannot delete keeps this default, which says so.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot delete keys")

    async def keys(self, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix``, sorted.

        Optional: a backend that cannot list keeps this default, which says so.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot list keys")


class MemoryStorage(Storage):
    """A :class:`Storage` kept in this process's memory; gone when it exits."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        """Return the value under ``key``, or ``None``."""
        return self._data.get(key)

    async def set(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``."""
        self._data[key] = value

    async def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent)."""
        self._data.pop(key, None)

    async def keys(self, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        return sorted(k for k in self._data if k.startswith(prefix))


class IdGenerator:
    """Hands out short ids that are stable per environment: ``ref-1``, ``ref-2``, ...

    The counters live in ``storage`` under the ``env_id``: with a persistent
    storage, a restarted process continues the sequence instead of reusing ids.
    Share one generator per environment; two generators over the same storage
    and env id may hand out the same id concurrently.
    """

    def __init__(self, storage: Storage, env_id: str) -> None:
        self._storage = storage
        self._env_id = env_id
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}

    async def next(self, prefix: str = "ref") -> str:
        """Return the next id with ``prefix``."""
        key = f"heron.ids/{self._env_id}/{prefix}"
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:  # one lock per event loop: asyncio locks cannot cross loops
            self._locks = {loop: (lock := asyncio.Lock())}
        async with lock:
            current = int(await self._storage.get(key) or 0) + 1
            await self._storage.set(key, str(current))
        return f"{prefix}-{current}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolContext:
    """Passed to a tool's ``execute``: the state of the client that called it.

    Two clients with different ``env_id`` values see separate state even when
    they share one tool server. ``storage`` and ``ids`` are async: a tool that
    uses them is written ``async def``. Their calls are not transactions; guard
    a read-modify-write that parallel calls of a turn could interleave::

        @tool
        async def remember(fact: str, context: ToolContext) -> str:
            \"\"\"Remember a fact for later turns.\"\"\"
            key = context.scoped_key("facts")
            facts = json.loads(await context.storage.get(key) or "[]")
            await context.storage.set(key, json.dumps([*facts, fact]))
            return f"remembered {len(facts) + 1} facts"
    """

    env_id: str = "local"
    """The calling client's environment id."""
    storage: Storage = field(default_factory=MemoryStorage)
    """Key/value storage for tool state; prefix keys with ``env_id`` to scope them."""
    ids: IdGenerator | None = None
    """Stable id generator for this environment."""

    def scoped_key(self, key: str) -> str:
        """``key`` prefixed with this environment's id."""
        return f"{self.env_id}/{key}"
