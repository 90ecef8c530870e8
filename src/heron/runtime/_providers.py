"""Which provider a node's model turn goes to: the daemon default or the node's override."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from .._core import UserError
from ..providers import Provider, ScriptedProvider, from_spec, load_script
from ..providers.scripted import Step

__all__ = ["ProviderPool"]


class ProviderPool:
    """Builds providers from specs once and shares them between nodes.

    ``scripted:FILE.json`` is the exception: each turn gets its own
    :class:`ScriptedProvider` choosing its step from the node's conversation
    (``by_history``), so every node plays its own copy of the script and a
    node resumed after a restart continues where it was.
    """

    def __init__(self, default: str | None) -> None:
        self.default = (default or "local").strip()
        """The spec nodes use unless they name their own model."""
        self._shared: dict[str, Provider] = {}
        self._scripts: dict[str, tuple[float, list[Step]]] = {}

    def get(self, spec: str | None) -> Provider:
        """The provider for ``spec`` (``None``: the default); ``UserError`` if unbuildable."""
        spec = (spec or self.default).strip()
        kind, _, rest = spec.partition(":")
        if kind.lower() == "scripted":
            return ScriptedProvider(self._script(rest.strip(), reread=False), by_history=True)
        provider = self._shared.get(spec)
        if provider is None:
            provider = self._shared[spec] = from_spec(spec)
        return provider

    async def prepare(self, spec: str | None, *, reread: bool = False) -> None:
        """Build (off the event loop) the provider for ``spec`` if it is not built yet;
        :class:`UserError` if it cannot be (an unknown kind, a missing key or script).

        Building one may load a model for seconds; the daemon must keep serving meanwhile.
        A script is read again if it changed when ``reread`` (a create or config names it).
        """
        key = (spec or self.default).strip()
        kind, _, rest = key.partition(":")
        if kind.lower() == "scripted":
            self._script(rest.strip(), reread=reread)
        elif key not in self._shared:
            provider = await asyncio.to_thread(from_spec, key)
            self._shared.setdefault(key, provider)

    def _script(self, path: str, *, reread: bool) -> list[Step]:
        """The script at ``path``: re-read if it changed when ``reread`` (a create or a
        config change names it), else as cached (every model turn; no stat per turn)."""
        if not path:
            raise UserError("scripted needs a file: scripted:FILE.json")
        cached = self._scripts.get(path)
        if cached is not None and not reread:
            return cached[1]
        file = Path(path).expanduser()
        try:
            mtime = os.stat(file).st_mtime
        except OSError:
            if not file.is_absolute():  # the daemon's directory, not the client's
                raise UserError(
                    f"script file not found: {path} (a relative path is read from the "
                    f"daemon's directory, {Path.cwd()}; give an absolute path)"
                ) from None
            mtime = -1.0  # load_script says what is wrong with it
        if cached is None or cached[0] != mtime:
            cached = self._scripts[path] = (mtime, load_script(file))
        return cached[1]

    async def aclose(self) -> None:
        """Close every shared provider."""
        for provider in self._shared.values():
            await provider.aclose()
        self._shared.clear()
