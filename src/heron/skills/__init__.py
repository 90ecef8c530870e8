"""Ready-made skills: instructions for common jobs, bundled with the tools they need.

Each is a factory returning a fresh :class:`~heron.Skill`; the ones that work on a
project take its root directory, which confines their file and shell tools::

    from heron.skills import big_task, planner, present

    agent = SimpleAgent(provider=provider, skills=[planner(), big_task(), present("./out")])
"""

from .backend_security import backend_security
from .big_task import big_task
from .long_task_efficiency import long_task_efficiency
from .planner import planner
from .present import present
from .question_answer import question_answer
from .ui_ux_design import ui_ux_design
from .web_end_to_end_test import web_end_to_end_test

__all__ = [
    "backend_security",
    "big_task",
    "long_task_efficiency",
    "planner",
    "present",
    "question_answer",
    "ui_ux_design",
    "web_end_to_end_test",
]
