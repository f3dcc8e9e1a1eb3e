"""Plumbing for writing a hookwire interceptor service in Python with grpcio.

A service author subclasses :class:`Interceptor`, writes one method per
interception point it cares about, and calls :func:`main`. Each method
receives the spec-shaped ``AgentContext`` (AGENT-HOOKS-0.1 §4) as a plain
``dict`` -- ``target`` included, rebuilt from the point's target field -- and
returns a verdict ``dict`` (§5) built with :func:`allow`, :func:`deny`,
:func:`transform`, :func:`warn` or :func:`escalate`::

    import hookwire_py as hw

    class NoBash(hw.Interceptor):
        name = "no-bash"
        points = ["pre_tool_call"]

        def pre_tool_call(self, ctx):
            if ctx["tool_call"]["name"] == "bash":
                return hw.deny("policy:no_shell")
            return hw.allow()

    if __name__ == "__main__":
        hw.main(NoBash())

Everything else lives here: the generated stubs (made from ``proto/`` with
grpcio-tools), the proto <-> spec JSON mapping (the mirror of the Rust host's
``src/wire/context.rs`` and ``src/wire/verdict.rs``), exact JSON text, the
``Describe`` manifest, serving on ``127.0.0.1`` with a ``PORT <n>`` line on
stdout, and a graceful stop on SIGTERM.

JSON values are parsed with :func:`json.loads` (Python ints are exact, so
integers of any size survive) and written with
``json.dumps(..., ensure_ascii=False, separators=(',', ':'), allow_nan=False)``.
The parser refuses what the host refuses: NaN/Infinity and duplicate member
names.

Fail-closed: an exception in a handler, a handler that returns no verdict,
or a value that is not JSON becomes the gRPC status ``INTERNAL`` (message:
the exception's type name only), which the host turns into
``deny host_error:interceptor_failed``.
"""

import argparse
import hashlib
import json
import os
import signal
import sys
import tempfile
import threading
from concurrent import futures

SPEC = "agent-hooks/0.1"

#: The eight interception points (§3), in emission order.
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

#: Where each point's target lives in the context (§4.2, §4.3).
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

# The gRPC method of each point.
_RPC = {
    "agent_startup": "AgentStartup",
    "input": "Input",
    "pre_model_call": "PreModelCall",
    "post_model_call": "PostModelCall",
    "pre_tool_call": "PreToolCall",
    "post_tool_call": "PostToolCall",
    "output": "Output",
    "agent_shutdown": "AgentShutdown",
}

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
PROTO_ROOT = os.environ.get("HOOKWIRE_PROTO_ROOT", os.path.join(_ROOT, "proto"))
PROTO_FILE = "hookwire/v1/interceptor.proto"
STUBS_DIR = os.environ.get("HOOKWIRE_PY_STUBS", os.path.join(_ROOT, ".cache", "python"))
_STAMP = ".proto-sha256"


# ---------------------------------------------------------------------------
# Generated stubs
# ---------------------------------------------------------------------------


def _proto_digest():
    with open(os.path.join(PROTO_ROOT, PROTO_FILE), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _stamp_matches(out_dir, digest):
    try:
        with open(os.path.join(out_dir, _STAMP), encoding="ascii") as f:
            return f.read().strip() == digest
    except OSError:
        return False


def generate_stubs(out_dir=STUBS_DIR):
    """Generates the Python stubs for ``proto/`` into ``out_dir`` unless the
    ones there were made from the same proto (a SHA-256 stamp). Writes into a
    scratch directory and swaps it in, so a concurrent reader never sees half
    a set. Returns True when it generated."""
    digest = _proto_digest()
    if _stamp_matches(out_dir, digest):
        return False
    import shutil

    from grpc_tools import protoc  # only needed when generating

    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".stubs.", dir=parent)
    os.chmod(scratch, 0o755)
    args = [
        "grpc_tools.protoc",
        "-I" + PROTO_ROOT,
        "--python_out=" + scratch,
        "--grpc_python_out=" + scratch,
        "--pyi_out=" + scratch,
        PROTO_FILE,
    ]
    if protoc.main(args) != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError("grpc_tools.protoc failed on " + PROTO_FILE)
    with open(os.path.join(scratch, _STAMP), "w", encoding="ascii") as f:
        f.write(digest + "\n")
    old = tempfile.mkdtemp(prefix=".stubs-old.", dir=parent)
    try:
        if os.path.exists(out_dir):
            os.rename(out_dir, os.path.join(old, "x"))
        os.rename(scratch, out_dir)
    except OSError:
        # Another process swapped its own set in at the same moment.
        shutil.rmtree(scratch, ignore_errors=True)
        if not _stamp_matches(out_dir, digest):
            raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
    return True


def _load_stubs():
    # Regenerates only when proto/ changed since the stubs were made.
    generate_stubs()
    if STUBS_DIR not in sys.path:
        sys.path.insert(0, STUBS_DIR)
    from hookwire.v1 import interceptor_pb2, interceptor_pb2_grpc

    return interceptor_pb2, interceptor_pb2_grpc


# ---------------------------------------------------------------------------
# Exact JSON text
# ---------------------------------------------------------------------------


class InvalidJson(ValueError):
    """A JSON text the host would refuse too. The message never quotes it."""


def _refuse_constant(name):
    raise InvalidJson("non-finite number " + name)


def _no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise InvalidJson("duplicate object member name")
        obj[k] = v
    return obj


def loads(text):
    """Parses one JSON value exactly (ints of any size stay ints)."""
    try:
        return json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates
        )
    except InvalidJson:
        raise
    except ValueError as e:
        raise InvalidJson("not well-formed JSON") from e


def dumps(value):
    """Writes one JSON value as compact RFC 8259 text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# ---------------------------------------------------------------------------
# Verdicts (§5)
# ---------------------------------------------------------------------------


def _verdict(decision, reason=None, message=None, warnings=None, labels=None):
    v = {"decision": decision}
    if reason is not None:
        v["reason"] = reason
    if message is not None:
        v["message"] = message
    if warnings:
        v["warnings"] = list(warnings)
    if labels:
        v["result_labels"] = list(labels)
    return v


def allow(reason=None, message=None, warnings=None, labels=None):
    """``allow``: the action proceeds with the target unchanged."""
    return _verdict("allow", reason, message, warnings, labels)


def deny(reason, message=None, warnings=None, approval=None, evidence=None):
    """``deny``: the action does not proceed. ``reason`` is a machine id of
    your own (never ``host_error:*``, which the host reserves). Pass an
    ``approval`` object to make it liftable (see :func:`escalate`)."""
    v = _verdict("deny", reason, message, warnings)
    if approval is not None:
        v["approval"] = approval
    if evidence is not None:
        v["evidence"] = evidence
    return v


def transform(path, value, reason=None, message=None, warnings=None, labels=None):
    """``transform``: the action proceeds with the value at ``path`` (rooted
    at ``$target``; ``$target`` alone replaces the whole target) replaced by
    ``value``. Forbidden at ``agent_startup`` and ``agent_shutdown``."""
    v = _verdict("transform", reason, message, warnings, labels)
    v["transform"] = {"path": path, "value": value}
    return v


def warn(reason, message=None):
    """``warn`` sugar (§5.1): an ``allow`` carrying one warning."""
    w = {"reason": reason}
    if message is not None:
        w["message"] = message
    return allow(warnings=[w])


def escalate(reason, message=None, approval=None):
    """``escalate`` sugar (§5.1): a ``deny`` with an ``approval`` object,
    lifted only if the host's approval resolver approves."""
    return deny(reason, message, approval={} if approval is None else approval)


class Response:
    """A verdict plus namespaced transport metadata (§5.5), for the rare
    handler that returns receipts; a plain verdict dict is enough otherwise."""

    def __init__(self, verdict, extensions=None):
        self.verdict = verdict
        self.extensions = dict(extensions or {})


# ---------------------------------------------------------------------------
# Request -> AgentContext (mirror of src/wire/context.rs)
# ---------------------------------------------------------------------------


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


def context_from_request(point, req):
    """The spec-shaped AgentContext (§4) of one request, as a dict with
    ``target`` rebuilt from the point's target field (same object, §4.3)."""
    ctx = {"interception_point": point}
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
            return ctx  # no target field: the host refuses such a context
        target = target[key]
    ctx["target"] = target
    return ctx


# ---------------------------------------------------------------------------
# Verdict -> wire (mirror of src/wire/verdict.rs)
# ---------------------------------------------------------------------------


def response_to_pb(pb, result):
    """Encodes a handler's result (verdict dict or :class:`Response`) 1:1,
    without validating it: the host validates (§5) and denies an invalid
    verdict with ``host_error:verdict_invalid``."""
    if isinstance(result, Response):
        verdict, extensions = result.verdict, result.extensions
    else:
        verdict, extensions = result, {}
    if not isinstance(verdict, dict):
        raise TypeError("a handler must return a verdict dict, got " + type(verdict).__name__)
    decisions = {"allow": pb.ALLOW, "deny": pb.DENY, "transform": pb.TRANSFORM}
    v = pb.Verdict(decision=decisions.get(verdict.get("decision"), pb.DECISION_UNSPECIFIED))
    if verdict.get("reason") is not None:
        v.reason = verdict["reason"]
    if verdict.get("message") is not None:
        v.message = verdict["message"]
    for w in verdict.get("warnings") or ():
        pw = v.warnings.add()
        if w.get("reason") is not None:
            pw.reason = w["reason"]
        if w.get("message") is not None:
            pw.message = w["message"]
    if "approval" in verdict:
        v.approval.json = dumps(verdict["approval"])
    if "transform" in verdict:
        t = verdict["transform"] or {}
        v.transform.path = t.get("path", "")
        v.transform.value.json = dumps(t.get("value"))
    if "evidence" in verdict:
        v.evidence.json = dumps(verdict["evidence"])
    v.result_labels.extend(verdict.get("result_labels") or ())
    out = pb.InterceptorResponse(verdict=v)
    for k, val in extensions.items():
        out.extensions[k].json = dumps(val)
    return out


# ---------------------------------------------------------------------------
# The service
# ---------------------------------------------------------------------------


class Interceptor:
    """Base class of a service: override the points you decide on.

    - ``name``, ``version``, ``description``: the ``Describe`` manifest;
    - ``points``: the point names the service wants to be called at
      (``None`` or empty: all eight). A host built with
      ``HostBuilder::connect`` binds the service at these points only.

    Every point method takes the context dict and returns a verdict. The
    defaults allow: a point you declare but do not override has nothing to
    say.
    """

    name = "python-interceptor"
    version = "0.0.0"
    description = ""
    points = None

    def agent_startup(self, ctx):
        return allow()

    def input(self, ctx):
        return allow()

    def pre_model_call(self, ctx):
        return allow()

    def post_model_call(self, ctx):
        return allow()

    def pre_tool_call(self, ctx):
        return allow()

    def post_tool_call(self, ctx):
        return allow()

    def output(self, ctx):
        return allow()

    def agent_shutdown(self, ctx):
        return allow()


_current = threading.local()


def time_remaining():
    """Seconds left before the host's deadline for the call being handled
    (the host sends its per-call timeout as ``grpc-timeout``), or None
    outside a call or without a deadline. A slow policy checks it and gives
    up early: past the deadline the host has already denied with
    ``host_error:interceptor_timeout`` and ignores the answer."""
    call = getattr(_current, "context", None)
    return call.time_remaining() if call is not None else None


class _CallLog:
    """One JSON line per call, ``{"point", "context"}``, appended before the
    handler runs: what the service saw, for tests and debugging."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def write(self, point, ctx):
        line = dumps({"point": point, "context": ctx}) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)


def _servicer(pb, pb_grpc, service, points, call_log):
    import grpc

    def point_method(point):
        handler = getattr(service, point)

        def call(self, request, context):
            _current.context = context
            try:
                ctx = context_from_request(point, request)
                if call_log is not None:
                    call_log.write(point, ctx)
                result = handler(ctx)
                if result is None:
                    raise TypeError("handler returned no verdict")
                return response_to_pb(pb, result)
            except Exception as e:  # fail closed: the host denies
                # Only the type name: a message may quote target content (§14).
                context.abort(grpc.StatusCode.INTERNAL, type(e).__name__)
            finally:
                _current.context = None

        return call

    def describe(self, request, context):
        return pb.Manifest(
            name=service.name,
            version=service.version,
            spec=SPEC,
            points=[getattr(pb, p.upper()) for p in points],
            description=service.description,
        )

    methods = {_RPC[p]: point_method(p) for p in POINTS}
    methods["Describe"] = describe
    return type("Servicer", (pb_grpc.InterceptorServicer,), methods)()


def serve(service, host="127.0.0.1", port=0, points=None, call_log=None, workers=8, grace=2.0):
    """Serves ``service`` until SIGTERM or SIGINT. Prints ``PORT <n>`` on
    stdout once it accepts calls (``port=0`` picks a free port), then stops
    gracefully: new calls are refused, calls in flight get ``grace``
    seconds."""
    import grpc

    pb, pb_grpc = _load_stubs()
    if points is None:
        points = list(service.points or ())
    unknown = [p for p in points if p not in POINTS]
    if unknown:
        raise SystemExit("unknown interception point(s): " + ", ".join(unknown))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers),
        options=[
            # The host bounds a context at 5 MiB (§12.3); grpc's default is 4.
            ("grpc.max_receive_message_length", 8 * 1024 * 1024),
            ("grpc.so_reuseport", 0),
        ],
    )
    log = _CallLog(call_log) if call_log else None
    pb_grpc.add_InterceptorServicer_to_server(_servicer(pb, pb_grpc, service, points, log), server)
    health = _serve_health(server)
    bound = server.add_insecure_port("%s:%d" % (host, port))
    if bound == 0:
        raise SystemExit("could not bind %s:%d" % (host, port))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    print("PORT %d" % bound, flush=True)
    stop.wait()
    # Probes see NOT_SERVING while calls in flight drain.
    health.enter_graceful_shutdown()
    server.stop(grace).wait()


def _serve_health(server):
    """Adds the standard ``grpc.health.v1`` service (recommended: operators
    and ``hookwire check`` probe it), reporting ``SERVING`` for the whole
    server and for ``hookwire.v1.Interceptor``. Returns the servicer."""
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    for name in ("", "hookwire.v1.Interceptor"):
        servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return servicer


def arg_parser(description=None):
    """The command line every example shares: ``--host``, ``--port``,
    ``--points`` (comma-separated names, or ``all``) and ``--call-log``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free port)")
    p.add_argument(
        "--points",
        help="comma-separated points to declare in Describe, or 'all' (default: the service's own)",
    )
    p.add_argument("--call-log", help="append one JSON line per call: the point and the context seen")
    return p


def main(service, args=None):
    """Parses :func:`arg_parser`'s options (or takes ``args`` already
    parsed) and serves ``service``."""
    if args is None:
        args = arg_parser(service.description).parse_args()
    points = None
    if args.points:
        points = [] if args.points == "all" else [p.strip() for p in args.points.split(",") if p.strip()]
    serve(service, host=args.host, port=args.port, points=points, call_log=args.call_log)


if __name__ == "__main__":
    if sys.argv[1:] == ["generate-stubs"]:
        if generate_stubs():
            print("hookwire_py: stubs generated in " + STUBS_DIR)
    else:
        sys.exit("usage: hookwire_py.py generate-stubs")
