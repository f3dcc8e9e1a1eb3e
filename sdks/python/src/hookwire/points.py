"""The eight interception points (AGENT-HOOKS-0.1 §3): their names, the
gRPC method and ``MultiplexRequest`` body of each, and where each point's
target lives in the context (§4.2, §4.3)."""

from __future__ import annotations

#: The spec version a service implements.
SPEC = "agent-hooks/0.1"

#: The eight points, in emission order.
POINTS = (
    "agent_startup",
    "input",
    "pre_model_call",
    "post_model_call",
    "pre_tool_call",
    "post_tool_call",
    "output",
    "agent_shutdown",
)

#: The unary gRPC method of each point.
RPC = {
    "agent_startup": "AgentStartup",
    "input": "Input",
    "pre_model_call": "PreModelCall",
    "post_model_call": "PostModelCall",
    "pre_tool_call": "PreToolCall",
    "post_tool_call": "PostToolCall",
    "output": "Output",
    "agent_shutdown": "AgentShutdown",
}

#: The path of each point's target inside the context.
TARGET_LOCATION = {
    "agent_startup": ("agent_init",),
    "input": ("input",),
    "pre_model_call": ("messages",),
    "post_model_call": ("response",),
    "pre_tool_call": ("tool_call", "args"),
    "post_tool_call": ("tool_result", "value"),
    "output": ("output",),
    "agent_shutdown": ("summary",),
}

#: Points where a transform is forbidden (§4.3).
NO_TRANSFORM = frozenset({"agent_startup", "agent_shutdown"})
