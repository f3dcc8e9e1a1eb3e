"""The unary RPCs, Describe and health over a real grpc.aio server and client."""

import asyncio
import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import hookwire
from hookwire.v1 import interceptor_pb2 as pb
from hookwire.v1 import interceptor_pb2_grpc as pb_grpc
from helpers import WAIT, agent_startup, pre_tool_call, serving, verdict_json


class Policy(hookwire.Interceptor):
    """Denies bash, echoes `echo`'s args as a transform, raises on `fail`."""

    name = "test-policy"
    version = "1.2.3"

    def pre_tool_call(self, ctx):
        if ctx.tool_name == "bash":
            return hookwire.deny("policy:no_shell", "no shell")
        if ctx.tool_name == "echo":
            return hookwire.transform("$target", ctx.target)
        if ctx.tool_name == "fail":
            raise RuntimeError("secret payload text")
        if ctx.tool_name == "invalid":
            return {"decision": "deny", "reason": "host_error:forged"}
        if ctx.tool_name == "none":
            return None
        return hookwire.allow()

    def agent_startup(self, ctx):
        return hookwire.transform("$target", {})


def run(coro):
    asyncio.run(asyncio.wait_for(coro, WAIT * 3))


def test_verdicts_and_exact_values_round_trip():
    async def scenario():
        async with serving(Policy()) as (_, stub):
            r = await stub.PreToolCall(pre_tool_call("bash", {"cmd": "ls"}), timeout=WAIT)
            assert verdict_json(r) == {"decision": "DENY", "reason": "policy:no_shell"}
            raw = '{"n":18446744073709551615,"f":1.0,"s":"é"}'
            r = await stub.PreToolCall(pre_tool_call("echo", raw_args=raw), timeout=WAIT)
            assert r.verdict.transform.value.json == raw
            r = await stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT)
            assert verdict_json(r) == {"decision": "ALLOW"}

    run(scenario())


@pytest.mark.parametrize("tool", ["fail", "invalid", "none"])
def test_hook_failures_are_internal_without_text(tool):
    async def scenario():
        async with serving(Policy()) as (_, stub):
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stub.PreToolCall(pre_tool_call(tool), timeout=WAIT)
            assert e.value.code() == grpc.StatusCode.INTERNAL
            assert "secret" not in (e.value.details() or "")
            assert e.value.details() in ("hook failed", "invalid verdict")
            # Still serving.
            r = await stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT)
            assert r.verdict.decision == pb.ALLOW

    run(scenario())


def test_a_transform_where_forbidden_is_not_sent():
    async def scenario():
        async with serving(Policy()) as (_, stub):
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stub.AgentStartup(agent_startup(), timeout=WAIT)
            assert e.value.code() == grpc.StatusCode.INTERNAL

    run(scenario())


@pytest.mark.parametrize(
    "raw", ['{"a":1,"a":2}', '{"n":18446744073709551616}', "[" * 200 + "]" * 200, "NaN"]
)
def test_invalid_contexts_are_refused_without_payload(raw):
    async def scenario():
        async with serving(Policy()) as (_, stub):
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stub.PreToolCall(pre_tool_call("echo", raw_args=raw), timeout=WAIT)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "18446744073709551616" not in e.value.details()
            assert e.value.details().startswith("invalid context: args")

    run(scenario())


def test_missing_core_is_refused():
    async def scenario():
        async with serving(Policy()) as (_, stub):
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stub.PreToolCall(pb.PreToolCallRequest(), timeout=WAIT)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    run(scenario())


def test_oversized_requests_are_refused():
    async def scenario():
        async with serving(Policy()) as (_, stub):
            big = '"' + "x" * (9 * 1024 * 1024) + '"'
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stub.PreToolCall(pre_tool_call("echo", raw_args='{"a":%s}' % big), timeout=WAIT)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    run(scenario())


def test_describe_declares_points_and_multiplex_and_health_serves():
    async def scenario():
        async with serving(Policy()) as (server, stub):
            m = await stub.Describe(pb.DescribeRequest(), timeout=WAIT)
            assert (m.name, m.version, m.spec) == ("test-policy", "1.2.3", "agent-hooks/0.1")
            assert list(m.points) == [pb.AGENT_STARTUP, pb.PRE_TOOL_CALL]
            assert m.multiplex_version == 1
            assert hookwire.jsonx.loads(m.extensions["hookwire"].json) == {"multiplex": 1}
            channel = grpc.aio.insecure_channel("127.0.0.1:%d" % server.port)
            h = health_pb2_grpc.HealthStub(channel)
            for name in ("", "hookwire.v1.Interceptor"):
                r = await h.Check(health_pb2.HealthCheckRequest(service=name), timeout=WAIT)
                assert r.status == health_pb2.HealthCheckResponse.SERVING
            await channel.close()

    run(scenario())


def test_decorator_api_declares_its_hooks():
    policy = hookwire.Interceptor("deco", "1.0.0")

    @policy.hook("output")
    async def output(ctx):
        return hookwire.warn("policy:w")

    assert policy.declared_points() == ["output"]
    with pytest.raises(ValueError):
        policy.hook("nowhere")
    assert hookwire.Interceptor("all").declared_points() == []


def test_a_blocking_sync_hook_does_not_block_other_calls():
    release = threading.Event()
    policy = hookwire.Interceptor("blocking", "1")

    @policy.hook("pre_tool_call")
    def decide(ctx):
        if ctx.tool_name == "block":
            assert release.wait(WAIT)
        return hookwire.allow()

    async def scenario():
        async with serving(policy) as (_, stub):
            blocked = asyncio.ensure_future(stub.PreToolCall(pre_tool_call("block"), timeout=WAIT))
            r = await stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT)
            assert r.verdict.decision == pb.ALLOW
            assert not blocked.done()
            release.set()
            assert (await blocked).verdict.decision == pb.ALLOW

    run(scenario())


def test_the_deadline_is_kept_and_the_service_survives():
    policy = hookwire.Interceptor("slow", "1")
    seen = {}

    @policy.hook("pre_tool_call")
    async def decide(ctx):
        if ctx.tool_name == "slow":
            try:
                await asyncio.sleep(WAIT * 2)
            except asyncio.CancelledError:
                seen["cancelled"] = True
                raise
        return hookwire.allow()

    async def scenario():
        async with serving(policy) as (_, stub):
            started = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stub.PreToolCall(pre_tool_call("slow"), timeout=0.3)
            assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert time.monotonic() - started < WAIT
            r = await stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT)
            assert r.verdict.decision == pb.ALLOW
        assert seen.get("cancelled"), "the hook was stopped at the deadline"

    run(scenario())


def test_time_remaining_reaches_sync_and_async_hooks():
    policy = hookwire.Interceptor("clock", "1")
    seen = []

    @policy.hook("pre_tool_call")
    def sync_hook(ctx):
        seen.append(hookwire.time_remaining())
        return hookwire.allow()

    @policy.hook("output")
    async def async_hook(ctx):
        seen.append(hookwire.time_remaining())
        return hookwire.allow()

    async def scenario():
        async with serving(policy) as (_, stub):
            await stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT)
            out = pb.OutputRequest(core=pre_tool_call("x").core, output=pb.JsonValue(json='{"content":"x"}'))
            await stub.Output(out, timeout=WAIT)
            await stub.PreToolCall(pre_tool_call("ls"))

    run(scenario())
    # grpc-timeout travels rounded up to its unit: allow a second over.
    assert 0 < seen[0] <= WAIT + 1 and 0 < seen[1] <= WAIT + 1
    assert seen[2] is None
    assert hookwire.time_remaining() is None


def test_reflection_lists_and_describes_the_services():
    from google.protobuf.descriptor_pool import DescriptorPool
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

    def reflect(port):
        # A plain client, as grpcurl is: nothing of the package's stubs.
        with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
            db = ProtoReflectionDescriptorDatabase(channel)
            names = set(db.get_services())
            service = DescriptorPool(db).FindServiceByName("hookwire.v1.Interceptor")
            return names, {m.name for m in service.methods}

    async def scenario():
        async with serving(Policy()) as (server, _):
            loop = asyncio.get_running_loop()
            names, methods = await asyncio.wait_for(loop.run_in_executor(None, reflect, server.port), WAIT)
            assert {"hookwire.v1.Interceptor", "grpc.health.v1.Health",
                    "grpc.reflection.v1alpha.ServerReflection"} <= names
            assert {"Describe", "PreToolCall", "Multiplex", "AgentShutdown"} <= methods
        async with serving(Policy(), reflect=False) as (server, _):
            with pytest.raises(grpc.RpcError) as e:
                await asyncio.wait_for(loop.run_in_executor(None, reflect, server.port), WAIT)
            assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED

    run(scenario())


def test_a_graceful_stop_finishes_unary_calls_in_flight_and_turns_health_down():
    release = threading.Event()
    entered = threading.Event()
    policy = hookwire.Interceptor("draining", "1")

    @policy.hook("pre_tool_call")
    def decide(ctx):
        entered.set()
        assert release.wait(WAIT)
        return hookwire.deny("policy:late", "answered during the stop")

    async def scenario():
        server = hookwire.Server(policy, "127.0.0.1", 0)
        port = await server.start()
        channel = grpc.aio.insecure_channel("127.0.0.1:%d" % port)
        stub = pb_grpc.InterceptorStub(channel)
        health_stub = health_pb2_grpc.HealthStub(channel)
        loop = asyncio.get_running_loop()
        # A watcher (as a load balancer is) sees the stop begin.
        watch = health_stub.Watch(health_pb2.HealthCheckRequest(service="hookwire.v1.Interceptor"), timeout=WAIT * 3)
        first = await asyncio.wait_for(watch.read(), WAIT)
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        in_flight = asyncio.ensure_future(stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT))
        assert await loop.run_in_executor(None, entered.wait, WAIT)
        stopping = asyncio.ensure_future(server.stop(grace=WAIT))
        update = await asyncio.wait_for(watch.read(), WAIT)
        assert update.status == health_pb2.HealthCheckResponse.NOT_SERVING
        watch.cancel()  # the watcher goes elsewhere; the stop waits for calls, not watchers gone
        assert not in_flight.done()
        release.set()
        answer = await asyncio.wait_for(in_flight, WAIT)
        assert verdict_json(answer) == {"decision": "DENY", "reason": "policy:late"}
        await asyncio.wait_for(stopping, WAIT)
        await channel.close()
        # Stopped: a new call finds nobody.
        channel = grpc.aio.insecure_channel("127.0.0.1:%d" % port)
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await pb_grpc.InterceptorStub(channel).PreToolCall(pre_tool_call("ls"), timeout=WAIT)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        await channel.close()

    run(scenario())


def test_a_unary_only_server_declares_no_stream_and_refuses_one():
    async def scenario():
        async with serving(Policy(), unary_only=True) as (_, stub):
            m = await stub.Describe(pb.DescribeRequest(), timeout=WAIT)
            assert m.multiplex_version == 0 and "hookwire" not in m.extensions
            call = stub.Multiplex()
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await call.read()
            assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
            r = await stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT)
            assert r.verdict.decision == pb.ALLOW

    run(scenario())
