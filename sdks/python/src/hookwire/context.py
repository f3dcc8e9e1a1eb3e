"""The request of one point turned into the spec-shaped AgentContext
(AGENT-HOOKS-0.1 §4): the mirror of the Rust host's ``src/wire/context.rs``.

Every ``JsonValue`` is parsed exactly (:mod:`hookwire.jsonx`); a member
carried in the wrong field, a missing required member or JSON the host
would refuse is an :class:`InvalidContext`, which the server answers
``INVALID_ARGUMENT`` naming the member, never its value. The result is a
:class:`Context`: a ``dict`` (the §4 JSON, ``target`` included, rebuilt
from the point's target field) with typed accessors.
"""

from __future__ import annotations

from typing import Any, Optional

from .jsonx import InvalidJson, loads
from .points import TARGET_LOCATION


class Context(dict):  # type: ignore[type-arg]
    """An AgentContext (§4): the spec JSON as a ``dict``, with typed
    accessors for what policies read most."""

    @property
    def point(self) -> str:
        """The interception point, e.g. ``"pre_tool_call"``."""
        return str(self["interception_point"])

    @property
    def target(self) -> Any:
        """The point's target (§4.3), the value a transform rewrites."""
        return self.get("target")

    @property
    def session_id(self) -> str:
        """``session.id``."""
        return str(self["session"]["id"])

    @property
    def agent_id(self) -> str:
        """``agent.id``."""
        return str(self["agent"]["id"])

    @property
    def sequence(self) -> int:
        """``sequence``: strictly increasing within the session."""
        return int(self["sequence"])

    @property
    def tool_name(self) -> Optional[str]:
        """``tool_call.name`` at the tool points, else None."""
        call = self.get("tool_call")
        return call.get("name") if isinstance(call, dict) else None

    @property
    def tool_args(self) -> Any:
        """``tool_call.args`` at the tool points, else None."""
        call = self.get("tool_call")
        return call.get("args") if isinstance(call, dict) else None

    @property
    def extensions(self) -> dict[str, Any]:
        """``extensions`` (§4.6), empty when absent."""
        ext = self.get("extensions")
        return ext if isinstance(ext, dict) else {}


class InvalidContext(ValueError):
    """A request that does not carry a well-formed context."""


_AGENT_FIELDS = ("id", "framework", "name", "version")
_SESSION_FIELDS = ("id", "started_at", "turn")
_TRACE_FIELDS = ("trace_id", "span_id")
_TENANT_FIELDS = ("id", "name")
_ACTOR_FIELDS = ("id", "kind")
_MODEL_FIELDS = ("id", "vendor", "params")
_TOOL_RESULT_FIELDS = ("value", "is_error", "duration_ms")
_COMMON_MEMBERS = (
    "spec",
    "interception_point",
    "target",
    "timestamp",
    "sequence",
    "agent",
    "session",
    "messages",
    "trace",
    "tenant",
    "actor",
    "budgets",
    "extensions",
)
_POINT_MEMBERS = {
    "agent_startup": ("agent_init",),
    "input": ("input",),
    "pre_model_call": ("model", "request_id", "tools", "usage"),
    "post_model_call": ("model", "response", "request_id", "tools", "usage"),
    "pre_tool_call": ("tool_call",),
    "post_tool_call": ("tool_call", "tool_result"),
    "output": ("output",),
    "agent_shutdown": ("summary",),
}


def _json(member, jv):
    try:
        return loads(jv.json)
    except InvalidJson as e:
        raise InvalidContext("%s: %s" % (member, e)) from None


def _has(msg, field):
    return msg.HasField(field)


def _additional(parent, entries, typed):
    """The members of an open object that travel in its ``additional`` map;
    an entry shadowing a typed field is refused, as the host does."""
    obj = {}
    for k, jv in entries.items():
        if k in typed:
            raise InvalidContext("%s.%s: carried in its typed field" % (parent, k))
        obj[k] = _json(parent, jv)
    return obj


def _opt_str(obj, msg, field):
    if _has(msg, field):
        obj[field] = getattr(msg, field)


def _put_json(obj, key, msg, field=None):
    field = field or key
    if _has(msg, field):
        obj[key] = _json(key, getattr(msg, field))


def _core(ctx, req):
    if not _has(req, "core"):
        raise InvalidContext("core: present")
    core = req.core
    ctx["spec"] = core.spec
    ctx["timestamp"] = core.timestamp
    ctx["sequence"] = core.sequence
    if not _has(core, "agent"):
        raise InvalidContext("agent: present")
    agent = _additional("agent", core.agent.additional, _AGENT_FIELDS)
    agent["id"] = core.agent.id
    agent["framework"] = core.agent.framework
    _opt_str(agent, core.agent, "name")
    _opt_str(agent, core.agent, "version")
    ctx["agent"] = agent
    if not _has(core, "session"):
        raise InvalidContext("session: present")
    session = _additional("session", core.session.additional, _SESSION_FIELDS)
    session["id"] = core.session.id
    _opt_str(session, core.session, "started_at")
    if _has(core.session, "turn"):
        session["turn"] = core.session.turn
    ctx["session"] = session


def _model(ctx, req):
    if not _has(req, "model"):
        raise InvalidContext("model: present")
    m = req.model
    model = _additional("model", m.additional, _MODEL_FIELDS)
    model["id"] = m.id
    _opt_str(model, m, "vendor")
    _put_json(model, "params", m)
    ctx["model"] = model


def _model_call(ctx, req):
    if _has(req, "model_call"):
        mc = req.model_call
        _opt_str(ctx, mc, "request_id")
        _put_json(ctx, "tools", mc)
        _put_json(ctx, "usage", mc)


def _tool_call(ctx, req):
    if not _has(req, "tool_call"):
        raise InvalidContext("tool_call: present")
    c = req.tool_call
    call = {"id": c.id, "name": c.name}
    _put_json(call, "args", c)
    _opt_str(call, c, "content_hash")
    ctx["tool_call"] = call


def _tool_result(ctx, req):
    if not _has(req, "tool_result"):
        raise InvalidContext("tool_result: present")
    r = req.tool_result
    result = _additional("tool_result", r.additional, _TOOL_RESULT_FIELDS)
    _put_json(result, "value", r)
    result["is_error"] = r.is_error
    _put_json(result, "duration_ms", r)
    ctx["tool_result"] = result


def _open(name, msg, fields):
    obj = _additional(name, msg.additional, fields)
    for f in fields:
        _opt_str(obj, msg, f)
    return obj


def _optional(ctx, point, req):
    if not _has(req, "optional"):
        return
    o = req.optional
    if _has(o, "messages"):
        if point == "pre_model_call":
            raise InvalidContext("messages: carried in PreModelCallRequest.messages")
        ctx["messages"] = _json("messages", o.messages)
    if _has(o, "trace"):
        ctx["trace"] = _open("trace", o.trace, _TRACE_FIELDS)
    if _has(o, "tenant"):
        ctx["tenant"] = _open("tenant", o.tenant, _TENANT_FIELDS)
    if _has(o, "actor"):
        ctx["actor"] = _open("actor", o.actor, _ACTOR_FIELDS)
    _put_json(ctx, "budgets", o)
    if len(o.extensions):
        ctx["extensions"] = _additional("extensions", o.extensions, ())
    typed = _COMMON_MEMBERS + _POINT_MEMBERS[point]
    for k, jv in o.additional.items():
        # An empty `extensions` object has no presence of its own in a map
        # field: it travels here, and only as `{}`.
        empty_extensions = k == "extensions" and "extensions" not in ctx
        if k in typed and not empty_extensions:
            raise InvalidContext("%s: carried in its typed field" % k)
        v = _json(k, jv)
        if empty_extensions and v != {}:
            raise InvalidContext("extensions: only an empty object travels in additional")
        ctx[k] = v


def context_from_request(point: str, req: Any) -> Context:
    """The spec-shaped AgentContext (§4) of one request, as a dict with
    ``target`` rebuilt from the point's target field (same object, §4.3)."""
    ctx = Context(interception_point=point)
    _core(ctx, req)
    if point == "agent_startup":
        _put_json(ctx, "agent_init", req)
    elif point == "input":
        _put_json(ctx, "input", req)
    elif point in ("pre_model_call", "post_model_call"):
        _model(ctx, req)
        _put_json(ctx, "messages" if point == "pre_model_call" else "response", req)
        _model_call(ctx, req)
    elif point in ("pre_tool_call", "post_tool_call"):
        _tool_call(ctx, req)
        if point == "post_tool_call":
            _tool_result(ctx, req)
    elif point == "output":
        _put_json(ctx, "output", req)
    elif point == "agent_shutdown":
        _put_json(ctx, "summary", req)
    _optional(ctx, point, req)
    target = ctx
    for key in TARGET_LOCATION[point]:
        if not isinstance(target, dict) or key not in target:
            return ctx  # no target field: the host never sends such a context
        target = target[key]
    ctx["target"] = target
    return ctx
