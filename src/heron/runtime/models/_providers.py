"""Which provider a node's model turn goes to: the daemon default or the node's override."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from ..._core import ProviderError, UserError
from ...providers import (
    KEYED_KINDS,
    Provider,
    ScriptedProvider,
    from_spec,
    load_script,
    out_of_process,
)
from ...providers.scripted import Step
from ._credentials import Credential, redact
from ._readiness import KEY_VARIABLES

__all__ = ["ProviderPool"]


class ProviderPool:
    """Builds providers from specs once and shares them between nodes.

    ``scripted:FILE.json`` is the exception: each turn gets its own
    :class:`ScriptedProvider` choosing its step from the node's conversation
    (``by_history``), so every node plays its own copy of the script and a
    node resumed after a restart continues where it was.

    Hosted providers are built with the credential installed in the daemon for
    their kind (see :meth:`install`), else from the environment: an installed key
    wins over ``OPENAI_API_KEY`` and friends, and its base URL (when it has one)
    over ``OPENAI_BASE_URL`` and friends.
    """

    def __init__(self, default: str | None) -> None:
        self.default = (default or "local").strip()
        """The spec nodes use unless they name their own model."""
        self.credentials: dict[str, Credential] = {}
        """The credentials installed in the daemon, by provider kind."""
        self._shared: dict[str, Provider] = {}
        self._scripts: dict[str, tuple[float, list[Step]]] = {}
        self._generation: dict[str, int] = {}  # per kind: bumped by every install/remove
        self._retired: list[Provider] = []  # replaced, still in use by a call
        self._calls: dict[int, int] = {}  # id(provider): calls going on through use()

    def get(self, spec: str | None) -> Provider:
        """The provider for ``spec`` (``None``: the default); ``UserError`` if unbuildable."""
        spec = (spec or self.default).strip()
        kind, _, rest = spec.partition(":")
        if kind.strip().lower() == "scripted":
            return ScriptedProvider(self._script(rest.strip(), reread=False), by_history=True)
        provider = self._shared.get(spec)
        if provider is None:
            provider = self._shared[spec] = self._build(spec)
        return provider

    @contextlib.asynccontextmanager
    async def use(self, spec: str | None) -> AsyncIterator[Provider]:
        """The provider for ``spec`` (``None``: the default) for one call to it.

        It is built off the event loop if it is not yet; one replaced meanwhile (a new key
        installed) is closed when its last call ends. An error the call raises is
        scrubbed of every API key the daemon knows, and of the masked copies vendors
        quote back when they refuse one: it becomes an outcome, an event, an answer.
        """
        await self.prepare(spec)
        provider = self.get(spec)
        self._calls[id(provider)] = self._calls.get(id(provider), 0) + 1
        try:
            yield provider
        except Exception as exc:
            scrubbed = self.scrub(exc)
            if scrubbed is exc:
                raise
            raise scrubbed from None
        finally:
            left = self._calls.pop(id(provider)) - 1
            if left:
                self._calls[id(provider)] = left
            elif provider in self._retired:
                self._retired.remove(provider)
                await provider.aclose()

    def scrub(self, exc: Exception) -> Exception:
        """``exc`` itself when neither it nor its causes quote a key (or a part of one),
        else a :class:`ProviderError` saying the same without it (and without them)."""
        keys = [c.api_key for c in self.credentials.values()]
        keys += [v.strip() for n in KEY_VARIABLES.values() if (v := os.environ.get(n, ""))]
        chain: list[BaseException] = []
        cause: BaseException | None = exc
        while cause is not None and cause not in chain:
            chain.append(cause)
            cause = cause.__cause__ or cause.__context__
        texts = [exc.message if isinstance(exc, ProviderError) else str(exc)]
        texts += [str(e) for e in chain]
        if all(redact(text, keys) == text for text in texts):
            return exc
        message = redact(texts[0], keys)
        if isinstance(exc, ProviderError):
            return ProviderError(
                message,
                status=exc.status,
                code=exc.code,
                retryable=exc.retryable,
                provider=exc.provider,
            )
        return ProviderError(f"{type(exc).__name__}: {message}")

    def install(self, kind: str, credential: Credential | None) -> list[Provider]:
        """Use ``credential`` for provider ``kind`` from now on (``None``: the environment's
        again). Providers of that kind built with the old key are rebuilt at their next
        use. Returns those no call is using: the caller closes them (the others are
        closed as their last call ends).
        """
        if credential is None:
            self.credentials.pop(kind, None)
        else:
            self.credentials[kind] = credential
        self._generation[kind] = self._generation.get(kind, 0) + 1
        idle = []
        for spec in [s for s in self._shared if _kind(s) == kind]:
            provider = self._shared.pop(spec)
            if id(provider) in self._calls:
                self._retired.append(provider)
            else:
                idle.append(provider)
        return idle

    def _build(self, spec: str) -> Provider:
        """A new provider for ``spec``, with its kind's installed credential if any."""
        kind = _kind(spec)
        credential = self.credentials.get(kind)
        if credential is not None:
            return from_spec(spec, api_key=credential.api_key, base_url=credential.base_url)
        try:
            # The embedded model runs in a worker process: a native crash in it fails
            # the turns it was serving, not the daemon and every node with it.
            return out_of_process(from_spec(spec))
        except UserError as exc:
            if kind not in KEYED_KINDS:
                raise
            # The daemon has a second way to get a key: say so where the key is missing.
            hint = f"or install one in the daemon: heron models credentials install {kind}"
            raise UserError(f"{exc} ({hint})") from None

    async def prepare(self, spec: str | None, *, reread: bool = False) -> None:
        """Build (off the event loop) the provider for ``spec`` if it is not built yet;
        :class:`UserError` if it cannot be (an unknown kind, a missing key or script).

        Building one may load a model for seconds; the daemon must keep serving meanwhile.
        A script is read again if it changed when ``reread`` (a create or config names it).
        """
        key = (spec or self.default).strip()
        kind, _, rest = key.partition(":")
        if kind.strip().lower() == "scripted":
            self._script(rest.strip(), reread=reread)
        elif key not in self._shared:
            generation = self._generation.get(_kind(key), 0)
            provider = await asyncio.to_thread(self._build, key)
            if self._generation.get(_kind(key), 0) != generation:
                # A credential changed while it was built: it may hold the old key.
                await provider.aclose()
                self.get(key)  # built again now, with the current one (or refused)
            elif self._shared.setdefault(key, provider) is not provider:
                await provider.aclose()  # a concurrent prepare built it first (unused)

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
        """Close every provider the pool built."""
        for provider in [*self._shared.values(), *self._retired]:
            await provider.aclose()
        self._shared.clear()
        self._retired.clear()


def _kind(spec: str) -> str:
    """The provider kind a spec names (``openai`` for ``openai:gpt-5``)."""
    return spec.strip().partition(":")[0].strip().lower()
