#!/usr/bin/env python3
"""A Microsoft Agent Framework agent governed by a hookwire interceptor
service, on public APIs only: the agent's chat client is Agent Framework's
own OpenAI Chat Completions client (``agent-framework-openai``), pointed at
a model's base URL; its governance is Agent Framework's
``create_agent_hooks_middleware`` (AGENT-HOOKS-0.1 in the framework) with
hookwire's ``RemoteInterceptor`` (``hookwire.agent_hooks``), which calls a
hookwire interceptor service over gRPC at every point and fails closed.

With no key and no network: the mock model of ``examples/gateway/`` asks
for ``bash`` calls ``ls -la`` and ``rm -rf /tmp/build``; the policy denies
the second at ``pre_tool_call``, so it never runs and the model is told it
was blocked. Either policy does: ``examples/python/policy.py`` or the
demo's (``hookwire serve-demo``, 127.0.0.1:50151). Each interception record
is printed as it is made.

    .cache/venv/bin/python examples/gateway/mock_model.py &
    .cache/venv/bin/python examples/python/policy.py --port 50151 &    # or: hookwire serve-demo &
    .cache/venv/bin/python examples/python/agent_framework_agent.py
"""

import argparse
import asyncio
import os
import sys
import warnings

from agent_framework import Agent, create_agent_hooks_middleware, tool
from agent_framework.openai import OpenAIChatCompletionClient
from agent_hooks import InterceptionBlocked

from hookwire.agent_hooks import RemoteInterceptor

# Agent Framework marks the middleware experimental; this example is about it.
warnings.filterwarnings("ignore", message=".*create_agent_hooks_middleware is experimental")

PROMPT = "Clean up the build directory, then mail a summary to ann@example.com"


@tool
def bash(cmd: str) -> str:
    """Run a shell command (simulated: nothing is executed)."""
    print(f"agent: running bash {cmd!r}", flush=True)
    return f"(simulated) $ {cmd}: README.md src target"


def show(record):
    """Prints one interception record: the point and the combined verdict."""
    verdict = record.verdict
    reason = f" {verdict.reason}" if getattr(verdict, "reason", None) else ""
    point, decision = (getattr(v, "value", v) for v in (record.interception_point, verdict.decision))
    print(f"record: {point} -> {decision}{reason}", flush=True)


async def main():
    parser = argparse.ArgumentParser(
        description="An Agent Framework agent (its OpenAI Chat Completions client) governed by a "
                    "hookwire interceptor service through create_agent_hooks_middleware.",
        epilog="example: agent_framework_agent.py --model-url http://127.0.0.1:50161/v1 "
               "--policy http://127.0.0.1:50151")
    parser.add_argument("--model-url", default="http://127.0.0.1:50161/v1",
                        help="the OpenAI-compatible base URL (default the mock model, "
                             "http://127.0.0.1:50161/v1; a hookwire gateway's works too)")
    parser.add_argument("--model", default="mock-model", help="the model name (default mock-model)")
    parser.add_argument("--policy", default="http://127.0.0.1:50151",
                        help="the hookwire interceptor service (default http://127.0.0.1:50151, "
                             "where `hookwire serve-demo` serves its policy)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="the variable holding the model's key (default OPENAI_API_KEY; "
                             "the mock takes any key, so a placeholder is used when it is unset)")
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="seconds per interceptor call (default 5, the spec's recommendation)")
    args = parser.parse_args()

    key = os.environ.get(args.api_key_env) or "sk-example-not-a-real-key"
    client = OpenAIChatCompletionClient(model=args.model, base_url=args.model_url, api_key=key)
    policy = RemoteInterceptor(args.policy, timeout=args.timeout)
    agent = Agent(
        client=client,
        name="assistant",
        instructions="You are a careful build assistant.",
        tools=[bash],
        middleware=[create_agent_hooks_middleware({"policy": policy}, record_sink=show)],
    )
    print(f"agent: > {PROMPT}", flush=True)
    try:
        result = await agent.run(PROMPT)
    except InterceptionBlocked as e:
        # A run-level deny, or the service unreachable: the run stops, closed.
        print(f"agent: stopped: {e.result.verdict.reason}", flush=True)
        return 3
    finally:
        await policy.close()
    print(f"agent: < {result.text}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
