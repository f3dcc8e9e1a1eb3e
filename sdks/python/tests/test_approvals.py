"""The approver client against a scripted approval service on loopback:
reconnection after a broken stream, the decision sent with the identity
echoed and acknowledged, a refused credential raised without retrying,
and the builders' rules. The end-to-end run against `hookwire approvals
serve` and a real host is cli/tests/approval_bot.rs."""

import asyncio

import grpc
import pytest

from hookwire import jsonx
from hookwire.approvals import Approver, ApproverRefused, approve, reject
from hookwire.v1 import approval_pb2 as apb
from hookwire.v1 import approval_pb2_grpc as apb_grpc
from hookwire.v1 import interceptor_pb2 as pb
from helpers import WAIT

TOKEN = "hwa_test_approver_0123456789abcdef"


def pending(id_, tool, identity="sha256:abc"):
    ctx = {"interception_point": "pre_tool_call", "tool_call": {"id": "c1", "name": tool, "args": {"n": 1}}}
    return apb.PendingApproval(host="agent", request=apb.ApprovalRequest(
        request_id=id_, context_identity=identity, interception_point=pb.PRE_TOOL_CALL,
        verdict=pb.Verdict(decision=pb.DENY, reason="needs_approval", approval=pb.JsonValue(json='{"limit":5}')),
        context=pb.JsonValue(json=jsonx.dumps(ctx)), deadline_ms=30_000))


class Service(apb_grpc.ApprovalServiceServicer):
    """Breaks the first Watch, then offers two requests and acks decisions."""

    def __init__(self):
        self.watches = 0
        self.decisions = []
        self.tokens = []

    async def Watch(self, request_iterator, context):  # noqa: N802
        self.tokens.append(dict(context.invocation_metadata()).get("authorization"))
        if dict(context.invocation_metadata()).get("authorization") != "Bearer " + TOKEN:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown token")
        self.watches += 1
        if self.watches == 1:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
        await context.write(apb.WatchEvent(pending=apb.PendingSet(requests=[pending("q-1", "read_file")])))
        await context.write(apb.WatchEvent(ready=apb.ServiceReady(service="fake", heartbeat_interval_ms=5000)))
        await context.write(apb.WatchEvent(added=pending("q-2", "bash")))
        async for message in request_iterator:
            if message.WhichOneof("kind") == "decide":
                self.decisions.append(message.decide)
                await context.write(apb.WatchEvent(ack=apb.DecisionAck(
                    request_id=message.decide.request_id, status=apb.DECISION_STATUS_ACCEPTED)))


def run(coro):
    asyncio.run(asyncio.wait_for(coro, WAIT * 3))


async def serving(service):
    server = grpc.aio.server()
    apb_grpc.add_ApprovalServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, "http://127.0.0.1:%d" % port


def test_reconnects_decides_and_echoes_the_identity():
    async def scenario():
        service = Service()
        server, endpoint = await serving(service)
        stop = asyncio.Event()
        statuses = []

        def on_decided(request, decision, status):
            statuses.append((request.id, decision.approved, status))
            if len(statuses) == 2:
                stop.set()

        def decide(request):
            assert request.verdict["approval"] == {"limit": 5}
            return approve() if request.tool_name == "read_file" else reject("policy:no", "not this one")

        approver = Approver(endpoint, TOKEN, backoff=(0.01, 0.05))
        assert TOKEN not in repr(approver)
        await approver.run(decide, stop=stop, on_decided=on_decided)
        assert service.watches == 2, "reconnected after the broken stream"
        assert sorted(statuses) == [("q-1", True, "accepted"), ("q-2", False, "accepted")]
        by_id = {d.request_id: d for d in service.decisions}
        assert by_id["q-1"].outcome == apb.APPROVAL_OUTCOME_APPROVE
        assert by_id["q-1"].verdict.decision == pb.ALLOW
        assert by_id["q-1"].context_identity == "sha256:abc"
        assert (by_id["q-2"].verdict.decision, by_id["q-2"].verdict.reason) == (pb.DENY, "policy:no")
        await server.stop(None)

    run(scenario())


def test_a_refused_token_raises_without_retrying():
    async def scenario():
        service = Service()
        server, endpoint = await serving(service)
        with pytest.raises(ApproverRefused) as e:
            await Approver(endpoint, "hwa_wrong", backoff=(0.01, 0.05)).run(lambda r: approve())
        assert "UNAUTHENTICATED" in str(e.value) and "hwa_" not in str(e.value)
        assert service.tokens == ["Bearer hwa_wrong"]
        await server.stop(None)

    run(scenario())


def test_builders_and_arguments():
    assert approve(edit={"n": 2}).verdict.transform.path == "$target"
    assert approve(edit={"n": 2}).verdict.decision == pb.TRANSFORM
    with pytest.raises(ValueError):
        reject("host_error:forged")
    with pytest.raises(ValueError):
        Approver("https://example:1", TOKEN)
    with pytest.raises(ValueError):
        Approver("http://127.0.0.1:1", "two\nlines")
