"""Ready-made skills: instructions for common jobs, bundled with the tools they need.

Each is a factory returning a fresh :class:`~heron.Skill` with new tools; the
ones that work on a project take its root directory, which confines their file
and shell tools::

    from heron.skills import big_task, planner, python_backend

    agent = SimpleAgent(provider=provider, skills=[planner(), python_backend("./service")])

An agent registers each tool name once, and two sets of file, bash or browser
tools are never the same tools (they hold a root, processes, a browser). To
give an agent several skills that use them, make the sets once and pass them
to each skill (``files=``, ``bash=``, ``browser=``)::

    async with bash_tools("app") as bash:
        files = filesystem_tools("app")
        skills = [
            python_backend("app", files=files, bash=bash),
            code_verification("app", files=files, bash=bash),
        ]
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
