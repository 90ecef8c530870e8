"""The start/close shape shared by servers, clients and sandboxes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["Lifecycle"]


class Lifecycle(ABC):
    """Something started and closed, by hand or as an async context manager."""

    @abstractmethod
    async def start(self) -> None:
        """Start it."""

    @abstractmethod
    async def close(self) -> None:
        """Stop it and release what it holds; safe to call twice."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
