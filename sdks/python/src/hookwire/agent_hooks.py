"""The agent-hooks bridge: a hookwire service bound as an interceptor of
a host on the official ``agent_hooks`` SDK (``InterceptionEmitter``,
Microsoft Agent Framework's ``create_agent_hooks_middleware``).

:class:`RemoteInterceptor` implements the SDK's interceptor protocol
(``intercept(context) -> verdict``) by calling the service's unary RPC for
the context's point over gRPC, or with ``multiplex=True`` over one
``Multiplex`` stream (per-emission deadlines, cancellation). Every failure fails closed in the SDK's
own terms: a passed deadline raises ``TimeoutError``, which the emitter
records as ``deny host_error:interceptor_timeout``; an unreachable or
crashing service, an error status, a context that cannot be encoded or an
answer that cannot be decoded raises :class:`RemoteFailure`, recorded as
``deny host_error:interceptor_failed``; a verdict the service got wrong
is returned as sent, and the SDK's §5 gate denies it as
``host_error:verdict_invalid``. Nothing is ever a silent allow.

    from agent_hooks import InterceptionEmitter
    from hookwire.agent_hooks import RemoteInterceptor

    emitter = InterceptionEmitter()
    emitter.register(RemoteInterceptor("http://127.0.0.1:50051"), name="policy")
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import grpc

from . import jsonx
from .context import InvalidContext
from .encode import request_from_context
from .mux_client import MultiplexClient, StreamFailure
from .points import RPC
from .server import MAX_MESSAGE_BYTES
from .v1 import interceptor_pb2 as pb
from .v1 import interceptor_pb2_grpc as pb_grpc

#: Per-call deadline unless given: the spec's recommended 5 s (§7).
DEFAULT_TIMEOUT = 5.0
_DECISIONS = {pb.ALLOW: "allow", pb.DENY: "deny", pb.TRANSFORM: "transform"}


class RemoteFailure(Exception):
    """A remote call that produced no verdict. The message names the kind
    of failure (a status code, "undecodable answer"), never payload."""


def _target(endpoint: str) -> str:
    for scheme in ("http://", "grpc://"):
        if endpoint.startswith(scheme):
            return endpoint[len(scheme):].rstrip("/")
    if "://" in endpoint:
        raise ValueError("endpoint: http://host:port or host:port (TLS: pass credentials)")
    return endpoint


def verdict_from_pb(response: Any) -> dict[str, Any]:
    """The §5 wire dict of an ``InterceptorResponse``'s verdict, as sent:
    the SDK's gate validates it. Raises :class:`RemoteFailure` when a JSON
    member is not exact JSON or the verdict is missing."""
    if not response.HasField("verdict"):
        raise RemoteFailure("answer without a verdict")
    v = response.verdict
    out: dict[str, Any] = {"decision": _DECISIONS.get(v.decision, "unspecified")}
    try:
        if v.HasField("reason"):
            out["reason"] = v.reason
        if v.HasField("message"):
            out["message"] = v.message
        if v.warnings:
            out["warnings"] = [
                {k: getattr(w, k) for k in ("reason", "message") if w.HasField(k)} for w in v.warnings
            ]
        if v.HasField("approval"):
            out["approval"] = jsonx.loads(v.approval.json)
        if v.HasField("transform"):
            value = jsonx.loads(v.transform.value.json) if v.transform.HasField("value") else None
            out["transform"] = {"path": v.transform.path, "value": value}
        if v.HasField("evidence"):
            out["evidence"] = jsonx.loads(v.evidence.json)
        if v.result_labels:
            out["result_labels"] = list(v.result_labels)
    except jsonx.InvalidJson as e:
        raise RemoteFailure("undecodable answer: %s" % e) from None
    return out


class RemoteInterceptor:
    """An ``agent_hooks`` interceptor answered by a hookwire service.

    ``endpoint``: ``http://host:port`` or ``host:port``; ``credentials``:
    ``grpc.ssl_channel_credentials(...)`` for TLS; ``timeout``: seconds per
    call (the emitter's own timeout still applies above it); ``multiplex``:
    send the emissions over one ``Multiplex`` stream (the service must
    serve it, as the hookwire package and the Rust SDK do). The channel
    opens on first use, in the running event loop; :meth:`close` ends it.
    """

    def __init__(self, endpoint: str, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 metadata: Optional[Mapping[str, str]] = None, multiplex: bool = False) -> None:
        if not timeout > 0:
            raise ValueError("timeout must be positive")
        self.endpoint = endpoint
        self.timeout = timeout
        self._target = _target(endpoint)
        self._credentials = credentials
        self._metadata = tuple((metadata or {}).items())
        self._channel: Optional[grpc.aio.Channel] = None
        self._stub: Any = None
        self.multiplex = multiplex
        self._mux: Optional[MultiplexClient] = None

    def _connect(self) -> Any:
        if self._stub is None:
            options = [
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ]
            if self._credentials is not None:
                self._channel = grpc.aio.secure_channel(self._target, self._credentials, options=options)
            else:
                self._channel = grpc.aio.insecure_channel(self._target, options=options)
            self._stub = pb_grpc.InterceptorStub(self._channel)
        return self._stub

    async def intercept(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """The service's verdict on ``context`` (the SDK's §7 protocol)."""
        try:
            point, request = request_from_context(context)
        except InvalidContext as e:
            raise RemoteFailure("context not encodable: %s" % e) from None
        stub = self._connect()
        if self.multiplex:
            if self._mux is None:
                self._mux = MultiplexClient(stub)
            try:
                response = await self._mux.call(point, request, self.timeout)
            except StreamFailure as e:
                raise RemoteFailure("hookwire service: %s" % e) from None
            return verdict_from_pb(response)
        method = getattr(stub, RPC[point])
        try:
            response = await method(request, timeout=self.timeout, metadata=self._metadata or None,
                                    wait_for_ready=False)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise TimeoutError("hookwire service deadline exceeded") from None
            raise RemoteFailure("hookwire service answered %s" % e.code().name) from None
        return verdict_from_pb(response)

    async def describe(self) -> Any:
        """The service's ``Manifest``."""
        return await self._connect().Describe(pb.DescribeRequest(), timeout=self.timeout)

    async def close(self) -> None:
        """Closes the stream and the channel (a later call opens new ones)."""
        if self._mux is not None:
            await self._mux.close()
            self._mux = None
        if self._channel is not None:
            await self._channel.close()
        self._channel = self._stub = None
