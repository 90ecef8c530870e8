"""The kernel: nodes and their runs (engine, workflow, durable steps, rows, node tools)."""

import typing

from ..._core.lazy import attach as _attach

if typing.TYPE_CHECKING:
    from ._durable import call_key
    from ._engine import Engine
    from ._feature import (
        CommandSandbox,
        Feature,
        FeatureFactory,
        Kernel,
        ModelSource,
        RunSetup,
        RunTools,
        Section,
    )
    from ._routes import add_node_routes
    from ._rows import maybe_when, new_row, to_node, when
    from ._runs import DETERMINISTIC, SETTLED, Stop
    from ._store import NodeStore, locked_status, queue_in, settle_idle
    from ._tools import (
        KIND_FIXED_TOOLS,
        MEMORY_READ_TOOLS,
        MEMORY_WRITE_TOOLS,
        SCHEDULE_TOOLS,
        NodeTools,
        narrowed_scopes,
        workspace_files,
    )
    from ._types import (
        INHERITED,
        LAUNCH_FIELDS,
        NodeExtra,
        NodeRow,
        Outcome,
        RunPlan,
        WorktreeRecord,
        as_outcome,
        copy_fields,
        fields_of,
    )

if not typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all
    __getattr__, __dir__ = _attach(
        __name__,
        {
            "._durable": ("call_key",),
            "._engine": ("Engine",),
            "._feature": (
                "CommandSandbox",
                "Feature",
                "FeatureFactory",
                "Kernel",
                "ModelSource",
                "RunSetup",
                "RunTools",
                "Section",
            ),
            "._routes": ("add_node_routes",),
            "._rows": ("maybe_when", "new_row", "to_node", "when"),
            "._runs": ("DETERMINISTIC", "SETTLED", "Stop"),
            "._store": ("NodeStore", "locked_status", "queue_in", "settle_idle"),
            "._tools": (
                "KIND_FIXED_TOOLS",
                "MEMORY_READ_TOOLS",
                "MEMORY_WRITE_TOOLS",
                "NodeTools",
                "SCHEDULE_TOOLS",
                "narrowed_scopes",
                "workspace_files",
            ),
            "._types": (
                "INHERITED",
                "LAUNCH_FIELDS",
                "NodeExtra",
                "NodeRow",
                "Outcome",
                "RunPlan",
                "WorktreeRecord",
                "as_outcome",
                "copy_fields",
                "fields_of",
            ),
        },
    )

__all__ = [
    "DETERMINISTIC",
    "INHERITED",
    "KIND_FIXED_TOOLS",
    "LAUNCH_FIELDS",
    "MEMORY_READ_TOOLS",
    "MEMORY_WRITE_TOOLS",
    "SCHEDULE_TOOLS",
    "SETTLED",
    "CommandSandbox",
    "Engine",
    "Feature",
    "FeatureFactory",
    "Kernel",
    "ModelSource",
    "NodeExtra",
    "NodeRow",
    "NodeStore",
    "NodeTools",
    "Outcome",
    "RunPlan",
    "RunSetup",
    "RunTools",
    "Section",
    "Stop",
    "WorktreeRecord",
    "add_node_routes",
    "as_outcome",
    "call_key",
    "copy_fields",
    "fields_of",
    "locked_status",
    "maybe_when",
    "narrowed_scopes",
    "new_row",
    "queue_in",
    "settle_idle",
    "to_node",
    "when",
    "workspace_files",
]
