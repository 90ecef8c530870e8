"""Node event streams: ``client.nodes.stream(...)`` and ``client.nodes.events(id)``."""

from __future__ import annotations

from ._resource import M, Resource

__all__ = ["NodeStreams"]


class NodeStreams(Resource[M]):
    """The streaming half of ``client.nodes`` (``stream`` and ``events``)."""
