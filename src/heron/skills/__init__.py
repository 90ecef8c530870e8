"""Ready-made skills: instructions for a kind of job, bundled with the tools it needs.

Each is a factory returning a fresh :class:`~heron.tools.Skill`::

    agent = SimpleAgent(provider=provider, skills=[web_end_to_end_test()])
"""

from .web_end_to_end_test import web_end_to_end_test

__all__ = [
    "web_end_to_end_test",
]
