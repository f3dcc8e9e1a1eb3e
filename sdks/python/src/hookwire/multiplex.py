"""The ``Multiplex`` stream served (a hookwire extension): the emissions of
many sessions over one long-lived stream, with the Rust SDK's semantics
(``server/src/multiplex.rs``):

- every id is answered exactly once, in any order: a response, or an
  error outcome where the unary RPC would have answered a status;
- **its deadline**, from receipt (``timeout_ms``; 0 is unbounded), after
  which it answers ``DEADLINE_EXCEEDED`` and its hook is cancelled;
- **cancellation**: the host's ``cancel`` cancels its hook and answers
  ``CANCELLED`` at once; an id already in flight is ``ALREADY_EXISTS``,
  a message without a body ``INVALID_ARGUMENT``;
- **no ordering**: each emission starts when its request is read;
- **bounded**: at most :data:`MAX_IN_FLIGHT` run at once; at the bound
  the stream is not read further until one ends (HTTP/2 flow control then
  holds the host back);
- the host closing its side, or the stream breaking, cancels every
  emission still running; a draining server stops reading and ends the
  stream once the emissions in flight are answered.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from .dispatch import Dispatch, Failure
from .v1 import interceptor_pb2 as pb

#: Most emissions one stream has in flight, the host's own bound.
MAX_IN_FLIGHT = 1024

_BODIES = {
    "agent_startup", "input", "pre_model_call", "post_model_call",
    "pre_tool_call", "post_tool_call", "output", "agent_shutdown",
}


def _error(id_: int, code: grpc.StatusCode, message: str) -> Any:
    return pb.MultiplexResponse(id=id_, error=pb.MultiplexError(code=code.value[0], message=message))


class Stream:
    """One ``Multiplex`` call: reads requests, runs emissions, writes answers."""

    def __init__(self, dispatch: Dispatch, context: Any, draining: asyncio.Event) -> None:
        self.dispatch = dispatch
        self.context = context
        self.draining = draining
        self.running: dict[int, asyncio.Task[None]] = {}
        self.room = asyncio.Semaphore(MAX_IN_FLIGHT)
        self.write_lock = asyncio.Lock()

    async def _write(self, message: Any) -> None:
        async with self.write_lock:
            await self.context.write(message)

    async def _emission(self, id_: int, point: str, request: Any, timeout: float | None) -> None:
        try:
            answer = pb.MultiplexResponse(id=id_, response=await self.dispatch.answer(point, request, timeout, "multiplex"))
        except Failure as f:
            answer = _error(id_, f.code, f.message)
        # Answered only while still ours: a cancel answered it already.
        if self.running.pop(id_, None) is not None:
            await self._write(answer)

    async def _read(self) -> Any:
        """The next request, or None at the end of the host's side or when
        the server starts draining."""
        read = asyncio.ensure_future(self.context.read())
        drain = asyncio.ensure_future(self.draining.wait())
        done, _ = await asyncio.wait({read, drain}, return_when=asyncio.FIRST_COMPLETED)
        if read not in done:
            read.cancel()
            return None
        drain.cancel()
        message = read.result()
        return None if message is grpc.aio.EOF else message

    async def serve(self) -> None:
        """Runs the stream to its end."""
        drained = False
        try:
            while True:
                message = await self._read()
                if message is None:
                    drained = self.draining.is_set()
                    break
                await self._handle(message)
            if drained:
                # Drain: answer what is in flight, then end the stream.
                while self.running:
                    await asyncio.wait(list(self.running.values()))
        finally:
            for task in list(self.running.values()):
                task.cancel()
            self.running.clear()

    async def _handle(self, message: Any) -> None:
        id_ = message.id
        body = message.WhichOneof("body")
        if body == "cancel":
            task = self.running.pop(id_, None)
            if task is not None:
                task.cancel()
                await self._write(_error(id_, grpc.StatusCode.CANCELLED, "cancelled by the host"))
            return
        if body not in _BODIES:
            await self._write(_error(id_, grpc.StatusCode.INVALID_ARGUMENT, "a stream message without a body"))
            return
        if id_ in self.running:
            await self._write(_error(id_, grpc.StatusCode.ALREADY_EXISTS, "request id already in flight on this stream"))
            return
        # At the bound, wait for room: the stream is not read meanwhile.
        await self.room.acquire()
        timeout = message.timeout_ms / 1000 if message.timeout_ms else None
        task = asyncio.ensure_future(self._emission(id_, body, getattr(message, body), timeout))
        # Room comes back however the task ends, even cancelled unstarted.
        task.add_done_callback(lambda _: self.room.release())
        self.running[id_] = task
