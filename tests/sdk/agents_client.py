"""The OpenAI Agents SDK (`openai-agents`), for the tests of
tests/sdk_upstreams.rs and gateway/tests/gateway/apis/ (see common.py for usage):
`Runner.run` of an agent with one function tool, on the SDK's default
Responses model (the default client pointed at the base URL) and on
`OpenAIChatCompletionsModel`. Tracing is disabled: nothing leaves the
machine.

Cases: responses, responses-stream (`Runner.run_streamed`), chat,
responses-error, chat-error (a request the upstream refuses).
"""

import asyncio

import openai
from openai import AsyncOpenAI

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from agents import __version__ as agents_version

from common import RATE_LIMITED, TOOLS, BASE_URL, error_of, headers, main, run_bash

set_tracing_disabled(True)

# What the agent's tool body ran, per case: a denied call must never get here.
EXECUTED = []


@function_tool
def bash(cmd: str) -> str:
    """Run a shell command.

    Args:
        cmd: The command line.
    """
    EXECUTED.append(cmd)
    return run_bash(cmd)


def client(session):
    return AsyncOpenAI(base_url=BASE_URL, max_retries=0, timeout=30, default_headers=headers(session))


def agent(session, chat):
    if chat:
        model = OpenAIChatCompletionsModel(model="test-model", openai_client=client(session))
    else:
        # The SDK's default: the model name resolved by its OpenAI provider,
        # on the Responses API, with the default client.
        set_default_openai_client(client(session), use_for_tracing=False)
        set_default_openai_api("responses")
        model = "test-model"
    return Agent(name="files", instructions="You manage files.", tools=[bash], model=model)


async def run(session, chat=False, stream=False, prompt=TOOLS):
    EXECUTED.clear()
    a = agent(session, chat)
    try:
        if stream:
            result = Runner.run_streamed(a, prompt)
            kinds = [event.type async for event in result.stream_events()]
        else:
            result = await Runner.run(a, prompt)
            kinds = []
    except openai.APIError as e:
        out = error_of(e)
        out["executed"] = list(EXECUTED)
        return out
    items = []
    for item in result.new_items:
        entry = {"type": item.type}
        if item.type == "message_output_item":
            entry["text"] = "".join(
                getattr(c, "text", "") for c in getattr(item.raw_item, "content", []) or []
            )
        if item.type == "tool_call_item":
            raw = item.raw_item
            entry["call_id"] = getattr(raw, "call_id", None)
            entry["arguments"] = getattr(raw, "arguments", None)
        items.append(entry)
    return {
        "final_output": result.final_output,
        "executed": list(EXECUTED),
        "items": items,
        "stream_event_types": sorted(set(kinds)),
    }


if __name__ == "__main__":
    main(
        {
            "responses": lambda s: asyncio.run(run(s)),
            "responses-stream": lambda s: asyncio.run(run(s, stream=True)),
            "chat": lambda s: asyncio.run(run(s, chat=True)),
            "responses-error": lambda s: asyncio.run(run(s, prompt=RATE_LIMITED)),
            "chat-error": lambda s: asyncio.run(run(s, chat=True, prompt=RATE_LIMITED)),
        },
        agents_version,
    )
