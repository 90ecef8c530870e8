"""``python -m heron`` is the ``heron`` command."""

from .cli import main

main()
