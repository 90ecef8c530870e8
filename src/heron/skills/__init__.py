"""Ready-made skills: instructions for common jobs, bundled with the tools they need.

Each is a factory returning a fresh :class:`~heron.Skill` with new tools; the
ones that work on a project take its root directory: their file tools cannot
leave it and their shell commands start there (commands are not sandboxed)::

    from heron.skills import big_task, planner, python_backend

    agent = SimpleAgent(provider=provider, skills=[planner(), python_backend("./service")])

An agent registers each tool name once. File tools for one root are equal,
wherever they were made; bash and browser tools hold processes or a browser,
so two sets of them are never the same tools. To give an agent several skills
that use them, make the sets once and pass them to each skill (``bash=``,
``browser=``; ``files=`` too, if you like)::

    async with bash_tools("app") as bash:
        skills = [python_backend("app", bash=bash), code_verification("app", bash=bash)]

A :func:`~heron.tools.catalog` has its sets ready as ``.files``, ``.bash`` and
``.browser``::

    async with catalog("app") as tools:
        skill = python_backend("app", files=tools.files, bash=tools.bash)
        agent = SimpleAgent(provider=provider, tools=list(tools.values()), skills=[skill])
"""

from .backend_security import backend_security
from .big_task import big_task
from .code_verification import code_verification
from .long_task_efficiency import long_task_efficiency
from .node_backend import node_backend
from .planner import planner
from .present import present
from .python_backend import python_backend
from .question_answer import question_answer
from .react_frontend import react_frontend
from .research import research
from .shopping import shopping
from .ui_ux_design import ui_ux_design
from .web_end_to_end_test import web_end_to_end_test

__all__ = [
    "backend_security",
    "big_task",
    "code_verification",
    "long_task_efficiency",
    "node_backend",
    "planner",
    "present",
    "python_backend",
    "question_answer",
    "react_frontend",
    "research",
    "shopping",
    "ui_ux_design",
    "web_end_to_end_test",
]
