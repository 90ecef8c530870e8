"""Commands: ``/v1/bash``, the sandbox node commands run in, their environment."""
