"""The ``async with`` shape of tool sets that own processes (a shell, a browser)."""

from __future__ import annotations

from abc import abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["AsyncClosing"]


class AsyncClosing:
    """Mixin: ``async with`` closes the object with its :meth:`aclose` on the way out."""

    @abstractmethod
    async def aclose(self) -> None:
        """Stop what the object started."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
