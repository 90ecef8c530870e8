"""The runtime's wire format: pydantic models for every ``/v1`` request and response.

Shared by the daemon (``heron.runtime``) and the client; imports nothing else from Heron.
"""

from ._common import (
    ID_PATTERN,
    ErrorBody,
    ErrorResponse,
    NodeId,
    RequestModel,
    WireModel,
    is_valid_id,
)
from ._jobs import Job, JobStatus
from ._nodes import (
    CloseRequest,
    Declined,
    DeclineRequest,
    MessageAccepted,
    MessageRequest,
    Node,
    NodeConfigPatch,
    NodeCreateRequest,
    NodeFailure,
    NodeMode,
    NodeOutcome,
    NodeResult,
    NodeStatus,
    OutcomeDetail,
    OutcomePoll,
    OutcomeReason,
    ResultAccepted,
    ResultSubmission,
    RootLifecycle,
)
from ._reports import Report, ReportTier
from ._system import Health, Listener, SystemStatus
from ._worktrees import NodeWorktree, WorktreeState

__all__ = [
    "ID_PATTERN",
    "CloseRequest",
    "DeclineRequest",
    "Declined",
    "ErrorBody",
    "ErrorResponse",
    "Health",
    "Job",
    "JobStatus",
    "Listener",
    "MessageAccepted",
    "MessageRequest",
    "Node",
    "NodeConfigPatch",
    "NodeCreateRequest",
    "NodeFailure",
    "NodeId",
    "NodeMode",
    "NodeOutcome",
    "NodeResult",
    "NodeStatus",
    "NodeWorktree",
    "OutcomeDetail",
    "OutcomePoll",
    "OutcomeReason",
    "Report",
    "ReportTier",
    "RequestModel",
    "ResultAccepted",
    "ResultSubmission",
    "RootLifecycle",
    "SystemStatus",
    "WireModel",
    "WorktreeState",
    "is_valid_id",
]
