"""Ready-made skills: instructions for common jobs, bundled with the tools they need.

Each is a factory returning a fresh :class:`~heron.Skill`::

    from heron.skills import planner, present

    agent = SimpleAgent(provider=provider, skills=[planner(), present("./project")])
"""

from .planner import planner
from .present import present
from .question_answer import question_answer
from .web_end_to_end_test import web_end_to_end_test

__all__ = [
    "planner",
    "present",
    "question_answer",
    "web_end_to_end_test",
]
