"""The ``node-backend`` skill: building, running and debugging Node.js services."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..tools import Skill, Tool
from ..tools.bash import BashTools
from ._tools import project_skill

__all__ = ["node_backend"]

_DESCRIPTION = (
    "Use this skill when writing, running or debugging a Node.js backend: HTTP APIs and "
    "servers (Express, Fastify, Nest), CLIs, queue workers, schedulers and database access."
)

_INSTRUCTIONS = """\
- Paths given to the fs-* tools are relative to the project root, and bash commands start
  there too. Read package.json first: its "type" (ESM or CommonJS), scripts, engines and
  dependencies decide how you write and run code. Check the lockfile to pick the package
  manager (package-lock.json: npm, pnpm-lock.yaml: pnpm, yarn.lock: yarn) and use only that one.
- Install with the lockfile respected (`npm ci` when a lockfile exists, else `npm install`);
  add dependencies with the package manager so package.json and the lockfile stay in step.
- Match the project's language and module style: TypeScript stays TypeScript (run `npx tsc
  --noEmit` after changes), ESM stays ESM. Do not mix require() and import in one package.
- Handle every async failure: await promises, wrap route handlers so rejected promises reach
  the error handler, and never leave an unhandled rejection. Validate request bodies at the
  edge and answer with a proper status code and message.
- Configuration and secrets come from environment variables (process.env), never from
  source code. Listen on the port from the environment with a sensible default.
- Start servers with bash-start (for example `npm run dev`), poll bash-read until it reports
  the listening port, test endpoints with curl through bash-run, then bash-kill the process.
  Never bash-run a watcher or server: it does not return.
- Read stack traces from the top frame in the project's own files; reproduce a bug with a
  request or a test before fixing it and confirm the fix the same way.
- Run the project's test script (`npm test`) and linter if configured before you finish.
"""


def node_backend(
    root: str | os.PathLike[str] = ".",
    *,
    files: Sequence[Tool] | None = None,
    bash: BashTools | None = None,
) -> Skill:
    """The ``node-backend`` skill: file tools confined to ``root``, bash tools starting there.

    ``root``, ``files`` and ``bash`` work as for :func:`~heron.skills.python_backend`.
    """
    return project_skill("node-backend", _DESCRIPTION, _INSTRUCTIONS, root, files, bash)
