"""The official OpenAI Python SDK on the Responses API, for the tests of
tests/sdk_upstreams.rs and gateway/tests/gateway/apis/ (see common.py for usage).

Cases: text, text-stream, secret-stream (whole and streamed answers, the
stream read through the SDK's `responses.stream` helper), tools,
tools-stream (a tool-call loop re-sending the whole input), chain,
chain-stream (the loop continuing with `previous_response_id`),
unknown-previous (a `previous_response_id` the upstream does not have), error,
error-stream (a request the upstream refuses), bearer-less (no key),
retrieve (GET /v1/responses/{id}), chat-stream (Chat Completions through
the SDK's `chat.completions.stream` helper).
"""

import json

import openai
from openai import OpenAI

from common import PII, RATE_LIMITED, SECRET, SYSTEM, TOOLS, BASE_URL, error_of, headers, main, run_bash

TOOL = {
    "type": "function",
    "name": "bash",
    "description": "Run a shell command",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
    "strict": True,
}

LIFECYCLE = ("response.completed", "response.incomplete", "response.failed")


def client(session):
    return OpenAI(base_url=BASE_URL, max_retries=0, timeout=30, default_headers=headers(session))


def summary(r):
    """What a client keeps of a whole response."""
    return {
        "id": r.id,
        "status": r.status,
        "text": r.output_text,
        "incomplete": r.incomplete_details.reason if r.incomplete_details else None,
        "output_types": [o.type for o in r.output],
        "calls": [
            {"call_id": o.call_id, "name": o.name, "arguments": o.arguments}
            for o in r.output
            if o.type == "function_call"
        ],
    }


def streamed(c, **kwargs):
    """A streamed response read through the SDK's stream helper: the event
    types in order, the text deltas, and the response the helper assembled
    (or, for a stream that did not complete, the one its last event
    carried)."""
    types, deltas, last = [], "", None
    with c.responses.stream(model="test-model", **kwargs) as stream:
        for event in stream:
            types.append(event.type)
            if event.type == "response.output_text.delta":
                deltas += event.delta
            if event.type in LIFECYCLE:
                last = event.response
        try:
            final = stream.get_final_response()
        except RuntimeError:
            final = last
    out = summary(final) if final is not None else {}
    out.update({"events": types, "deltas": deltas})
    return out


def text(session, stream=False, prompt=PII):
    c = client(session)
    try:
        if stream:
            return streamed(c, instructions=SYSTEM, input=prompt)
        return summary(c.responses.create(model="test-model", instructions=SYSTEM, input=prompt))
    except openai.APIError as e:
        return error_of(e)


def tools(session, stream=False):
    """A tool loop: the model proposes shell commands, the agent runs each
    call it receives and sends the outputs back with the whole input, the
    model answers."""
    c = client(session)
    items = [{"role": "user", "content": TOOLS}]
    turns, executed = [], []
    for _ in range(4):
        try:
            if stream:
                r = streamed(c, input=items, tools=[TOOL])
            else:
                r = summary(c.responses.create(model="test-model", input=items, tools=[TOOL]))
        except openai.APIError as e:
            turns.append(error_of(e))
            break
        turns.append(r)
        if not r["calls"]:
            break
        if r["text"]:
            items.append({"role": "assistant", "content": r["text"]})
        for call in r["calls"]:
            items.append({"type": "function_call", **call})
        for call in r["calls"]:
            cmd = json.loads(call["arguments"]).get("cmd", "")
            executed.append(cmd)
            items.append({"type": "function_call_output", "call_id": call["call_id"], "output": run_bash(cmd)})
    return {"turns": turns, "executed": executed}


def chain(session, stream=False):
    """A tool loop over a stored conversation: each request continues the
    last answer with `previous_response_id` and sends only the outputs of
    the calls it received."""
    c = client(session)
    turns, executed = [], []
    new_items, previous = TOOLS, None
    for _ in range(4):
        kwargs = {"previous_response_id": previous} if previous else {}
        try:
            if stream:
                r = streamed(c, input=new_items, tools=[TOOL], **kwargs)
            else:
                r = summary(c.responses.create(model="test-model", input=new_items, tools=[TOOL], **kwargs))
        except openai.APIError as e:
            turns.append(error_of(e))
            break
        turns.append(r)
        if not r["calls"]:
            break
        previous, new_items = r["id"], []
        for call in r["calls"]:
            cmd = json.loads(call["arguments"]).get("cmd", "")
            executed.append(cmd)
            new_items.append({"type": "function_call_output", "call_id": call["call_id"], "output": run_bash(cmd)})
    return {"turns": turns, "executed": executed}


def unknown_previous(session):
    try:
        return summary(client(session).responses.create(model="test-model", input="hello", previous_response_id="resp_gone"))
    except openai.APIError as e:
        return error_of(e)


def no_key(session):
    try:
        c = client(session)
        r = c.responses.create(model="test-model", input="hello", extra_headers={"Authorization": openai.omit})
        return summary(r)
    except openai.APIError as e:
        return error_of(e)


def retrieve(session):
    try:
        return summary(client(session).responses.retrieve("resp_unknown"))
    except openai.APIError as e:
        return error_of(e)


def chat_stream(session):
    c = client(session)
    try:
        with c.chat.completions.stream(
            model="test-model", messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": PII}]
        ) as stream:
            types = [event.type for event in stream]
            final = stream.get_final_completion()
        choice = final.choices[0]
        return {"text": choice.message.content, "finish_reason": choice.finish_reason, "events": types}
    except openai.APIError as e:
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
            "chain": lambda s: chain(s),
            "chain-stream": lambda s: chain(s, stream=True),
            "unknown-previous": unknown_previous,
            "bearer-less": no_key,
            "retrieve": retrieve,
            "chat-stream": chat_stream,
        },
        openai.__version__,
    )
