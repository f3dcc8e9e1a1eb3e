"""The bridge with the real agent_hooks SDK's InterceptionEmitter: a remote
deny blocks, a remote transform applies, every failure fails closed."""

import asyncio
import time

import pytest
from agent_hooks import AgentContextBuilder, InterceptionBlocked, InterceptionEmitter

import hookwire
from hookwire.agent_hooks import RemoteFailure, RemoteInterceptor, verdict_from_pb
from hookwire.v1 import interceptor_pb2 as pb
from helpers import WAIT


class Remote(hookwire.Interceptor):
    """Denies `rm`, redacts tool output containing a key, sleeps on `slow`."""

    name = "remote"

    async def pre_tool_call(self, ctx):
        if ctx.tool_name == "rm":
            return hookwire.deny("policy:no_rm", "rm is not allowed")
        if ctx.tool_name == "slow":
            await asyncio.sleep(WAIT)
        if ctx.tool_name == "crash":
            raise RuntimeError("boom")
        return hookwire.allow()

    def post_tool_call(self, ctx):
        if "AKIA" in str(ctx.target):
            return hookwire.transform("$target", "[redacted]", reason="policy:secret")
        return hookwire.allow()


def run(coro):
    asyncio.run(asyncio.wait_for(coro, WAIT * 3))


async def started(policy=None, transports=None):
    observe = (lambda point, ctx, transport: transports.append(transport)) if transports is not None else None
    server = hookwire.Server(policy or Remote(), "127.0.0.1", 0, observe=observe)
    port = await server.start()
    return server, "http://127.0.0.1:%d" % port


def builder():
    return AgentContextBuilder(agent_id="a", framework="test", session_id="s")


@pytest.mark.parametrize("multiplex", [False, True])
def test_remote_deny_blocks_and_transform_applies(multiplex):
    transports = []

    async def scenario():
        server, url = await started(transports=transports)
        remote = RemoteInterceptor(url, multiplex=multiplex)
        try:
            await decide(remote)
        finally:
            await remote.close()
            await server.stop(1.0)

    async def decide(remote):
        emitter = InterceptionEmitter()
        emitter.register(remote, name="hookwire")
        b = builder()
        ok = await emitter.emit(b.pre_tool_call(call_id="c1", name="ls", args={"path": "/"}))
        assert ok.record.verdict.decision.value == "allow"
        with pytest.raises(InterceptionBlocked) as e:
            await emitter.emit(b.pre_tool_call(call_id="c2", name="rm", args={"path": "/"}))
        assert e.value.result.verdict.reason == "policy:no_rm"
        out = await emitter.emit(
            b.post_tool_call(call_id="c1", name="ls", args={}, value="key AKIAABCDEFGHIJKLMNOP")
        )
        assert out.target == "[redacted]"
        assert transports == ["multiplex" if multiplex else "unary"] * 3

    run(scenario())


@pytest.mark.parametrize("multiplex", [False, True])
def test_failures_fail_closed(multiplex):
    async def scenario():
        server, url = await started()
        remote = RemoteInterceptor(url, timeout=0.3, multiplex=multiplex)
        try:
            await decide(server, remote)
        finally:
            await remote.close()
            await server.stop(0)

    async def decide(server, remote):
        emitter = InterceptionEmitter()
        emitter.register(remote, name="hookwire")
        b = builder()
        record = await emitter.emit_unchecked(b.pre_tool_call(call_id="c", name="crash", args={}))
        assert (record.proceeds, record.verdict.reason) == (False, "host_error:interceptor_failed")
        started_at = time.monotonic()
        record = await emitter.emit_unchecked(b.pre_tool_call(call_id="c", name="slow", args={}))
        assert (record.proceeds, record.verdict.reason) == (False, "host_error:interceptor_timeout")
        assert time.monotonic() - started_at < WAIT
        # A killed service: every later call fails closed.
        await server.stop(0)
        record = await emitter.emit_unchecked(b.pre_tool_call(call_id="c", name="ls", args={}))
        assert (record.proceeds, record.verdict.reason) == (False, "host_error:interceptor_failed")

    run(scenario())


def test_a_wrong_verdict_is_refused_by_the_sdk_gate():
    async def scenario():
        # A hookwire server refuses to send a forged verdict; check the
        # decoder hands what a foreign service sent to the gate as-is.
        forged = pb.InterceptorResponse(verdict=pb.Verdict(decision=pb.ALLOW, reason="host_error:forged"))
        assert verdict_from_pb(forged)["reason"] == "host_error:forged"
        emitter = InterceptionEmitter()

        class Direct:
            async def intercept(self, ctx):
                return verdict_from_pb(forged)

        emitter.register(Direct(), name="foreign")
        record = await emitter.emit_unchecked(builder().output(content="x"))
        assert record.proceeds is False
        assert record.verdict.reason.startswith("host_error:")

    run(scenario())


def test_undecodable_answers_and_bad_endpoints_fail():
    with pytest.raises(RemoteFailure):
        verdict_from_pb(pb.InterceptorResponse())
    bad = pb.InterceptorResponse(verdict=pb.Verdict(decision=pb.DENY, approval=pb.JsonValue(json='{"a":1,"a":2}')))
    with pytest.raises(RemoteFailure):
        verdict_from_pb(bad)
    with pytest.raises(ValueError):
        RemoteInterceptor("https://example.test")
    with pytest.raises(ValueError):
        RemoteInterceptor("127.0.0.1:1", timeout=0)
