"""Microsoft Agent Framework with a hookwire service bound through the
bridge: ``create_agent_hooks_middleware`` around an agent whose chat
client talks to a scripted mock model server on 127.0.0.1:0. A remote
deny blocks a tool call, a remote transform redacts a tool's output, and
a killed service fails the run closed."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import agent_framework as af
import pytest
from agent_framework import BaseChatClient, ChatResponse, Content, Message, create_agent_hooks_middleware, tool 
from agent_framework._middleware import ChatMiddlewareLayer 
from agent_framework._tools import FunctionInvocationLayer 
from agent_hooks import InterceptionBlocked 

import hookwire 
from hookwire.agent_hooks import RemoteInterceptor 
from helpers import WAIT 

SECRET = "AKIAABCDEFGHIJKLMNOP"


class MockModel:
    """A model server answering each POST with the next scripted turn,
    recording every request body."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                turn = model.script.pop(0) if model.script else {"text": "done"}
                data = json.dumps(turn).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/v1/chat" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Raw(BaseChatClient):
    """A chat client for the mock server's wire: messages in, one turn out."""

    def __init__(self, *, url, **kw):
        super().__init__(**kw)
        self.url = url

    def _post(self, payload):
        req = urllib.request.Request(self.url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=WAIT) as r:
            return json.loads(r.read())

    async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        assert not stream
        wire = []
        for m in messages:
            for c in m.contents:
                if c.type == "text":
                    wire.append({"role": str(m.role), "text": c.text})
                elif c.type == "function_result":
                    wire.append({"role": "tool", "call_id": c.call_id, "result": str(c.result)})
        turn = await asyncio.to_thread(self._post, {"messages": wire})
        if "call" in turn:
            call = turn["call"]
            contents = [Content.from_function_call(call["id"], call["name"], arguments=call["args"])]
        else:
            contents = [Content.from_text(turn["text"])]
        return ChatResponse(messages=[Message(role="assistant", contents=contents)], response_id="r")


class MockClient(FunctionInvocationLayer, ChatMiddlewareLayer, _Raw):
    """The raw client with Agent Framework's middleware and tool-calling layers."""


class Remote(hookwire.Interceptor):
    """Denies `wipe_disk`; redacts AWS keys from any tool's output."""

    name = "remote-policy"

    def pre_tool_call(self, ctx):
        if ctx.tool_name == "wipe_disk":
            return hookwire.deny("policy:destructive", "no wiping")
        return hookwire.allow()

    def post_tool_call(self, ctx):
        if SECRET in json.dumps(ctx.target):
            return hookwire.transform("$target", "[redacted]", reason="policy:secret")
        return hookwire.allow()


calls = []


@tool
def wipe_disk(device: str) -> str:
    """Wipes a device."""
    calls.append(("wipe_disk", device))
    return "wiped " + device


@tool
def read_config(name: str) -> str:
    """Reads a config file."""
    calls.append(("read_config", name))
    return "aws_key=" + SECRET


pytestmark = pytest.mark.filterwarnings("ignore:.*create_agent_hooks_middleware is experimental")


def run(coro):
    asyncio.run(asyncio.wait_for(coro, WAIT * 3))


def tool_results(model):
    """The tool results of the last model request (each carries the history)."""
    return [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]


def test_remote_deny_blocks_and_remote_transform_redacts_in_an_agent_run():
    calls.clear()
    model = MockModel([
        {"call": {"id": "c1", "name": "wipe_disk", "args": {"device": "/dev/sda"}}},
        {"call": {"id": "c2", "name": "read_config", "args": {"name": "prod"}}},
        {"text": "all done"},
    ])

    async def scenario():
        server = hookwire.Server(Remote(), "127.0.0.1", 0)
        port = await server.start()
        remote = RemoteInterceptor("http://127.0.0.1:%d" % port)
        try:
            agent = af.Agent(
                client=MockClient(url=model.url),
                name="assistant",
                tools=[wipe_disk, read_config],
                middleware=[create_agent_hooks_middleware({"hookwire": remote})],
            )
            result = await agent.run("clean up")
            assert result.text == "all done"
        finally:
            await remote.close()
            await server.stop(1.0)

    try:
        run(scenario())
        assert calls == [("read_config", "prod")], "the denied tool never ran"
        results = tool_results(model)
        assert len(results) == 2
        assert results[0]["call_id"] == "c1" and "policy:destructive" in results[0]["result"]
        assert SECRET not in json.dumps(model.requests)
        assert "[redacted]" in results[1]["result"]
    finally:
        model.close()


def test_a_killed_service_fails_the_run_closed():
    calls.clear()
    model = MockModel([{"call": {"id": "c1", "name": "read_config", "args": {"name": "prod"}}}])

    async def scenario():
        server = hookwire.Server(Remote(), "127.0.0.1", 0)
        port = await server.start()
        await server.stop(0)
        remote = RemoteInterceptor("http://127.0.0.1:%d" % port, timeout=2.0)
        agent = af.Agent(
            client=MockClient(url=model.url),
            name="assistant",
            tools=[read_config],
            middleware=[create_agent_hooks_middleware({"hookwire": remote})],
        )
        with pytest.raises(InterceptionBlocked) as e:
            await agent.run("read it")
        assert e.value.result.verdict.reason == "host_error:interceptor_failed"
        await remote.close()

    try:
        run(scenario())
        assert calls == []
        assert model.requests == [], "the run stopped before the model was called"
    finally:
        model.close()
