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
from ._orchestration import (
    DeliveryAction,
    OutcomeDelivery,
    WaitRequest,
    WaitStatus,
    YieldRequest,
)
from ._reports import Report, ReportTier
from ._system import Health, Listener, SystemStatus

__all__ = [
    "ID_PATTERN",
    "CloseRequest",
    "DeclineRequest",
    "Declined",
    "DeliveryAction",
    "ErrorBody",
    "ErrorResponse",
    "Health",
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
    "OutcomeDelivery",
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
    "WaitRequest",
    "WaitStatus",
    "WireModel",
    "YieldRequest",
    "is_valid_id",
]
