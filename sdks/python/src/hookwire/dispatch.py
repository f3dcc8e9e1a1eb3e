"""One emission answered, the same way for the unary RPCs and the
Multiplex stream: decode the context, run the policy's hook (a coroutine
on the loop, a plain function on a bounded thread pool so it never blocks
the loop), validate its verdict (§5) and encode it.

Every failure is a :class:`Failure` carrying the gRPC status the host
turns into its fail-closed ``host_error:*`` deny: an invalid context is
``INVALID_ARGUMENT`` (naming the member, never its value), a raising hook
or an invalid verdict ``INTERNAL`` with a fixed message (the exception's
text may quote the payload, so it goes to the log by type only), a
passed deadline ``DEADLINE_EXCEEDED``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

import grpc

from .context import Context, InvalidContext, context_from_request
from .v1 import interceptor_pb2 as pb
from .verdict import InvalidVerdict, allow, to_pb, validate_response

log = logging.getLogger("hookwire")

_deadline: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar("hookwire_deadline", default=None)


def time_remaining() -> Optional[float]:
    """Seconds left before the host's deadline for the emission being
    decided (in a hook, sync or async), or None without one. A slow
    synchronous policy checks it and gives up early: past the deadline the
    host has already denied (``host_error:interceptor_timeout``)."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


Hook = Callable[[Context], Any]
"""A point's hook: takes the :class:`Context`, returns a verdict or a
:class:`~hookwire.verdict.Response` (directly or as a coroutine)."""


class Failure(Exception):
    """An emission that gets no verdict: the status the host receives."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Dispatch:
    """Answers emissions for one policy: its hooks by point, the thread
    pool its synchronous hooks run on (bounded: a synchronous hook still
    running past its deadline holds a thread until it returns), and the
    optional call observer."""

    def __init__(self, hooks: dict[str, Hook], workers: int,
                 observe: Optional[Callable[[str, Context, str], None]] = None) -> None:
        self.hooks = hooks
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hookwire-hook")
        self.observe = observe

    async def answer(self, point: str, request: Any, timeout: Optional[float], transport: str) -> Any:
        """The ``InterceptorResponse`` for one request, within ``timeout``
        seconds (None: unbounded), or raises :class:`Failure`; ``transport``
        (``unary`` or ``multiplex``) is what the observer is told."""
        try:
            ctx = context_from_request(point, request)
        except InvalidContext as e:
            raise Failure(grpc.StatusCode.INVALID_ARGUMENT, "invalid context: %s" % e) from None
        if self.observe is not None:
            self.observe(point, ctx, transport)
        hook = self.hooks.get(point)
        if hook is None:
            return to_pb(pb, validate_response(allow(), point))
        _deadline.set(None if timeout is None else time.monotonic() + timeout)
        try:
            result = await asyncio.wait_for(self._run(hook, ctx), timeout)
        except asyncio.TimeoutError:
            raise Failure(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded") from None
        except asyncio.CancelledError:
            raise
        except Exception as e:  # fail closed; the text may quote the payload
            log.error("hook %s failed (%s); answering INTERNAL", point, type(e).__name__)
            raise Failure(grpc.StatusCode.INTERNAL, "hook failed") from None
        try:
            if result is None:
                raise InvalidVerdict("the hook returned no verdict")
            return to_pb(pb, validate_response(result, point))
        except InvalidVerdict as e:
            log.error("hook %s returned an invalid verdict (%s); answering INTERNAL", point, e)
            raise Failure(grpc.StatusCode.INTERNAL, "invalid verdict") from None

    async def _run(self, hook: Hook, ctx: Context) -> Any:
        if inspect.iscoroutinefunction(hook):
            return await hook(ctx)
        loop = asyncio.get_running_loop()
        # The hook's thread sees this emission's deadline (time_remaining).
        run = functools.partial(contextvars.copy_context().run, hook, ctx)
        result = await loop.run_in_executor(self.pool, run)
        if inspect.isawaitable(result):
            result = await result
        return result

    def close(self) -> None:
        """Stops the thread pool (hooks still running finish on their own)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
