from hookwire.v1 import interceptor_pb2 as _interceptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApprovalOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_OUTCOME_UNSPECIFIED: _ClassVar[ApprovalOutcome]
    APPROVAL_OUTCOME_APPROVE: _ClassVar[ApprovalOutcome]
    APPROVAL_OUTCOME_REJECT: _ClassVar[ApprovalOutcome]
    APPROVAL_OUTCOME_UNRESOLVED: _ClassVar[ApprovalOutcome]

class CloseReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLOSE_REASON_UNSPECIFIED: _ClassVar[CloseReason]
    CLOSE_REASON_EXPIRED: _ClassVar[CloseReason]
    CLOSE_REASON_CANCELLED: _ClassVar[CloseReason]
    CLOSE_REASON_HOST_GONE: _ClassVar[CloseReason]
    CLOSE_REASON_FAILED: _ClassVar[CloseReason]

class DecisionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_STATUS_UNSPECIFIED: _ClassVar[DecisionStatus]
    DECISION_STATUS_ACCEPTED: _ClassVar[DecisionStatus]
    DECISION_STATUS_UNKNOWN_REQUEST: _ClassVar[DecisionStatus]
    DECISION_STATUS_ALREADY_RESOLVED: _ClassVar[DecisionStatus]
    DECISION_STATUS_EXPIRED: _ClassVar[DecisionStatus]
    DECISION_STATUS_WITHDRAWN: _ClassVar[DecisionStatus]
APPROVAL_OUTCOME_UNSPECIFIED: ApprovalOutcome
APPROVAL_OUTCOME_APPROVE: ApprovalOutcome
APPROVAL_OUTCOME_REJECT: ApprovalOutcome
APPROVAL_OUTCOME_UNRESOLVED: ApprovalOutcome
CLOSE_REASON_UNSPECIFIED: CloseReason
CLOSE_REASON_EXPIRED: CloseReason
CLOSE_REASON_CANCELLED: CloseReason
CLOSE_REASON_HOST_GONE: CloseReason
CLOSE_REASON_FAILED: CloseReason
DECISION_STATUS_UNSPECIFIED: DecisionStatus
DECISION_STATUS_ACCEPTED: DecisionStatus
DECISION_STATUS_UNKNOWN_REQUEST: DecisionStatus
DECISION_STATUS_ALREADY_RESOLVED: DecisionStatus
DECISION_STATUS_EXPIRED: DecisionStatus
DECISION_STATUS_WITHDRAWN: DecisionStatus

class ApprovalRequest(_message.Message):
    __slots__ = ("request_id", "context_identity", "interception_point", "verdict", "context", "deadline_ms", "trace_context")
    class TraceContextEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    INTERCEPTION_POINT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    context_identity: str
    interception_point: _interceptor_pb2.InterceptionPoint
    verdict: _interceptor_pb2.Verdict
    context: _interceptor_pb2.JsonValue
    deadline_ms: int
    trace_context: _containers.ScalarMap[str, str]
    def __init__(self, request_id: _Optional[str] = ..., context_identity: _Optional[str] = ..., interception_point: _Optional[_Union[_interceptor_pb2.InterceptionPoint, str]] = ..., verdict: _Optional[_Union[_interceptor_pb2.Verdict, _Mapping]] = ..., context: _Optional[_Union[_interceptor_pb2.JsonValue, _Mapping]] = ..., deadline_ms: _Optional[int] = ..., trace_context: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ApprovalResolution(_message.Message):
    __slots__ = ("request_id", "outcome", "context_identity", "verdict", "approver")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    outcome: ApprovalOutcome
    context_identity: str
    verdict: _interceptor_pb2.Verdict
    approver: str
    def __init__(self, request_id: _Optional[str] = ..., outcome: _Optional[_Union[ApprovalOutcome, str]] = ..., context_identity: _Optional[str] = ..., verdict: _Optional[_Union[_interceptor_pb2.Verdict, _Mapping]] = ..., approver: _Optional[str] = ...) -> None: ...

class HostMessage(_message.Message):
    __slots__ = ("hello", "request", "cancel", "heartbeat")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    hello: HostHello
    request: ApprovalRequest
    cancel: Cancel
    heartbeat: Heartbeat
    def __init__(self, hello: _Optional[_Union[HostHello, _Mapping]] = ..., request: _Optional[_Union[ApprovalRequest, _Mapping]] = ..., cancel: _Optional[_Union[Cancel, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class HostHello(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class Cancel(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class ServiceMessage(_message.Message):
    __slots__ = ("ready", "resolution", "seen", "failed", "heartbeat")
    READY_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    SEEN_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ready: ServiceReady
    resolution: ApprovalResolution
    seen: Seen
    failed: RequestFailed
    heartbeat: Heartbeat
    def __init__(self, ready: _Optional[_Union[ServiceReady, _Mapping]] = ..., resolution: _Optional[_Union[ApprovalResolution, _Mapping]] = ..., seen: _Optional[_Union[Seen, _Mapping]] = ..., failed: _Optional[_Union[RequestFailed, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class ServiceReady(_message.Message):
    __slots__ = ("service", "heartbeat_interval_ms")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    service: str
    heartbeat_interval_ms: int
    def __init__(self, service: _Optional[str] = ..., heartbeat_interval_ms: _Optional[int] = ...) -> None: ...

class Seen(_message.Message):
    __slots__ = ("request_id", "approver")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    approver: str
    def __init__(self, request_id: _Optional[str] = ..., approver: _Optional[str] = ...) -> None: ...

class RequestFailed(_message.Message):
    __slots__ = ("request_id", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    reason: str
    def __init__(self, request_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ApproverMessage(_message.Message):
    __slots__ = ("hello", "seen", "decide", "heartbeat")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    SEEN_FIELD_NUMBER: _ClassVar[int]
    DECIDE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    hello: ApproverHello
    seen: Seen
    decide: ApprovalResolution
    heartbeat: Heartbeat
    def __init__(self, hello: _Optional[_Union[ApproverHello, _Mapping]] = ..., seen: _Optional[_Union[Seen, _Mapping]] = ..., decide: _Optional[_Union[ApprovalResolution, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class ApproverHello(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ("pending", "added", "seen", "resolved", "closed", "ack", "heartbeat", "ready")
    PENDING_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    SEEN_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    pending: PendingSet
    added: PendingApproval
    seen: Seen
    resolved: Resolved
    closed: Closed
    ack: DecisionAck
    heartbeat: Heartbeat
    ready: ServiceReady
    def __init__(self, pending: _Optional[_Union[PendingSet, _Mapping]] = ..., added: _Optional[_Union[PendingApproval, _Mapping]] = ..., seen: _Optional[_Union[Seen, _Mapping]] = ..., resolved: _Optional[_Union[Resolved, _Mapping]] = ..., closed: _Optional[_Union[Closed, _Mapping]] = ..., ack: _Optional[_Union[DecisionAck, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., ready: _Optional[_Union[ServiceReady, _Mapping]] = ...) -> None: ...

class PendingApproval(_message.Message):
    __slots__ = ("request", "host", "seen_by")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    SEEN_BY_FIELD_NUMBER: _ClassVar[int]
    request: ApprovalRequest
    host: str
    seen_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request: _Optional[_Union[ApprovalRequest, _Mapping]] = ..., host: _Optional[str] = ..., seen_by: _Optional[_Iterable[str]] = ...) -> None: ...

class PendingSet(_message.Message):
    __slots__ = ("requests",)
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[PendingApproval]
    def __init__(self, requests: _Optional[_Iterable[_Union[PendingApproval, _Mapping]]] = ...) -> None: ...

class Resolved(_message.Message):
    __slots__ = ("request_id", "approver", "outcome")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    approver: str
    outcome: ApprovalOutcome
    def __init__(self, request_id: _Optional[str] = ..., approver: _Optional[str] = ..., outcome: _Optional[_Union[ApprovalOutcome, str]] = ...) -> None: ...

class Closed(_message.Message):
    __slots__ = ("request_id", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    reason: CloseReason
    def __init__(self, request_id: _Optional[str] = ..., reason: _Optional[_Union[CloseReason, str]] = ...) -> None: ...

class DecisionAck(_message.Message):
    __slots__ = ("request_id", "status")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    status: DecisionStatus
    def __init__(self, request_id: _Optional[str] = ..., status: _Optional[_Union[DecisionStatus, str]] = ...) -> None: ...

class DecideRequest(_message.Message):
    __slots__ = ("approver", "resolution")
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    approver: str
    resolution: ApprovalResolution
    def __init__(self, approver: _Optional[str] = ..., resolution: _Optional[_Union[ApprovalResolution, _Mapping]] = ...) -> None: ...

class DecideResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: DecisionStatus
    def __init__(self, status: _Optional[_Union[DecisionStatus, str]] = ...) -> None: ...
