"""The host side of one ``Multiplex`` stream, for the agent-hooks bridge:
many emissions over one long-lived stream, each with its own id, its
``timeout_ms`` and a ``cancel`` when its caller gives up or its deadline
passes. The stream opens on first use; when it breaks, every emission
waiting on it fails (the bridge's ``host_error:interceptor_failed``) and
the next one opens a new stream. At most :data:`MAX_IN_FLIGHT` emissions
wait on it at once; more wait for room.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Optional

import grpc

from .multiplex import MAX_IN_FLIGHT
from .v1 import interceptor_pb2 as pb


class StreamFailure(Exception):
    """The stream broke or answered an error outcome; the message names
    the status code only."""

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.code = code


class MultiplexClient:
    """One stream to one service, shared by the emissions of one loop."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._call: Any = None
        self._reader: Optional[asyncio.Task[None]] = None
        self._room = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._lock = asyncio.Lock()
        # grpc.aio allows one write at a time on a stream.
        self._write_lock = asyncio.Lock()

    async def _open(self) -> Any:
        async with self._lock:
            if self._call is None:
                self._call = self._stub.Multiplex()
                self._reader = asyncio.ensure_future(self._read(self._call))
            return self._call

    async def _read(self, call: Any) -> None:
        reason = "stream ended"
        try:
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    break
                future = self._pending.pop(message.id, None)
                if future is not None and not future.done():
                    future.set_result(message)
        except grpc.aio.AioRpcError as e:
            reason = "stream broke: %s" % e.code().name
        except asyncio.CancelledError:
            reason = "stream closed"
        finally:
            if self._call is call:
                self._call = None
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(StreamFailure(reason))
            self._pending.clear()

    async def call(self, point: str, request: Any, timeout: float) -> Any:
        """The ``InterceptorResponse`` for one emission; raises
        ``TimeoutError`` past ``timeout`` (after cancelling it on the
        stream) and :class:`StreamFailure` for an error outcome or a
        broken stream."""
        async with self._room:
            call = await self._open()
            id_ = next(self._ids)
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._pending[id_] = future
            message = pb.MultiplexRequest(id=id_, timeout_ms=max(1, int(timeout * 1000)))
            getattr(message, point).CopyFrom(request)
            try:
                async with self._write_lock:
                    await call.write(message)
                answer = await asyncio.wait_for(asyncio.shield(future), timeout)
            except asyncio.TimeoutError:
                await self._cancel(call, id_)
                raise TimeoutError("hookwire service deadline exceeded") from None
            except asyncio.CancelledError:
                await self._cancel(call, id_)
                raise
            except grpc.aio.AioRpcError as e:
                self._pending.pop(id_, None)
                raise StreamFailure("stream broke: %s" % e.code().name) from None
            except (grpc.aio.UsageError, RuntimeError) as e:
                # Writing on a stream that just ended.
                self._pending.pop(id_, None)
                raise StreamFailure("stream closed: %s" % type(e).__name__) from None
        if answer.WhichOneof("outcome") == "response":
            return answer.response
        if answer.WhichOneof("outcome") == "error":
            if answer.error.code == grpc.StatusCode.DEADLINE_EXCEEDED.value[0]:
                raise TimeoutError("hookwire service deadline exceeded")
            raise StreamFailure("error outcome %d" % answer.error.code, answer.error.code)
        raise StreamFailure("answer without an outcome")

    async def _cancel(self, call: Any, id_: int) -> None:
        if self._pending.pop(id_, None) is None:
            return
        try:
            async with self._write_lock:
                await call.write(pb.MultiplexRequest(id=id_, cancel=pb.MultiplexCancel()))
        except Exception:  # the stream is gone: nothing left to cancel
            pass

    async def close(self) -> None:
        """Ends the stream; emissions still waiting fail."""
        call, self._call = self._call, None
        if call is not None:
            call.cancel()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
