"""``python -m heron.mcp serve TOOLS --unix PATH``: see :mod:`heron.mcp._serve`."""

import sys

from ._serve import main

sys.exit(main())
