"""An approver of a hookwire approval service (``hookwire approvals
serve``), for bots and integrations: the ``Watch`` stream of pending
requests and decisions on it, and the unary ``Decide``.

The client authenticates with an approver's bearer token (the access
list's ``token_sha256``; TLS with ``credentials``). :meth:`Approver.run`
hands every pending request the approver's rules let it see to a handler
(sync or async) and sends what the handler returns — :func:`approve`,
:func:`reject`, or ``None`` to leave it to others — waiting for the
service's acknowledgement. A stream that breaks (or is silent for three of
the service's heartbeats) is opened again with jittered exponential
backoff; a refused credential is never retried: it raises
:class:`ApproverRefused`. Everything is bounded: the requests tracked, the
handlers running at once, each wait.

    import asyncio
    from hookwire.approvals import Approver, approve, reject

    async def decide(request):
        if request.tool_name == "read_file":
            return approve("read-only")
        return reject("policy:not_allowlisted", "only read_file is allowed")

    asyncio.run(Approver("http://127.0.0.1:7070", token).run(decide))

A decision never lifts anything by itself: the host validates it (the
identity echo, the verdict's shape) and fails closed on anything wrong.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Optional, Union

import grpc

from . import jsonx
from .context import Context
from .server import MAX_MESSAGE_BYTES
from .v1 import approval_pb2 as apb
from .v1 import approval_pb2_grpc as apb_grpc
from .v1 import interceptor_pb2 as pb

log = logging.getLogger("hookwire.approvals")

#: Most pending requests tracked at once (the rest wait for a new set).
MAX_TRACKED = 10_000
#: Handlers running at once.
MAX_HANDLERS = 16
#: Seconds to wait for a decision's acknowledgement, and for a unary call.
CALL_TIMEOUT = 10.0
#: Silence tolerated before the service announced its heartbeat.
FIRST_EVENT_TIMEOUT = 30.0
#: Consecutive failed connections before :meth:`Approver.run` gives up.
MAX_ATTEMPTS = 20

_POINTS = {v: k.lower() for k, v in pb.InterceptionPoint.items()}
_STATUS = {v: k[len("DECISION_STATUS_"):].lower() for k, v in apb.DecisionStatus.items()}


class ApproverError(Exception):
    """The approval service could not be used (the message names the
    status code or the bound, never the token or a payload)."""


class ApproverRefused(ApproverError):
    """The service refused the credential (``UNAUTHENTICATED``) or the
    call (``PERMISSION_DENIED``): retrying cannot help."""


@dataclass(frozen=True)
class Decision:
    """What a handler returns: an approval (with an ``allow`` verdict, or a
    ``transform`` of ``$target`` for approve-with-edits) or a rejection."""

    outcome: int
    verdict: Any

    @property
    def approved(self) -> bool:
        """True for an approval, False for a rejection."""
        return self.outcome == apb.APPROVAL_OUTCOME_APPROVE


def approve(message: Optional[str] = None, *, edit: Any = None, has_edit: bool = False) -> Decision:
    """Approves: the host lifts the deny with ``allow`` (``message`` for the
    record), or with the edited target when ``edit`` is given (a transform
    at ``$target``; pass ``has_edit=True`` to edit to ``None``)."""
    if edit is not None or has_edit:
        verdict = pb.Verdict(decision=pb.TRANSFORM, transform=pb.Transform(
            path="$target", value=pb.JsonValue(json=jsonx.dumps(edit))))
    else:
        verdict = pb.Verdict(decision=pb.ALLOW)
    if message is not None:
        verdict.message = message
    return Decision(apb.APPROVAL_OUTCOME_APPROVE, verdict)


def reject(reason: str = "approval:rejected", message: Optional[str] = None) -> Decision:
    """Rejects: the deny stands with ``reason`` (a machine id of your own,
    never ``host_error:*``) and ``message``."""
    if not reason or reason.startswith("host_error:"):
        raise ValueError("a rejection's reason is a non-empty id outside host_error:*")
    verdict = pb.Verdict(decision=pb.DENY, reason=reason)
    if message is not None:
        verdict.message = message
    return Decision(apb.APPROVAL_OUTCOME_REJECT, verdict)


@dataclass(frozen=True)
class Request:
    """A pending request as an approver sees it."""

    #: The service's id for it.
    id: str
    #: The host that asked (its hello, or its network peer).
    host: str
    #: The interception point, e.g. ``pre_tool_call``.
    point: str
    #: The liftable deny offered (reason, message, approval block), as JSON.
    verdict: dict[str, Any]
    #: The context the host sent (after its redactor), with the accessors
    #: policies use.
    context: Context
    #: Seconds the host still waited when the event was sent.
    seconds_left: float
    _identity: Optional[str]

    @property
    def tool_name(self) -> Optional[str]:
        """``tool_call.name`` at the tool points, else None."""
        return self.context.tool_name

    @property
    def tool_args(self) -> Any:
        """``tool_call.args`` at the tool points, else None."""
        return self.context.tool_args


Handler = Callable[[Request], Union[Optional[Decision], Awaitable[Optional[Decision]]]]
"""Decides one request: a :class:`Decision`, or None to leave it."""


def _request(p: Any) -> Request:
    r = p.request
    verdict: dict[str, Any] = {"decision": pb.Decision.Name(r.verdict.decision).lower()}
    for key in ("reason", "message"):
        if r.verdict.HasField(key):
            verdict[key] = getattr(r.verdict, key)
    if r.verdict.HasField("approval"):
        verdict["approval"] = jsonx.loads(r.verdict.approval.json)
    context = jsonx.loads(r.context.json) if r.HasField("context") else {}
    if not isinstance(context, dict):
        raise jsonx.InvalidJson("the context is not an object")
    return Request(
        id=r.request_id, host=p.host, point=_POINTS.get(r.interception_point, "unspecified"),
        verdict=verdict, context=Context(context), seconds_left=r.deadline_ms / 1000,
        _identity=r.context_identity if r.HasField("context_identity") else None,
    )


def _resolution(request: Request, decision: Decision) -> Any:
    res = apb.ApprovalResolution(request_id=request.id, outcome=decision.outcome, verdict=decision.verdict)
    if request._identity is not None:  # the echo rule: absent for absent
        res.context_identity = request._identity
    return res


def _target(endpoint: str) -> str:
    for scheme in ("http://", "https://", "grpc://"):
        if endpoint.startswith(scheme):
            return endpoint[len(scheme):].rstrip("/")
    if "://" in endpoint:
        raise ValueError("endpoint: http(s)://host:port or host:port")
    return endpoint


class Approver:
    """One approver's connection to an approval service.

    ``endpoint``: ``http://host:port`` (``https://`` needs ``credentials``,
    e.g. ``grpc.ssl_channel_credentials(ca)``); ``token``: the approver's
    bearer token; ``backoff``: the first and the largest wait between
    reconnections, in seconds; ``max_attempts``: consecutive failed
    connections before :meth:`run` raises.
    """

    def __init__(self, endpoint: str, token: str, *, credentials: Optional[grpc.ChannelCredentials] = None,
                 backoff: tuple[float, float] = (0.2, 10.0),
                 max_attempts: int = MAX_ATTEMPTS) -> None:
        if not token or any(c in token for c in "\r\n"):
            raise ValueError("token: a non-empty single-line bearer token")
        if endpoint.startswith("https://") and credentials is None:
            raise ValueError("an https:// endpoint needs credentials (grpc.ssl_channel_credentials)")
        if not 0 < backoff[0] <= backoff[1]:
            raise ValueError("backoff: 0 < first <= largest")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.endpoint = endpoint
        self._target = _target(endpoint)
        self._credentials = credentials
        self._metadata = (("authorization", "Bearer " + token),)
        self._backoff = backoff
        self._max_attempts = max_attempts

    def __repr__(self) -> str:  # never the token
        return "Approver(%r, token=<redacted>)" % self.endpoint

    def _channel(self) -> grpc.aio.Channel:
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        if self._credentials is not None:
            return grpc.aio.secure_channel(self._target, self._credentials, options=options)
        return grpc.aio.insecure_channel(self._target, options=options)

    async def decide(self, request: Request, decision: Decision) -> str:
        """One decision with the unary ``Decide``: ``accepted``, or why not
        (``already_resolved``, ``expired``, ``withdrawn``, ``unknown_request``)."""
        async with self._channel() as channel:
            try:
                answer = await apb_grpc.ApprovalServiceStub(channel).Decide(
                    apb.DecideRequest(resolution=_resolution(request, decision)),
                    metadata=self._metadata, timeout=CALL_TIMEOUT)
            except grpc.aio.AioRpcError as e:
                raise _error(e) from None
        return _STATUS.get(answer.status, "unspecified")

    async def run(self, handler: Handler, *, stop: Optional[asyncio.Event] = None,
                  on_decided: Optional[Callable[[Request, Decision, str], None]] = None) -> None:
        """Watches until ``stop`` is set, deciding each pending request with
        ``handler`` once; ``on_decided`` hears each decision's status.
        Raises :class:`ApproverRefused` when the credential is refused and
        :class:`ApproverError` after ``max_attempts`` failed connections."""
        stop = stop or asyncio.Event()
        failures = 0
        decided: dict[str, None] = {}  # ids handled, oldest first
        while not stop.is_set():
            try:
                if await _Watch(self, handler, decided, on_decided).run(stop):
                    failures = 0
                    continue
            except grpc.aio.AioRpcError as e:
                error = _error(e)
                if isinstance(error, ApproverRefused):
                    raise error from None
                log.warning("approver: the Watch stream broke (%s); reconnecting", error)
            except (asyncio.TimeoutError, TimeoutError):
                log.warning("approver: the service went silent; reconnecting")
            failures += 1
            if failures >= self._max_attempts:
                raise ApproverError("no Watch stream after %d attempts" % failures)
            wait = min(self._backoff[1], self._backoff[0] * 2 ** (failures - 1))
            try:  # full jitter; a stop cuts the wait short
                await asyncio.wait_for(stop.wait(), random.uniform(wait / 2, wait))
            except asyncio.TimeoutError:
                pass


def _error(e: grpc.aio.AioRpcError) -> ApproverError:
    code = e.code()
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return ApproverRefused("the approval service refused the approver: %s" % code.name)
    return ApproverError("the approval service answered %s" % code.name)


class _Watch:
    """One ``Watch`` stream: events in, decisions out."""

    def __init__(self, approver: Approver, handler: Handler, decided: dict[str, None],
                 on_decided: Optional[Callable[[Request, Decision, str], None]]) -> None:
        self.approver = approver
        self.handler = handler
        self.decided = decided
        self.on_decided = on_decided
        self.acks: dict[str, asyncio.Future[int]] = {}
        self.room = asyncio.Semaphore(MAX_HANDLERS)
        self.tasks: set[asyncio.Task[None]] = set()
        self.silence = FIRST_EVENT_TIMEOUT

    async def run(self, stop: asyncio.Event) -> bool:
        """Runs the stream until ``stop`` (True) or its end (False once it
        had delivered the pending set: the caller reconnects at once)."""
        async with self.approver._channel() as channel:
            stub = apb_grpc.ApprovalServiceStub(channel)
            # No hello: the service names an approver after its credential.
            self.call = stub.Watch(metadata=self.approver._metadata)
            stopped = asyncio.ensure_future(stop.wait())
            opened = False
            try:
                while True:
                    read = asyncio.ensure_future(self.call.read())
                    done, _ = await asyncio.wait({read, stopped}, timeout=self.silence,
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if stopped in done:
                        read.cancel()
                        return True
                    if read not in done:
                        read.cancel()
                        raise asyncio.TimeoutError()
                    event = read.result()
                    if event is grpc.aio.EOF:
                        return opened
                    opened = True
                    self._event(event)
            finally:
                stopped.cancel()
                self.call.cancel()
                for task in list(self.tasks):
                    task.cancel()
                await asyncio.gather(*self.tasks, return_exceptions=True)

    def _event(self, event: Any) -> None:
        kind = event.WhichOneof("kind")
        if kind == "pending":
            for p in event.pending.requests[:MAX_TRACKED]:
                self._offer(p)
        elif kind == "added":
            self._offer(event.added)
        elif kind == "ack":
            future = self.acks.pop(event.ack.request_id, None)
            if future is not None and not future.done():
                future.set_result(event.ack.status)
        elif kind == "ready" and event.ready.heartbeat_interval_ms:
            self.silence = 3 * event.ready.heartbeat_interval_ms / 1000

    def _offer(self, p: Any) -> None:
        id_ = p.request.request_id
        if id_ in self.decided or len(self.tasks) >= MAX_TRACKED:
            return
        try:
            request = _request(p)
        except jsonx.InvalidJson as e:
            log.error("approver: request %s is not exact JSON (%s); left to others", id_, e)
            return
        self.decided[id_] = None
        if len(self.decided) > MAX_TRACKED:  # forget the oldest id
            del self.decided[next(iter(self.decided))]
        task = asyncio.ensure_future(self._decide(request))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _decide(self, request: Request) -> None:
        async with self.room:
            bound = max(0.001, request.seconds_left)
            try:
                if inspect.iscoroutinefunction(self.handler):
                    decision = await asyncio.wait_for(self.handler(request), bound)
                else:  # a blocking handler runs on a thread, never on the loop
                    decision = await asyncio.wait_for(asyncio.to_thread(self.handler, request), bound)
                if inspect.isawaitable(decision):
                    decision = await asyncio.wait_for(decision, bound)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the request is left to others
                log.error("approver: the handler failed on %s (%s)", request.id, type(e).__name__)
                return
            if decision is None:
                return
            if not isinstance(decision, Decision):
                log.error("approver: the handler returned %s, not a Decision", type(decision).__name__)
                return
            future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self.acks[request.id] = future
            try:
                await self.call.write(apb.ApproverMessage(decide=_resolution(request, decision)))
            except Exception as e:  # the stream broke: decide again on the next one
                self.acks.pop(request.id, None)
                self.decided.pop(request.id, None)
                log.warning("approver: decision on %s not sent (%s)", request.id, type(e).__name__)
                return
            try:
                status = _STATUS.get(await asyncio.wait_for(future, CALL_TIMEOUT), "unspecified")
            except asyncio.TimeoutError:
                self.acks.pop(request.id, None)
                status = "unacknowledged"
            if self.on_decided is not None:
                self.on_decided(request, decision, status)
