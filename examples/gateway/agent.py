"""An agent written with the official OpenAI Python SDK, governed by hookwire
through the gateway: it only knows OPENAI_BASE_URL (the gateway) and a
session header; the interceptors it is governed by (the demo's redactor at
`input`, its policy at `pre_tool_call`) are the gateway's business.

It runs one conversation: a request carrying an e-mail address, the model's
tool calls (one of them destructive), the tool results, the answer. Tools are
simulated (nothing is executed on this machine).

Usage: OPENAI_BASE_URL=http://127.0.0.1:50160/v1 OPENAI_API_KEY=... agent.py [--stream]
"""

import json
import sys
import uuid

from openai import OpenAI

TOOLS = [{
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                       "required": ["cmd"]},
    },
}]


def run_tool(name, arguments):
    """A simulated shell: prints what it would run."""
    cmd = json.loads(arguments).get("cmd", "")
    return f"(simulated) $ {cmd}\nREADME.md  src  target"


def ask(client, messages, stream):
    if not stream:
        r = client.chat.completions.create(model="mock-model", messages=messages, tools=TOOLS)
        m = r.choices[0].message
        calls = [(t.id, t.function.name, t.function.arguments) for t in m.tool_calls or []]
        return m.content, calls, r.choices[0].finish_reason
    text, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(
        model="mock-model", messages=messages, tools=TOOLS, stream=True
    ):
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        text += c.delta.content or ""
        for t in c.delta.tool_calls or []:
            slot = calls.setdefault(t.index, ["", "", ""])
            slot[0] += t.id or ""
            slot[1] += (t.function and t.function.name) or ""
            slot[2] += (t.function and t.function.arguments) or ""
        finish = c.finish_reason or finish
    return text, [tuple(calls[i]) for i in sorted(calls)], finish


def main():
    stream = "--stream" in sys.argv
    session = f"example-{uuid.uuid4().hex[:8]}"
    client = OpenAI(default_headers={"x-hookwire-session": session}, max_retries=0)
    messages = [{"role": "user",
                 "content": "Clean up the build directory, then mail a summary to ann@example.com"}]
    print(f"agent: session {session}{' (streaming)' if stream else ''}")
    print(f"agent: > {messages[0]['content']}")
    for _ in range(4):
        text, calls, finish = ask(client, messages, stream)
        print(f"agent: < [{finish}] {text or ''}")
        if not calls:
            break
        messages.append({"role": "assistant", "content": text, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls]})
        for call_id, name, arguments in calls:
            print(f"agent: running {name} {arguments}")
            messages.append({"role": "tool", "tool_call_id": call_id,
                             "content": run_tool(name, arguments)})


if __name__ == "__main__":
    main()
