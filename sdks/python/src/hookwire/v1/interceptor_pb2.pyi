from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InterceptionPoint(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INTERCEPTION_POINT_UNSPECIFIED: _ClassVar[InterceptionPoint]
    AGENT_STARTUP: _ClassVar[InterceptionPoint]
    INPUT: _ClassVar[InterceptionPoint]
    PRE_MODEL_CALL: _ClassVar[InterceptionPoint]
    POST_MODEL_CALL: _ClassVar[InterceptionPoint]
    PRE_TOOL_CALL: _ClassVar[InterceptionPoint]
    POST_TOOL_CALL: _ClassVar[InterceptionPoint]
    OUTPUT: _ClassVar[InterceptionPoint]
    AGENT_SHUTDOWN: _ClassVar[InterceptionPoint]

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_UNSPECIFIED: _ClassVar[Decision]
    ALLOW: _ClassVar[Decision]
    DENY: _ClassVar[Decision]
    TRANSFORM: _ClassVar[Decision]
INTERCEPTION_POINT_UNSPECIFIED: InterceptionPoint
AGENT_STARTUP: InterceptionPoint
INPUT: InterceptionPoint
PRE_MODEL_CALL: InterceptionPoint
POST_MODEL_CALL: InterceptionPoint
PRE_TOOL_CALL: InterceptionPoint
POST_TOOL_CALL: InterceptionPoint
OUTPUT: InterceptionPoint
AGENT_SHUTDOWN: InterceptionPoint
DECISION_UNSPECIFIED: Decision
ALLOW: Decision
DENY: Decision
TRANSFORM: Decision

class JsonValue(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class ContextCore(_message.Message):
    __slots__ = ("spec", "timestamp", "sequence", "agent", "session")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    spec: str
    timestamp: str
    sequence: int
    agent: Agent
    session: Session
    def __init__(self, spec: _Optional[str] = ..., timestamp: _Optional[str] = ..., sequence: _Optional[int] = ..., agent: _Optional[_Union[Agent, _Mapping]] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class Agent(_message.Message):
    __slots__ = ("id", "framework", "name", "version", "additional")
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    framework: str
    name: str
    version: str
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, id: _Optional[str] = ..., framework: _Optional[str] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("id", "started_at", "turn", "additional")
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    started_at: str
    turn: int
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, id: _Optional[str] = ..., started_at: _Optional[str] = ..., turn: _Optional[int] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class ContextOptional(_message.Message):
    __slots__ = ("messages", "trace", "tenant", "actor", "budgets", "extensions", "additional")
    class ExtensionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    messages: JsonValue
    trace: Trace
    tenant: Tenant
    actor: Actor
    budgets: JsonValue
    extensions: _containers.MessageMap[str, JsonValue]
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, messages: _Optional[_Union[JsonValue, _Mapping]] = ..., trace: _Optional[_Union[Trace, _Mapping]] = ..., tenant: _Optional[_Union[Tenant, _Mapping]] = ..., actor: _Optional[_Union[Actor, _Mapping]] = ..., budgets: _Optional[_Union[JsonValue, _Mapping]] = ..., extensions: _Optional[_Mapping[str, JsonValue]] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class Trace(_message.Message):
    __slots__ = ("trace_id", "span_id", "additional")
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    span_id: str
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, trace_id: _Optional[str] = ..., span_id: _Optional[str] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class Tenant(_message.Message):
    __slots__ = ("id", "name", "additional")
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class Actor(_message.Message):
    __slots__ = ("id", "kind", "additional")
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ("id", "vendor", "params", "additional")
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    vendor: str
    params: JsonValue
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, id: _Optional[str] = ..., vendor: _Optional[str] = ..., params: _Optional[_Union[JsonValue, _Mapping]] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class ModelCallOptional(_message.Message):
    __slots__ = ("request_id", "tools", "usage")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tools: JsonValue
    usage: JsonValue
    def __init__(self, request_id: _Optional[str] = ..., tools: _Optional[_Union[JsonValue, _Mapping]] = ..., usage: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "args", "content_hash")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    args: JsonValue
    content_hash: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., args: _Optional[_Union[JsonValue, _Mapping]] = ..., content_hash: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("value", "is_error", "duration_ms", "additional")
    class AdditionalEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    VALUE_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    value: JsonValue
    is_error: bool
    duration_ms: JsonValue
    additional: _containers.MessageMap[str, JsonValue]
    def __init__(self, value: _Optional[_Union[JsonValue, _Mapping]] = ..., is_error: _Optional[bool] = ..., duration_ms: _Optional[_Union[JsonValue, _Mapping]] = ..., additional: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class AgentStartupRequest(_message.Message):
    __slots__ = ("core", "agent_init", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    AGENT_INIT_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    agent_init: JsonValue
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., agent_init: _Optional[_Union[JsonValue, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class InputRequest(_message.Message):
    __slots__ = ("core", "input", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    input: JsonValue
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., input: _Optional[_Union[JsonValue, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class PreModelCallRequest(_message.Message):
    __slots__ = ("core", "model", "messages", "model_call", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    model: Model
    messages: JsonValue
    model_call: ModelCallOptional
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., model: _Optional[_Union[Model, _Mapping]] = ..., messages: _Optional[_Union[JsonValue, _Mapping]] = ..., model_call: _Optional[_Union[ModelCallOptional, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class PostModelCallRequest(_message.Message):
    __slots__ = ("core", "model", "response", "model_call", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    MODEL_CALL_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    model: Model
    response: JsonValue
    model_call: ModelCallOptional
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., model: _Optional[_Union[Model, _Mapping]] = ..., response: _Optional[_Union[JsonValue, _Mapping]] = ..., model_call: _Optional[_Union[ModelCallOptional, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class PreToolCallRequest(_message.Message):
    __slots__ = ("core", "tool_call", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    tool_call: ToolCall
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class PostToolCallRequest(_message.Message):
    __slots__ = ("core", "tool_call", "tool_result", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    tool_call: ToolCall
    tool_result: ToolResult
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class OutputRequest(_message.Message):
    __slots__ = ("core", "output", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    output: JsonValue
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., output: _Optional[_Union[JsonValue, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class AgentShutdownRequest(_message.Message):
    __slots__ = ("core", "summary", "optional")
    CORE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    core: ContextCore
    summary: JsonValue
    optional: ContextOptional
    def __init__(self, core: _Optional[_Union[ContextCore, _Mapping]] = ..., summary: _Optional[_Union[JsonValue, _Mapping]] = ..., optional: _Optional[_Union[ContextOptional, _Mapping]] = ...) -> None: ...

class Warning(_message.Message):
    __slots__ = ("reason", "message")
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    reason: str
    message: str
    def __init__(self, reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class Transform(_message.Message):
    __slots__ = ("path", "value")
    PATH_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    path: str
    value: JsonValue
    def __init__(self, path: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...

class Verdict(_message.Message):
    __slots__ = ("decision", "reason", "message", "warnings", "approval", "transform", "evidence", "result_labels")
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    TRANSFORM_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    RESULT_LABELS_FIELD_NUMBER: _ClassVar[int]
    decision: Decision
    reason: str
    message: str
    warnings: _containers.RepeatedCompositeFieldContainer[Warning]
    approval: JsonValue
    transform: Transform
    evidence: JsonValue
    result_labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, decision: _Optional[_Union[Decision, str]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., warnings: _Optional[_Iterable[_Union[Warning, _Mapping]]] = ..., approval: _Optional[_Union[JsonValue, _Mapping]] = ..., transform: _Optional[_Union[Transform, _Mapping]] = ..., evidence: _Optional[_Union[JsonValue, _Mapping]] = ..., result_labels: _Optional[_Iterable[str]] = ...) -> None: ...

class InterceptorResponse(_message.Message):
    __slots__ = ("verdict", "extensions")
    class ExtensionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    verdict: Verdict
    extensions: _containers.MessageMap[str, JsonValue]
    def __init__(self, verdict: _Optional[_Union[Verdict, _Mapping]] = ..., extensions: _Optional[_Mapping[str, JsonValue]] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Manifest(_message.Message):
    __slots__ = ("name", "version", "spec", "points", "description", "extensions", "multiplex_version")
    class ExtensionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JsonValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JsonValue, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    MULTIPLEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    spec: str
    points: _containers.RepeatedScalarFieldContainer[InterceptionPoint]
    description: str
    extensions: _containers.MessageMap[str, JsonValue]
    multiplex_version: int
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., spec: _Optional[str] = ..., points: _Optional[_Iterable[_Union[InterceptionPoint, str]]] = ..., description: _Optional[str] = ..., extensions: _Optional[_Mapping[str, JsonValue]] = ..., multiplex_version: _Optional[int] = ...) -> None: ...

class MultiplexRequest(_message.Message):
    __slots__ = ("id", "timeout_ms", "trace_context", "agent_startup", "input", "pre_model_call", "post_model_call", "pre_tool_call", "post_tool_call", "output", "agent_shutdown", "cancel")
    class TraceContextEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    AGENT_STARTUP_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    PRE_MODEL_CALL_FIELD_NUMBER: _ClassVar[int]
    POST_MODEL_CALL_FIELD_NUMBER: _ClassVar[int]
    PRE_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    POST_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    AGENT_SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    id: int
    timeout_ms: int
    trace_context: _containers.ScalarMap[str, str]
    agent_startup: AgentStartupRequest
    input: InputRequest
    pre_model_call: PreModelCallRequest
    post_model_call: PostModelCallRequest
    pre_tool_call: PreToolCallRequest
    post_tool_call: PostToolCallRequest
    output: OutputRequest
    agent_shutdown: AgentShutdownRequest
    cancel: MultiplexCancel
    def __init__(self, id: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., trace_context: _Optional[_Mapping[str, str]] = ..., agent_startup: _Optional[_Union[AgentStartupRequest, _Mapping]] = ..., input: _Optional[_Union[InputRequest, _Mapping]] = ..., pre_model_call: _Optional[_Union[PreModelCallRequest, _Mapping]] = ..., post_model_call: _Optional[_Union[PostModelCallRequest, _Mapping]] = ..., pre_tool_call: _Optional[_Union[PreToolCallRequest, _Mapping]] = ..., post_tool_call: _Optional[_Union[PostToolCallRequest, _Mapping]] = ..., output: _Optional[_Union[OutputRequest, _Mapping]] = ..., agent_shutdown: _Optional[_Union[AgentShutdownRequest, _Mapping]] = ..., cancel: _Optional[_Union[MultiplexCancel, _Mapping]] = ...) -> None: ...

class MultiplexCancel(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MultiplexResponse(_message.Message):
    __slots__ = ("id", "response", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: int
    response: InterceptorResponse
    error: MultiplexError
    def __init__(self, id: _Optional[int] = ..., response: _Optional[_Union[InterceptorResponse, _Mapping]] = ..., error: _Optional[_Union[MultiplexError, _Mapping]] = ...) -> None: ...

class MultiplexError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...
