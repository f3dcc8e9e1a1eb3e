"""The context encoder is the decoder's inverse: a context survives the
round trip through the wire exactly."""

import pytest

from hookwire.context import InvalidContext, context_from_request
from hookwire.encode import request_from_context

BASE = {
    "spec": "agent-hooks/0.1",
    "timestamp": "2026-01-01T00:00:00Z",
    "sequence": 4,
    "agent": {"id": "a", "framework": "test", "name": "n", "team": "x"},
    "session": {"id": "s", "turn": 2, "tag": [1]},
    "trace": {"trace_id": "ab"},
    "budgets": {"token_count": 3.0},
    "extensions": {"acme": {"k": 18446744073709551615}},
}


@pytest.mark.parametrize(
    "point,members",
    [
        ("agent_startup", {"agent_init": {"tools_registered": ["bash"]}}),
        ("input", {"input": {"content": "hi", "role": "user"}}),
        ("pre_model_call", {"model": {"id": "m", "params": {"t": 1}}, "messages": [{"role": "user", "content": "x"}], "request_id": "r"}),
        ("post_model_call", {"model": {"id": "m"}, "response": {"content": "y", "tool_calls": []}, "usage": {"prompt_tokens": 1}, "messages": []}),
        ("pre_tool_call", {"tool_call": {"id": "c", "name": "bash", "args": {"cmd": "ls"}}}),
        ("post_tool_call", {"tool_call": {"id": "c", "name": "bash", "args": {}}, "tool_result": {"value": "out", "is_error": False, "duration_ms": 3}}),
        ("output", {"output": {"content": "bye"}}),
        ("agent_shutdown", {"summary": {"reason": "completed"}, "extensions": {}}),
    ],
)
def test_round_trip(point, members):
    ctx = dict(BASE, interception_point=point, **members)
    got_point, req = request_from_context(ctx)
    assert got_point == point
    back = context_from_request(point, req)
    target = back.pop("target")
    assert back == ctx
    assert target is not None


def test_unencodable_contexts_are_refused():
    ctx = dict(BASE, interception_point="output", output={"content": float("nan")})
    with pytest.raises(InvalidContext):
        request_from_context(ctx)
    with pytest.raises(InvalidContext):
        request_from_context(dict(BASE, interception_point="nowhere"))
    with pytest.raises(InvalidContext):
        request_from_context(dict(BASE, interception_point="output", sequence=-1))
