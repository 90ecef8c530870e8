"""The ``react-frontend`` skill: building, running and debugging React applications."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..tools import Skill, Tool
from ..tools.bash import BashTools
from ._tools import project_skill

__all__ = ["react_frontend"]

_DESCRIPTION = (
    "Use this skill when creating, changing or debugging a React front end (.tsx/.jsx "
    "components, usually a Vite project): pages, components, state, forms and data fetching."
)

_INSTRUCTIONS = """\
- Paths given to the fs-* tools are relative to the project root, and bash commands start
  there too. Read package.json, the Vite (or other bundler) config and src/ first: follow
  the project's React version, TypeScript or JavaScript, router, styling approach and state
  library rather than introducing new ones.
- For a new app, scaffold non-interactively (`npm create vite@latest app -- --template
  react-ts`), then install with the package manager the lockfile names.
- Write function components with hooks. Keep components small, give every list item a
  stable key (never the array index when items move), and keep derived values out of state.
- Effects: list every dependency, clean up subscriptions and timers, and cancel or ignore
  fetches that finish after the component unmounted. Show loading, empty and error states
  for every request.
- Forms are controlled, labelled and validated; buttons that submit are disabled while a
  submit is in flight.
- Type props and API responses when the project uses TypeScript; do not silence errors with
  `any` or `// @ts-ignore`.
- Check your work with `npx tsc --noEmit` (TypeScript) and `npm run build`; a production
  build that fails is not done. Run the project's lint and test scripts if it has them.
- Run the dev server with bash-start (`npm run dev -- --host 127.0.0.1`), read the URL from
  bash-read, fetch the page with curl through bash-run to see that it serves, and bash-kill
  the server when you are done.
"""


def react_frontend(
    root: str | os.PathLike[str] = ".",
    *,
    files: Sequence[Tool] | None = None,
    bash: BashTools | None = None,
) -> Skill:
    """The ``react-frontend`` skill: file tools confined to ``root``, bash tools starting there.

    ``root``, ``files`` and ``bash`` work as for :func:`~heron.skills.python_backend`.
    """
    return project_skill("react-frontend", _DESCRIPTION, _INSTRUCTIONS, root, files, bash)
