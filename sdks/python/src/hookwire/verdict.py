"""Verdicts (AGENT-HOOKS-0.1 §5): the builders a policy returns, the
:class:`Response` envelope (§5.5), the §5 validation and hookwire's bounds
applied before anything is sent, and the encoding onto the wire.

A verdict is a plain ``dict`` in the spec's JSON shape. The builders only
make valid ones; :func:`validate` catches the rest (a hand-written dict, a
transform at a point that forbids it), so the server answers ``INTERNAL``
instead of sending what the host would refuse as
``host_error:verdict_invalid``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

from . import jsonx
from .points import NO_TRANSFORM

#: Reasons starting with this are the host's own (§6.3).
HOST_ERROR_PREFIX = "host_error:"
#: hookwire's bounds, the host's own (``src/response.rs``, ``src/verdict.rs``).
REASON_MAX_BYTES = 1024
MESSAGE_MAX_BYTES = 16 * 1024
WARNINGS_MAX = 64
RESULT_LABELS_MAX = 64
LABEL_MAX_BYTES = 1024
TRANSFORM_PATH_MAX_BYTES = 4096
APPROVAL_MAX_BYTES = 65_536
EVIDENCE_MAX_BYTES = 10_240
RESPONSE_EXTENSIONS_MAX_BYTES = 65_536

_NAMESPACE = re.compile(r"[a-z][a-z0-9_]*")
_DECISIONS = ("allow", "deny", "transform")

Verdict = dict
"""A verdict: a ``dict`` in the §5 JSON shape."""


class InvalidVerdict(ValueError):
    """A verdict or response the host would refuse (§5, hookwire's bounds)."""


def _verdict(decision: str, reason: Optional[str], message: Optional[str],
             warnings: Optional[Iterable[Mapping[str, str]]], labels: Optional[Iterable[str]]) -> Verdict:
    v: Verdict = {"decision": decision}
    if reason is not None:
        v["reason"] = reason
    if message is not None:
        v["message"] = message
    if warnings:
        v["warnings"] = [dict(w) for w in warnings]
    if labels:
        v["result_labels"] = list(labels)
    validate(v)
    return v


def allow(reason: Optional[str] = None, message: Optional[str] = None,
          warnings: Optional[Iterable[Mapping[str, str]]] = None,
          labels: Optional[Iterable[str]] = None) -> Verdict:
    """``allow``: the action proceeds with the target unchanged."""
    return _verdict("allow", reason, message, warnings, labels)


def deny(reason: str, message: Optional[str] = None,
         warnings: Optional[Iterable[Mapping[str, str]]] = None,
         approval: Optional[Mapping[str, Any]] = None,
         evidence: Optional[Mapping[str, Any]] = None) -> Verdict:
    """``deny``: the action does not proceed. ``reason`` is a machine id of
    your own (never ``host_error:*``); an ``approval`` object makes the
    deny liftable (see :func:`escalate`)."""
    v: Verdict = {"decision": "deny", "reason": reason}
    if message is not None:
        v["message"] = message
    if warnings:
        v["warnings"] = [dict(w) for w in warnings]
    if approval is not None:
        v["approval"] = dict(approval)
    if evidence is not None:
        v["evidence"] = dict(evidence)
    validate(v)
    return v


def transform(path: str, value: Any, reason: Optional[str] = None, message: Optional[str] = None,
              warnings: Optional[Iterable[Mapping[str, str]]] = None,
              labels: Optional[Iterable[str]] = None) -> Verdict:
    """``transform``: the action proceeds with the value at ``path`` (rooted
    at ``$target``; ``$target`` alone replaces the whole target) replaced
    by ``value``. Forbidden at ``agent_startup`` and ``agent_shutdown``."""
    v = _verdict("allow", reason, message, warnings, labels)
    v["decision"] = "transform"
    v["transform"] = {"path": path, "value": value}
    validate(v)
    return v


def warn(reason: str, message: Optional[str] = None) -> Verdict:
    """``warn`` (§5.1): an ``allow`` carrying one warning."""
    w = {"reason": reason}
    if message is not None:
        w["message"] = message
    return allow(warnings=[w])


def escalate(reason: str, message: Optional[str] = None,
             approval: Optional[Mapping[str, Any]] = None) -> Verdict:
    """``escalate`` (§5.1): a ``deny`` with an ``approval`` object, lifted
    only when the host's approval resolver approves."""
    return deny(reason, message, approval={} if approval is None else approval)


class Response:
    """A verdict plus namespaced transport metadata (§5.5); a plain verdict
    is enough for a policy that sends no receipts."""

    def __init__(self, verdict: Verdict, extensions: Optional[Mapping[str, Any]] = None) -> None:
        self.verdict = verdict
        self.extensions = dict(extensions or {})


def _bounded_str(v: Mapping[str, Any], key: str, max_bytes: int, where: str = "") -> None:
    s = v.get(key)
    if s is None:
        return
    if not isinstance(s, str):
        raise InvalidVerdict("%s%s is not a string" % (where, key))
    if len(s.encode("utf-8")) > max_bytes:
        raise InvalidVerdict("%s%s is over %d bytes" % (where, key, max_bytes))


def validate(verdict: Any, point: Optional[str] = None) -> None:
    """§5 validation and hookwire's bounds; raises :class:`InvalidVerdict`.
    With ``point``, also the §4.3 rule that forbids a transform there."""
    if not isinstance(verdict, dict):
        raise InvalidVerdict("a verdict is a dict, not " + type(verdict).__name__)
    decision = verdict.get("decision")
    if decision not in _DECISIONS:
        raise InvalidVerdict("decision is not allow, deny or transform")
    unknown = set(verdict) - {"decision", "reason", "message", "warnings", "approval",
                              "transform", "evidence", "result_labels"}
    if unknown:
        raise InvalidVerdict("unknown verdict members: " + ", ".join(sorted(unknown)))
    _bounded_str(verdict, "reason", REASON_MAX_BYTES)
    _bounded_str(verdict, "message", MESSAGE_MAX_BYTES)
    reason = verdict.get("reason")
    if reason is not None and reason.startswith(HOST_ERROR_PREFIX):
        raise InvalidVerdict("host_error:* reasons are the host's own")
    warnings = verdict.get("warnings") or []
    if not isinstance(warnings, list) or len(warnings) > WARNINGS_MAX:
        raise InvalidVerdict("warnings is a list of at most %d" % WARNINGS_MAX)
    for w in warnings:
        if not isinstance(w, dict) or set(w) - {"reason", "message"}:
            raise InvalidVerdict("a warning is {reason?, message?}")
        _bounded_str(w, "reason", REASON_MAX_BYTES, "warnings[].")
        _bounded_str(w, "message", MESSAGE_MAX_BYTES, "warnings[].")
    labels = verdict.get("result_labels") or []
    if not isinstance(labels, list) or len(labels) > RESULT_LABELS_MAX:
        raise InvalidVerdict("result_labels is a list of at most %d" % RESULT_LABELS_MAX)
    for label in labels:
        if not isinstance(label, str) or len(label.encode("utf-8")) > LABEL_MAX_BYTES:
            raise InvalidVerdict("a result label is a string of at most %d bytes" % LABEL_MAX_BYTES)
    if "approval" in verdict:
        if decision != "deny":
            raise InvalidVerdict("approval is allowed on a deny only")
        _object_within(verdict["approval"], "approval", APPROVAL_MAX_BYTES)
    t = verdict.get("transform")
    if (t is not None) != (decision == "transform"):
        raise InvalidVerdict("transform is present exactly on a transform decision")
    if t is not None:
        if not isinstance(t, dict) or not isinstance(t.get("path"), str) or set(t) - {"path", "value"}:
            raise InvalidVerdict("transform is {path, value}")
        path = t["path"]
        if not (path.startswith("$target") or path.startswith("$policy_target")):
            raise InvalidVerdict("a transform path is rooted at $target")
        if len(path.encode("utf-8")) > TRANSFORM_PATH_MAX_BYTES:
            raise InvalidVerdict("transform.path is over %d bytes" % TRANSFORM_PATH_MAX_BYTES)
        _json(t.get("value"), "transform.value")
        if point in NO_TRANSFORM:
            raise InvalidVerdict("transform is forbidden at " + point)
    if "evidence" in verdict:
        _object_within(verdict["evidence"], "evidence", EVIDENCE_MAX_BYTES)


def _json(value: Any, member: str) -> None:
    try:
        jsonx.check(value)
    except jsonx.InvalidJson as e:
        raise InvalidVerdict("%s: %s" % (member, e)) from None


def _object_within(value: Any, member: str, max_bytes: int) -> None:
    if not isinstance(value, dict):
        raise InvalidVerdict(member + " is an object")
    _json(value, member)
    if jsonx.canonical_len(value) > max_bytes:
        raise InvalidVerdict("%s is over %d canonical bytes" % (member, max_bytes))


def validate_response(result: Any, point: Optional[str] = None) -> Response:
    """A handler's result (verdict or :class:`Response`) validated whole:
    the verdict, then the §5.5 extension namespaces and size."""
    response = result if isinstance(result, Response) else Response(result)
    validate(response.verdict, point)
    for k in response.extensions:
        if not isinstance(k, str) or not _NAMESPACE.fullmatch(k):
            raise InvalidVerdict("an extension namespace matches ^[a-z][a-z0-9_]*$")
    if response.extensions:
        _json(response.extensions, "extensions")
        if jsonx.canonical_len(response.extensions) > RESPONSE_EXTENSIONS_MAX_BYTES:
            raise InvalidVerdict("extensions are over %d canonical bytes" % RESPONSE_EXTENSIONS_MAX_BYTES)
    return response


def to_pb(pb: Any, response: Response) -> Any:
    """Encodes a validated :class:`Response` as ``InterceptorResponse``."""
    verdict = response.verdict
    decisions = {"allow": pb.ALLOW, "deny": pb.DENY, "transform": pb.TRANSFORM}
    v = pb.Verdict(decision=decisions[verdict["decision"]])
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
        v.approval.json = jsonx.dumps(verdict["approval"])
    if verdict.get("transform") is not None:
        v.transform.path = verdict["transform"]["path"]
        v.transform.value.json = jsonx.dumps(verdict["transform"].get("value"))
    if "evidence" in verdict:
        v.evidence.json = jsonx.dumps(verdict["evidence"])
    v.result_labels.extend(verdict.get("result_labels") or ())
    out = pb.InterceptorResponse(verdict=v)
    for k, val in response.extensions.items():
        out.extensions[k].json = jsonx.dumps(val)
    return out
