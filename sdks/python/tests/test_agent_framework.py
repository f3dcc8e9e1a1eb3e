"""Microsoft Agent Framework with a hookwire service bound through the
bridge, on the framework's public API only: ``create_agent_hooks_middleware``
around an agent whose chat client is Agent Framework's own OpenAI Chat
Completions client (``agent-framework-openai``), talking to a scripted Chat
Completions server on 127.0.0.1:0. A remote deny blocks a tool call, a
remote transform redacts a tool's output, and a killed service fails the
run closed. The shipped example (examples/python/agent_framework_agent.py)
runs end to end against the mock model of examples/gateway/ and the policy
of examples/python/."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import agent_framework as af
import pytest
from agent_framework import create_agent_hooks_middleware, tool
from agent_framework.openai import OpenAIChatCompletionClient
from agent_hooks import InterceptionBlocked

import hookwire
from hookwire.agent_hooks import RemoteInterceptor
from helpers import WAIT

SECRET = "AKIAABCDEFGHIJKLMNOP"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class MockModel:
    """A Chat Completions server answering each POST with the next scripted
    turn (a tool call or a text, as a ``chat.completion``), recording every
    request body."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                turn = model.script.pop(0) if model.script else {"text": "done"}
                if "call" in turn:
                    call = turn["call"]
                    message = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": call["id"], "type": "function",
                         "function": {"name": call["name"], "arguments": json.dumps(call["args"])}}]}
                    finish = "tool_calls"
                else:
                    message, finish = {"role": "assistant", "content": turn["text"]}, "stop"
                data = json.dumps({
                    "id": "chatcmpl-%d" % len(model.requests), "object": "chat.completion",
                    "created": 1700000000, "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/v1" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def client(self):
        """Agent Framework's OpenAI Chat Completions client, pointed here."""
        return OpenAIChatCompletionClient(model="mock-model", base_url=self.url, api_key="sk-test")

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


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


def text(content):
    """A Chat Completions message content as text (a string or text parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


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
                client=model.client(),
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
        assert results[0]["tool_call_id"] == "c1" and "policy:destructive" in text(results[0]["content"])
        assert SECRET not in json.dumps(model.requests)
        assert "[redacted]" in text(results[1]["content"])
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
            client=model.client(),
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


class Spawned:
    """A child process on the venv's interpreter whose output lines are
    read on a thread; killed on close."""

    def __init__(self, *args, stream="stdout"):
        self.proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL,
                                     stderr=subprocess.PIPE if stream == "stderr" else subprocess.DEVNULL,
                                     text=True)
        self.lines = []
        self.cond = threading.Condition()
        pipe = self.proc.stdout if stream == "stdout" else self.proc.stderr
        threading.Thread(target=self._read, args=(pipe,), daemon=True).start()

    def _read(self, pipe):
        for line in pipe:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def line_starting(self, prefix):
        """The first line starting with ``prefix``, waited for (bounded)."""
        with self.cond:
            found = self.cond.wait_for(
                lambda: next((l for l in self.lines if l.startswith(prefix)), None), timeout=WAIT * 3)
        assert found, "no line starting with %r in %r" % (prefix, self.lines)
        return found

    def close(self):
        self.proc.kill()
        self.proc.wait()


def test_the_shipped_example_runs_with_the_mock_model_and_the_policy_denies_rm():
    model = Spawned(os.path.join(ROOT, "examples/gateway/mock_model.py"), "--listen", "127.0.0.1:0",
                    stream="stderr")
    policy = Spawned(os.path.join(ROOT, "examples/python/policy.py"), "--port", "0")
    try:
        model_url = model.line_starting("mock model: listening on ").split()[4] + "/v1"
        port = policy.line_starting("PORT ").split()[1]
        run = subprocess.run(
            [sys.executable, os.path.join(ROOT, "examples/python/agent_framework_agent.py"),
             "--model-url", model_url, "--policy", "http://127.0.0.1:%s" % port],
            cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=WAIT * 6,
            env=dict(os.environ, OPENAI_API_KEY="sk-example", NO_PROXY="127.0.0.1,localhost"))
        out = run.stdout
        assert run.returncode == 0, run.stderr + out
        assert "record: pre_tool_call -> deny policy:destructive_command" in out
        assert "agent: running bash 'ls -la'" in out
        assert "rm -rf" not in "".join(l for l in out.splitlines() if l.startswith("agent: running"))
        answer = next(l for l in out.splitlines() if l.startswith("agent: < "))
        assert "(simulated) $ ls -la" in answer and "policy:destructive_command" in answer, out
        assert "record: input -> transform policy:pii_redacted" in out
        said = model.line_starting("mock model: \"POST /v1/chat/completions")
        assert "[redacted:email]" in said and "ann@example.com" not in said, said
    finally:
        model.close()
        policy.close()
