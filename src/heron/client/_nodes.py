"""``client.nodes``: create agent runs, watch them, wait for their outcomes."""

from __future__ import annotations

from .. import api
from ._flow import Flow
from ._options import RequestOptions
from ._resource import M, check_id, endpoint
from ._stream import NodeStreams

__all__ = ["Nodes"]


class Nodes(NodeStreams[M]):
    """``client.nodes``: a node is one durable agent run on the daemon."""

    @endpoint
    def retrieve(self, node_id: str, *, options: RequestOptions | None = None) -> Flow[api.Node]:
        """``GET /v1/nodes/{id}``: the node as it is now."""
        return self._call("GET", f"/v1/nodes/{check_id(node_id)}", api.Node, options=options)
