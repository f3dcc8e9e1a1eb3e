"""The Multiplex stream over a real grpc.aio server and client: every id
answered once, error outcomes, deadlines, cancellation, no ordering,
duplicate ids, and a draining stop."""

import asyncio

import grpc

import hookwire
from hookwire.v1 import interceptor_pb2 as pb
from helpers import WAIT, pre_tool_call, serving


def mx(id_, name, timeout_ms=0, args=None):
    return pb.MultiplexRequest(id=id_, timeout_ms=timeout_ms, pre_tool_call=pre_tool_call(name, args))


def cancel(id_):
    return pb.MultiplexRequest(id=id_, cancel=pb.MultiplexCancel())


class Gated(hookwire.Interceptor):
    """`wait:<k>` waits for gate k; `open:<k>` opens it; `fail` raises."""

    name = "gated"

    def __init__(self):
        super().__init__()
        self.gates = {}
        self.cancelled = asyncio.Event()

    def gate(self, k):
        return self.gates.setdefault(k, asyncio.Event())

    async def pre_tool_call(self, ctx):
        kind, _, k = ctx.tool_name.partition(":")
        if kind == "wait":
            try:
                await self.gate(k).wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            return hookwire.deny("policy:waited")
        if kind == "open":
            self.gate(k).set()
        if kind == "fail":
            raise RuntimeError("payload")
        return hookwire.allow()


def run(coro):
    asyncio.run(asyncio.wait_for(coro, WAIT * 3))


async def read(call):
    m = await asyncio.wait_for(call.read(), WAIT)
    assert m is not grpc.aio.EOF
    return m


def test_answers_out_of_order_and_error_outcomes():
    async def scenario():
        async with serving(Gated()) as (_, stub):
            call = stub.Multiplex()
            await call.write(mx(1, "wait:a"))
            await call.write(mx(2, "fail"))
            await call.write(mx(3, "open:a"))
            got = {}
            for _ in range(3):
                m = await read(call)
                assert m.id not in got, "answered once"
                got[m.id] = m
            # 1 waited for 3: emissions are not ordered.
            assert got[1].response.verdict.reason == "policy:waited"
            assert got[2].error.code == grpc.StatusCode.INTERNAL.value[0]
            assert got[2].error.message == "hook failed"
            assert got[3].response.verdict.decision == pb.ALLOW
            await call.done_writing()
            assert await asyncio.wait_for(call.read(), WAIT) is grpc.aio.EOF

    run(scenario())


def test_deadline_and_cancel_answer_and_stop_the_hook():
    policy = Gated()

    async def scenario():
        async with serving(policy) as (_, stub):
            call = stub.Multiplex()
            await call.write(mx(7, "wait:never", timeout_ms=200))
            m = await read(call)
            assert (m.id, m.error.code) == (7, grpc.StatusCode.DEADLINE_EXCEEDED.value[0])
            await asyncio.wait_for(policy.cancelled.wait(), WAIT)
            policy.cancelled.clear()
            await call.write(mx(8, "wait:never"))
            await call.write(cancel(8))
            m = await read(call)
            assert (m.id, m.error.code) == (8, grpc.StatusCode.CANCELLED.value[0])
            await asyncio.wait_for(policy.cancelled.wait(), WAIT)
            # A cancel for an unknown id is ignored; the stream keeps serving.
            await call.write(cancel(99))
            await call.write(mx(9, "ls"))
            m = await read(call)
            assert (m.id, m.response.verdict.decision) == (9, pb.ALLOW)
            call.cancel()

    run(scenario())


def test_duplicate_ids_and_empty_bodies_are_refused():
    async def scenario():
        async with serving(Gated()) as (_, stub):
            call = stub.Multiplex()
            await call.write(mx(1, "wait:a"))
            await call.write(mx(1, "ls"))
            m = await read(call)
            assert (m.id, m.error.code) == (1, grpc.StatusCode.ALREADY_EXISTS.value[0])
            await call.write(pb.MultiplexRequest(id=2))
            m = await read(call)
            assert (m.id, m.error.code) == (2, grpc.StatusCode.INVALID_ARGUMENT.value[0])
            await call.write(pb.MultiplexRequest(id=3, pre_tool_call=pb.PreToolCallRequest()))
            m = await read(call)
            assert (m.id, m.error.code) == (3, grpc.StatusCode.INVALID_ARGUMENT.value[0])
            await call.write(mx(4, "open:a"))
            ids = {(await read(call)).id for _ in range(2)}
            assert ids == {1, 4}
            call.cancel()

    run(scenario())


def test_a_closed_stream_stops_its_emissions():
    policy = Gated()

    async def scenario():
        async with serving(policy) as (_, stub):
            call = stub.Multiplex()
            await call.write(mx(1, "wait:never"))
            await call.write(mx(2, "ls"))
            assert (await read(call)).id == 2
            call.cancel()
            await asyncio.wait_for(policy.cancelled.wait(), WAIT)

    run(scenario())


def test_a_draining_server_answers_in_flight_then_ends_the_stream():
    policy = Gated()

    async def scenario():
        async with serving(policy) as (server, stub):
            call = stub.Multiplex()
            await call.write(mx(1, "wait:d"))
            await call.write(mx(2, "ls"))
            assert (await read(call)).id == 2
            stopping = asyncio.ensure_future(server.stop(grace=WAIT))
            await asyncio.wait_for(server.draining.wait(), WAIT)
            policy.gate("d").set()
            m = await read(call)
            assert (m.id, m.response.verdict.reason) == (1, "policy:waited")
            assert await asyncio.wait_for(call.read(), WAIT) is grpc.aio.EOF
            assert await call.code() == grpc.StatusCode.OK
            await asyncio.wait_for(stopping, WAIT)

    run(scenario())


def test_the_client_carries_many_concurrent_emissions_on_one_stream():
    from hookwire.mux_client import MultiplexClient

    async def scenario():
        async with serving(hookwire.Interceptor("allow-all", "1")) as (_, stub):
            client = MultiplexClient(stub)
            answers = await asyncio.wait_for(asyncio.gather(*(
                client.call("pre_tool_call", pre_tool_call("ls"), WAIT) for _ in range(200))), WAIT)
            assert all(a.verdict.decision == pb.ALLOW for a in answers)
            await client.close()

    run(scenario())
