"""Host files: ``/v1/files/peek``, ``/v1/files/list`` and ``/v1/files/write`` (the rules
are :mod:`._service`'s)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import FastAPI, Query

from ... import api
from ...api import HOST_PATH_PATTERN
from ..server import errors
from . import _service as _files

__all__ = ["add_files_routes"]

PathQuery = Annotated[
    str,
    Query(
        max_length=4096,
        description="An absolute path (no `..`); symlinks are followed.",
        examples=["/etc/hostname"],
        # Documented, but checked by the daemon: another answers 422 invalid_path.
        json_schema_extra={"pattern": HOST_PATH_PATTERN},
    ),
]
"""The ``path`` of a files route."""

_MAX_OFFSET = 2**62  # what pread takes (an off_t), with room for the window after it


def add_files_routes(app: FastAPI) -> None:
    """Serve peek, list and write of host files."""

    @app.get("/v1/files/peek", tags=["files"], responses=errors(403, 404, 422))
    async def peek_file(
        path: PathQuery,
        offset: Annotated[int, Query(ge=0, le=_MAX_OFFSET, description="First byte to read.")] = 0,
        limit: Annotated[
            int, Query(ge=1, le=_files.MAX_PEEK, description="Bytes to read (at most 1 MiB).")
        ] = _files.DEFAULT_PEEK,
    ) -> api.FilePeek:
        """A window of a file: UTF-8 text, or base64 of bytes that are not; ``truncated``
        and ``next_offset`` when the file goes on."""
        return await asyncio.to_thread(_files.peek, path, offset, limit)

    @app.get("/v1/files/list", tags=["files"], responses=errors(403, 404, 422))
    async def list_files(
        path: PathQuery,
        limit: Annotated[
            int, Query(ge=1, le=_files.MAX_LIST, description="At most this many entries.")
        ] = _files.DEFAULT_LIST,
        hidden: Annotated[bool, Query(description="Include names starting with `.`.")] = False,
    ) -> api.FileList:
        """A directory's entries: directories first, then the rest, each by name."""
        return await asyncio.to_thread(_files.list_directory, path, limit, hidden)

    @app.post(
        "/v1/files/write",
        tags=["files"],
        responses=errors(400, 403, 404, 409, 413, 415, 422, 507),
    )
    async def write_file(body: api.FileWriteRequest) -> api.FileWritten:
        """Replace or create a file atomically (temporary file, fsync, rename): readers
        see the old content or the new. Over 1 MiB decoded: ``413 file_too_large``."""
        return await asyncio.to_thread(_files.write, body)
