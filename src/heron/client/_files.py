"""``client.files`` (host files by absolute path) and ``client.bash`` (one command).

Paths are not checked here: the daemon validates them (``422 invalid_path``)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, Resource, endpoint

__all__ = ["BASH_MARGIN", "Bash", "Files"]

BASH_MARGIN = 30.0
"""Seconds a ``bash.run`` request waits beyond the command's own timeout, so the daemon's
answer (``timed_out``) arrives before the client would give up."""

_DEFAULT_BASH_TIMEOUT = 60.0  # the daemon's default, for the request's own timeout


class Files(Resource[M]):
    """``client.files``: read, write and list files on the daemon's host, as its user."""

    @endpoint
    def read(
        self,
        path: str,
        *,
        offset: int | None = None,
        limit: int | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.FilePeek]:
        """``GET /v1/files/peek``: up to ``limit`` bytes (default 256 KiB, at most 1 MiB)
        from ``offset``; UTF-8 text, or base64 (``encoding``) for other bytes.

        Example::

            page = client.files.read("/etc/hostname")
            while page.truncated:
                page = client.files.read(page.path, offset=page.next_offset)
        """
        query = {"path": path, "offset": offset, "limit": limit}
        return self._call("GET", "/v1/files/peek", api.FilePeek, query=query, options=options)

    @endpoint
    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        create_parents: bool | None = None,
        overwrite: bool | None = None,
        expected_modified_at: datetime | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.FileWritten]:
        """``POST /v1/files/write``: replace or create the file atomically (at most 1 MiB;
        ``413 file_too_large`` otherwise, nothing written). ``bytes`` are sent as base64.

        ``create_parents`` makes missing directories; ``overwrite=False`` refuses an
        existing file (``409 file_exists``); ``expected_modified_at`` (a read's
        ``modified_at``) refuses a file changed since (``409 file_modified``).
        """
        body: dict[str, object]
        if isinstance(content, bytes | bytearray):
            encoded = base64.b64encode(content).decode("ascii")
            body = {"path": path, "content": encoded, "encoding": "base64"}
        elif isinstance(content, str):
            body = {"path": path, "content": content}
        else:
            raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
        extra = {
            "create_parents": create_parents,
            "overwrite": overwrite,
            "expected_modified_at": (
                expected_modified_at.isoformat() if expected_modified_at is not None else None
            ),
        }
        body.update({key: value for key, value in extra.items() if value is not None})
        return self._call("POST", "/v1/files/write", api.FileWritten, body=body, options=options)

    @endpoint
    def list(
        self,
        path: str,
        *,
        limit: int | None = None,
        hidden: bool | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.FileList]:
        """``GET /v1/files/list``: a directory's entries, directories first, then by name
        (default 1000, at most 10000; ``truncated`` says some were left out); names
        starting with ``.`` only with ``hidden=True``."""
        query = {"path": path, "limit": limit, "hidden": hidden}
        return self._call("GET", "/v1/files/list", api.FileList, query=query, options=options)


class Bash(Resource[M]):
    """``client.bash``: run one command on the daemon's host."""

    @endpoint
    def run(
        self,
        command: str,
        *,
        cwd: str,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        options: RequestOptions | None = None,
    ) -> Flow[api.BashResult]:
        """``POST /v1/bash``: run ``bash -c command`` in ``cwd`` (absolute, required) and
        wait for it; a non-zero exit is a result, not an error. ``timeout`` (default 60 s,
        at most 3600) kills it and all it started (``timed_out``). The request waits that
        long plus :data:`BASH_MARGIN`; cancelling it (``options.cancel``) kills the command.
        The command inherits the daemon's environment less its secrets (``HERON_TOKEN``,
        ``HERON_DATABASE_URL``, providers' API keys); ``env`` adds (or gives back) variables.

        Example::

            result = client.bash.run("make test", cwd="/repo", timeout=600)
            if result.exit_code != 0:
                print(result.stderr)
        """
        body: dict[str, object] = {"command": command, "cwd": cwd}
        if timeout is not None:
            body["timeout"] = timeout
        if env is not None:
            body["env"] = dict(env)
        if stdin is not None:
            body["stdin"] = stdin
        seconds = timeout if isinstance(timeout, int | float) else _DEFAULT_BASH_TIMEOUT
        return self._call(
            "POST",
            "/v1/bash",
            api.BashResult,
            body=body,
            options=options,
            min_timeout=seconds + BASH_MARGIN,
        )
