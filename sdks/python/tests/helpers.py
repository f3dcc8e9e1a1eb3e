"""What the tests share: a real server on 127.0.0.1:0 for a policy, a
real grpc.aio client channel to it, and requests built as a host sends
them."""

from __future__ import annotations

import contextlib
import json
from typing import Any, AsyncIterator

import grpc

import hookwire
from hookwire.v1 import interceptor_pb2 as pb
from hookwire.v1 import interceptor_pb2_grpc as pb_grpc

#: The bound every wait in the tests gets: generous, never a sync point.
WAIT = 10.0


def core(session: str = "s1", sequence: int = 3) -> Any:
    """A well-formed ContextCore."""
    return pb.ContextCore(
        spec="agent-hooks/0.1",
        timestamp="2026-01-01T00:00:00Z",
        sequence=sequence,
        agent=pb.Agent(id="agent-1", framework="test"),
        session=pb.Session(id=session),
    )


def pre_tool_call(name: str, args: Any = None, raw_args: str | None = None, session: str = "s1") -> Any:
    """A PreToolCallRequest for tool ``name``; ``raw_args`` sends that JSON text verbatim."""
    text = raw_args if raw_args is not None else json.dumps({} if args is None else args)
    return pb.PreToolCallRequest(
        core=core(session),
        tool_call=pb.ToolCall(id="c1", name=name, args=pb.JsonValue(json=text)),
    )


def agent_startup() -> Any:
    """An AgentStartupRequest."""
    return pb.AgentStartupRequest(core=core(sequence=0), agent_init=pb.JsonValue(json='{"tools_registered":[]}'))


def verdict_json(response: Any) -> dict[str, Any]:
    """The decision, reason and transform of an InterceptorResponse, as a dict."""
    v = response.verdict
    out: dict[str, Any] = {"decision": pb.Decision.Name(v.decision)}
    if v.HasField("reason"):
        out["reason"] = v.reason
    if v.HasField("transform"):
        out["transform"] = {"path": v.transform.path, "value": hookwire.jsonx.loads(v.transform.value.json)}
    if v.HasField("approval"):
        out["approval"] = hookwire.jsonx.loads(v.approval.json)
    return out


@contextlib.asynccontextmanager
async def serving(policy: hookwire.Interceptor, **kw: Any) -> AsyncIterator[tuple[hookwire.Server, Any]]:
    """Serves ``policy`` on 127.0.0.1:0 and yields (server, stub)."""
    server = hookwire.Server(policy, "127.0.0.1", 0, **kw)
    port = await server.start()
    channel = grpc.aio.insecure_channel("127.0.0.1:%d" % port)
    try:
        yield server, pb_grpc.InterceptorStub(channel)
    finally:
        await channel.close()
        await server.stop(grace=1.0)
