"""Serving a policy over gRPC (grpc.aio): the eight unary RPCs, ``Describe``
(declaring the Multiplex stream), the Multiplex stream itself,
``grpc.health.v1``, server reflection (``grpcurl`` and ``grpc_cli`` list and
describe the services without the proto files) and a graceful stop.

A policy is an :class:`Interceptor`: subclass it and override the points
you decide on, or register hooks on an instance with the decorator::

    import hookwire

    policy = hookwire.Interceptor("no-bash", "1.0.0")

    @policy.hook("pre_tool_call")
    def no_bash(ctx):
        if ctx.tool_name == "bash":
            return hookwire.deny("policy:no_shell", "no shell here")
        return hookwire.allow()

    hookwire.run(policy)   # --host, --port, --points; prints PORT <n>

Hooks may be ``async def`` (run on the loop) or plain functions (run on a
bounded thread pool, so a blocking hook never stalls other calls).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Iterable, Optional

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from . import jsonx
from .context import Context
from .dispatch import Dispatch, Failure, Hook
from .multiplex import Stream
from .points import POINTS, RPC, SPEC
from .unix import OwnerSocket
from .v1 import interceptor_pb2 as pb
from .v1 import interceptor_pb2_grpc as pb_grpc

log = logging.getLogger("hookwire")

#: Largest request accepted: the host's 5 MiB context bound (§12.3) with room.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
#: Calls at once on one connection.
MAX_CONCURRENT_STREAMS = 256
#: Threads running synchronous hooks.
DEFAULT_WORKERS = 16
#: Seconds calls in flight get to finish on a graceful stop.
DEFAULT_GRACE = 5.0


class Interceptor:
    """A policy: its manifest and one hook per point it decides on.

    ``points``: the points ``Describe`` declares (``None``: those with a
    hook, or all eight when none has one). A point without a hook allows.
    """

    name = "python-interceptor"
    version = "0.0.0"
    description = ""
    points: Optional[Iterable[str]] = None

    def __init__(self, name: Optional[str] = None, version: Optional[str] = None,
                 description: Optional[str] = None, points: Optional[Iterable[str]] = None) -> None:
        if name is not None:
            self.name = name
        if version is not None:
            self.version = version
        if description is not None:
            self.description = description
        if points is not None:
            self.points = list(points)
        self._hooks: dict[str, Hook] = {}

    def hook(self, point: str) -> Callable[[Hook], Hook]:
        """Decorator: registers the decorated function as ``point``'s hook."""
        _check_points([point])

        def register(fn: Hook) -> Hook:
            """Records ``fn`` and hands it back unchanged."""
            self._hooks[point] = fn
            return fn

        return register

    def hooks(self) -> dict[str, Hook]:
        """Every point's hook: registered ones, then overriding methods."""
        found = dict(self._hooks) if hasattr(self, "_hooks") else {}
        for point in POINTS:
            method = getattr(type(self), point, None)
            if point not in found and callable(method):
                found[point] = getattr(self, point)
        return found

    def declared_points(self) -> list[str]:
        """The points ``Describe`` declares (empty: all)."""
        if self.points is not None:
            points = list(self.points)
            _check_points(points)
            return points
        hooked = self.hooks()
        return [p for p in POINTS if p in hooked] if len(hooked) < len(POINTS) else []


def _check_points(points: Iterable[str]) -> None:
    unknown = [p for p in points if p not in POINTS]
    if unknown:
        raise ValueError("unknown interception point(s): " + ", ".join(unknown))


def manifest(policy: Interceptor, points: Optional[list[str]] = None, multiplex: bool = True) -> Any:
    """The ``Describe`` answer: name, version, spec, points, and (unless
    ``multiplex`` is False) the Multiplex stream declared (field and the
    older ``hookwire`` extension)."""
    m = pb.Manifest(
        name=policy.name,
        version=policy.version,
        spec=SPEC,
        points=[getattr(pb, p.upper()) for p in (policy.declared_points() if points is None else points)],
        description=policy.description,
        multiplex_version=1 if multiplex else 0,
    )
    if multiplex:
        m.extensions["hookwire"].json = jsonx.dumps({"multiplex": 1})
    return m


class _Servicer(pb_grpc.InterceptorServicer):  # type: ignore[misc]
    def __init__(self, dispatch: Dispatch, described: Any, draining: asyncio.Event, multiplex: bool) -> None:
        self._dispatch = dispatch
        self._multiplex = multiplex
        self._described = described
        self._draining = draining
        for point in POINTS:
            setattr(self, RPC[point], self._unary(point))

    def _unary(self, point: str) -> Callable[..., Any]:
        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            """One unary RPC: the answer, or the failure's status."""
            try:
                return await self._dispatch.answer(point, request, context.time_remaining(), "unary")
            except Failure as f:
                await context.abort(f.code, f.message)

        return call

    async def Describe(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        """The manifest, built once at start."""
        return self._described

    async def Multiplex(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:  # noqa: N802
        """One Multiplex stream, run to its end (:mod:`hookwire.multiplex`);
        ``UNIMPLEMENTED`` on a unary-only server."""
        if not self._multiplex:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "this service serves the unary RPCs only")
        await Stream(self._dispatch, context, self._draining).serve()


#: The services reflection lists: the interceptor, health and reflection.
SERVICES = (
    pb.DESCRIPTOR.services_by_name["Interceptor"].full_name,
    health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
    reflection.SERVICE_NAME,
)


class Server:
    """A running service: bound, serving, stopped with :meth:`stop`.
    ``reflect=False`` leaves server reflection out; ``unary_only=True``
    declares no Multiplex stream (and refuses one), so hosts call the
    unary RPCs. ``unix="/run/me/policy.sock"`` serves on an owner-only
    Unix socket instead of ``host``/``port`` (0600, in a directory only
    this user can write to; :mod:`hookwire.unix`), which a host on the same
    machine binds as ``unix:/run/me/policy.sock``."""

    def __init__(self, policy: Interceptor, host: str = "127.0.0.1", port: int = 0,
                 points: Optional[list[str]] = None, workers: int = DEFAULT_WORKERS,
                 observe: Optional[Callable[[str, Context, str], None]] = None,
                 reflect: bool = True, unary_only: bool = False,
                 unix: Optional[str] = None) -> None:
        if points is not None:
            _check_points(points)
        self.policy = policy
        self.address = "%s:%d" % (host, port)
        self._socket = OwnerSocket(unix) if unix is not None else None
        self._described = manifest(policy, points, multiplex=not unary_only)
        self._multiplex = not unary_only
        self._dispatch = Dispatch(policy.hooks(), workers, observe)
        self._draining = asyncio.Event()
        self._server: Optional[grpc.aio.Server] = None
        self._health = health.aio.HealthServicer()
        self._reflect = reflect
        self.port = 0

    @property
    def endpoint(self) -> str:
        """What a host binds: ``http://HOST:PORT`` or ``unix:/path``."""
        if self._socket is not None:
            return "unix:" + self._socket.path
        return "http://%s:%d" % (self.address.rsplit(":", 1)[0], self.port)

    async def start(self) -> int:
        """Binds and starts serving; returns the bound port (0 on a Unix
        socket)."""
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_concurrent_streams", MAX_CONCURRENT_STREAMS),
            ("grpc.max_metadata_size", 64 * 1024),
            ("grpc.so_reuseport", 0),
        ])
        pb_grpc.add_InterceptorServicer_to_server(_Servicer(self._dispatch, self._described, self._draining, self._multiplex), server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        for name in ("", "hookwire.v1.Interceptor"):
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        if self._reflect:
            reflection.enable_server_reflection(SERVICES, server)
        if self._socket is not None:
            staged = self._socket.stage()
            try:
                if server.add_insecure_port("unix:" + staged) == 0:
                    raise OSError("could not bind unix:%s" % self._socket.path)
                await server.start()
                self._socket.place()
            except BaseException:
                await server.stop(None)
                self._socket.remove()
                raise
            self._server = server
            return 0
        try:
            self.port = server.add_insecure_port(self.address)
        except RuntimeError as e:
            raise OSError("could not bind %s" % self.address) from e
        if self.port == 0:
            raise OSError("could not bind %s" % self.address)
        await server.start()
        self._server = server
        return self.port

    @property
    def draining(self) -> asyncio.Event:
        """Set once :meth:`stop` began: streams stop reading from then on."""
        return self._draining

    async def stop(self, grace: float = DEFAULT_GRACE) -> None:
        """Graceful stop: health turns NOT_SERVING, new calls are refused,
        Multiplex streams stop reading and end once their emissions are
        answered, and calls in flight get ``grace`` seconds."""
        if self._server is None:
            return
        await self._health.enter_graceful_shutdown()
        self._draining.set()
        await self._server.stop(grace)
        self._dispatch.close()
        self._server = None
        if self._socket is not None:
            self._socket.remove()


async def serve(policy: Interceptor, host: str = "127.0.0.1", port: int = 0,
                points: Optional[list[str]] = None, stop: Optional[asyncio.Event] = None,
                on_ready: Optional[Callable[[int], None]] = None, **kw: Any) -> None:
    """Serves ``policy`` until ``stop`` is set (default: forever), then
    stops gracefully. ``on_ready`` gets the bound port (0 on a Unix socket,
    ``unix=PATH`` in ``kw``)."""
    server = Server(policy, host, port, points, **kw)
    bound = await server.start()
    if on_ready is not None:
        on_ready(bound)
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        await server.stop()
