"""The official Anthropic Python SDK on the Messages API, for the tests of
tests/sdk_upstreams.rs and gateway/tests/gateway/apis/ (see common.py for usage).

Cases: text, text-stream, secret-stream (whole and streamed answers, the
stream read through the SDK's `messages.stream` helper), tools,
tools-stream (a tool-use loop), error, error-stream (a request the
upstream refuses), no-key (the key's header omitted),
count-tokens (POST /v1/messages/count_tokens).
"""

import json

import anthropic
from anthropic import Anthropic

from common import PII, RATE_LIMITED, SECRET, SYSTEM, TOOLS, BASE_URL, error_of, headers, main, run_bash

TOOL = {
    "name": "bash",
    "description": "Run a shell command",
    "input_schema": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
    },
}

MODEL = "claude-test"


def client(session):
    return Anthropic(base_url=BASE_URL, max_retries=0, timeout=30, default_headers=headers(session))


def summary(m):
    """What a client keeps of a whole message."""
    return {
        "id": m.id,
        "text": "".join(b.text for b in m.content if b.type == "text"),
        "stop_reason": m.stop_reason,
        "block_types": [b.type for b in m.content],
        "calls": [{"id": b.id, "name": b.name, "input": b.input} for b in m.content if b.type == "tool_use"],
    }


def streamed(c, **kwargs):
    """A streamed message read through the SDK's stream helper: the raw
    event types in order, the text it yielded, and the message it
    assembled."""
    types, deltas = [], ""
    with c.messages.stream(model=MODEL, max_tokens=256, **kwargs) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "text":
                deltas += event.text
        final = stream.get_final_message()
    out = summary(final)
    out.update({"events": [t for t in types if t not in ("text", "input_json")], "deltas": deltas})
    return out


def text(session, stream=False, prompt=PII):
    c = client(session)
    try:
        if stream:
            return streamed(c, system=SYSTEM, messages=[{"role": "user", "content": prompt}])
        return summary(
            c.messages.create(
                model=MODEL, max_tokens=256, system=SYSTEM, messages=[{"role": "user", "content": prompt}]
            )
        )
    except anthropic.APIError as e:
        return error_of(e)


def tools(session, stream=False):
    """A tool-use loop: the model proposes shell commands, the agent runs
    each tool_use it receives and answers with tool_result blocks, the
    model answers."""
    c = client(session)
    messages = [{"role": "user", "content": TOOLS}]
    turns, executed = [], []
    for _ in range(4):
        try:
            if stream:
                r = streamed(c, messages=messages, tools=[TOOL])
            else:
                r = summary(c.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=[TOOL]))
        except anthropic.APIError as e:
            turns.append(error_of(e))
            break
        turns.append(r)
        if not r["calls"]:
            break
        content = [{"type": "text", "text": r["text"]}] if r["text"] else []
        content += [{"type": "tool_use", **call} for call in r["calls"]]
        messages.append({"role": "assistant", "content": content})
        results = []
        for call in r["calls"]:
            cmd = call["input"].get("cmd", "")
            executed.append(cmd)
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": run_bash(cmd)})
        messages.append({"role": "user", "content": results})
    return {"turns": turns, "executed": executed}


def no_key(session):
    try:
        r = client(session).messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "hello"}],
            extra_headers={"Authorization": anthropic.omit},
        )
        return summary(r)
    except anthropic.APIError as e:
        return error_of(e)


def count_tokens(session):
    try:
        r = client(session).messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hello"}])
        return {"input_tokens": r.input_tokens}
    except anthropic.APIError as e:
        return error_of(e)


if __name__ == "__main__":
    main(
        {
            "text": lambda s: text(s),
            "text-stream": lambda s: text(s, stream=True),
            "secret-stream": lambda s: text(s, stream=True, prompt=SECRET),
            "tools": lambda s: tools(s),
            "tools-stream": lambda s: tools(s, stream=True),
            "error": lambda s: text(s, prompt=RATE_LIMITED),
            "error-stream": lambda s: text(s, stream=True, prompt=RATE_LIMITED),
            "no-key": no_key,
            "count-tokens": count_tokens,
        },
        anthropic.__version__,
    )
