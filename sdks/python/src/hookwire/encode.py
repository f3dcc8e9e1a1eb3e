"""An AgentContext (§4 JSON) encoded as the request of its point: the
inverse of :mod:`hookwire.context`, what a host on the wire sends. The
agent-hooks bridge uses it to call a hookwire service from a host on the
official ``agent_hooks`` SDK.

Typed members go to their typed fields; members §4 does not name go to
the ``additional`` map of their object; ``target`` is not sent (the
service rebuilds it). A context that cannot be encoded exactly (a
required member missing or mistyped, a value that is not exact JSON) is
an :class:`~hookwire.context.InvalidContext`.
"""

from __future__ import annotations

from typing import Any, Mapping

from . import jsonx
from .context import InvalidContext
from .points import POINTS
from .v1 import interceptor_pb2 as pb

_REQUESTS = {
    "agent_startup": pb.AgentStartupRequest,
    "input": pb.InputRequest,
    "pre_model_call": pb.PreModelCallRequest,
    "post_model_call": pb.PostModelCallRequest,
    "pre_tool_call": pb.PreToolCallRequest,
    "post_tool_call": pb.PostToolCallRequest,
    "output": pb.OutputRequest,
    "agent_shutdown": pb.AgentShutdownRequest,
}
# The point's own members: whole JSON values in the request itself.
_WHOLE = {"agent_startup": "agent_init", "input": "input", "output": "output", "agent_shutdown": "summary"}
_ENVELOPE = {"spec", "interception_point", "target", "timestamp", "sequence", "agent", "session"}
_OPTIONAL = {"messages", "trace", "tenant", "actor", "budgets", "extensions"}


def _set_json(jv: Any, member: str, value: Any) -> None:
    try:
        jv.json = jsonx.dumps(value)
    except jsonx.InvalidJson as e:
        raise InvalidContext("%s: %s" % (member, e)) from None


def _obj(ctx: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = ctx.get(key)
    if not isinstance(value, dict):
        raise InvalidContext("%s: an object" % key)
    return value


def _str(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise InvalidContext("%s.%s: a string" % (where, key))
    return value


def _open(msg: Any, obj: Mapping[str, Any], where: str, strings: tuple[str, ...],
          json_fields: tuple[str, ...] = (), ints: tuple[str, ...] = ()) -> None:
    """Fills an open object's typed fields and puts the rest in ``additional``."""
    for k, v in obj.items():
        if k in strings:
            if v is not None:
                if not isinstance(v, str):
                    raise InvalidContext("%s.%s: a string" % (where, k))
                setattr(msg, k, v)
        elif k in json_fields:
            _set_json(getattr(msg, k), "%s.%s" % (where, k), v)
        elif k in ints:
            if type(v) is not int or v < 0 or v > jsonx.MAX_INT:
                raise InvalidContext("%s.%s: an integer >= 0" % (where, k))
            setattr(msg, k, v)
        else:
            _set_json(msg.additional[k], "%s.%s" % (where, k), v)


def request_from_context(ctx: Mapping[str, Any]) -> tuple[str, Any]:
    """The point and the request message for one context."""
    point = ctx.get("interception_point")
    if point not in POINTS:
        raise InvalidContext("interception_point: one of the eight points")
    req = _REQUESTS[point]()
    seq = ctx.get("sequence")
    if type(seq) is not int or not 0 <= seq <= jsonx.MAX_INT:
        raise InvalidContext("sequence: an integer >= 0")
    req.core.spec = _str(ctx, "spec", "context")
    req.core.timestamp = _str(ctx, "timestamp", "context")
    req.core.sequence = seq
    agent, session = _obj(ctx, "agent"), _obj(ctx, "session")
    req.core.agent.id = _str(agent, "id", "agent")
    req.core.agent.framework = _str(agent, "framework", "agent")
    _open(req.core.agent, {k: v for k, v in agent.items() if k not in ("id", "framework")}, "agent", ("name", "version"))
    req.core.session.id = _str(session, "id", "session")
    _open(req.core.session, {k: v for k, v in session.items() if k != "id"}, "session", ("started_at",), ints=("turn",))
    used = set(_ENVELOPE)
    if point in _WHOLE:
        member = _WHOLE[point]
        if member in ctx:
            _set_json(getattr(req, member), member, ctx[member])
        used.add(member)
    elif point in ("pre_model_call", "post_model_call"):
        model = _obj(ctx, "model")
        req.model.id = _str(model, "id", "model")
        _open(req.model, {k: v for k, v in model.items() if k != "id"}, "model", ("vendor",), ("params",))
        own = "messages" if point == "pre_model_call" else "response"
        if own in ctx:
            _set_json(getattr(req, own), own, ctx[own])
        if ctx.get("request_id") is not None:
            req.model_call.request_id = _str(ctx, "request_id", "context")
        for k in ("tools", "usage"):
            if k in ctx:
                _set_json(getattr(req.model_call, k), k, ctx[k])
        used |= {"model", own, "request_id", "tools", "usage"}
    else:
        call = _obj(ctx, "tool_call")
        req.tool_call.id = _str(call, "id", "tool_call")
        req.tool_call.name = _str(call, "name", "tool_call")
        if "args" in call:
            _set_json(req.tool_call.args, "tool_call.args", call["args"])
        if call.get("content_hash") is not None:
            req.tool_call.content_hash = _str(call, "content_hash", "tool_call")
        used.add("tool_call")
        if point == "post_tool_call":
            result = _obj(ctx, "tool_result")
            if "value" in result:
                _set_json(req.tool_result.value, "tool_result.value", result["value"])
            if not isinstance(result.get("is_error", False), bool):
                raise InvalidContext("tool_result.is_error: a boolean")
            req.tool_result.is_error = bool(result.get("is_error", False))
            if "duration_ms" in result:
                _set_json(req.tool_result.duration_ms, "tool_result.duration_ms", result["duration_ms"])
            for k, v in result.items():
                if k not in ("value", "is_error", "duration_ms"):
                    _set_json(req.tool_result.additional[k], "tool_result." + k, v)
            used.add("tool_result")
    _optional(req, point, ctx, used)
    return point, req


def _optional(req: Any, point: str, ctx: Mapping[str, Any], used: set[str]) -> None:
    o = req.optional
    touched = False
    if "messages" in ctx and point != "pre_model_call":
        _set_json(o.messages, "messages", ctx["messages"])
        touched = True
    for name, fields in (("trace", ("trace_id", "span_id")), ("tenant", ("id", "name")), ("actor", ("id", "kind"))):
        if name in ctx:
            _open(getattr(o, name), _obj(ctx, name), name, fields)
            touched = True
    if "budgets" in ctx:
        _set_json(o.budgets, "budgets", ctx["budgets"])
        touched = True
    if "extensions" in ctx:
        ext = _obj(ctx, "extensions")
        if not ext:
            # An empty map has no presence of its own: `{}` travels in additional.
            o.additional["extensions"].json = "{}"
        for k, v in ext.items():
            _set_json(o.extensions[k], "extensions." + k, v)
        touched = True
    for k, v in ctx.items():
        if k not in used and k not in _OPTIONAL:
            _set_json(o.additional[k], k, v)
            touched = True
    if not touched:
        req.ClearField("optional")
