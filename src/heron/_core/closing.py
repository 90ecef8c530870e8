"""The ``with`` / ``async with`` shape of what holds resources (clients, streams, processes)."""

from __future__ import annotations

from abc import abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["AsyncClosing", "Closing"]


class Closing:
    """Mixin: ``with`` closes the object with its :meth:`close` on the way out."""

    @abstractmethod
    def close(self) -> None:
        """Let go of what the object holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClosing:
    """Mixin: ``async with`` closes the object with its :meth:`aclose` on the way out."""

    @abstractmethod
    async def aclose(self) -> None:
        """Let go of what the object holds (stop what it started)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
