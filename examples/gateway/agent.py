#!/usr/bin/env python3
"""An agent written with the official model SDKs — `openai` for Chat
Completions and Responses, `anthropic` for Messages — governed by hookwire
through the gateway: it only knows its SDK's base URL (the gateway) and a
session header; the interceptors it is governed by (the demo's redactor at
`input`, its policy at `pre_tool_call`) are the gateway's business.

It runs one conversation: a request carrying an e-mail address, the model's
tool calls (one of them destructive), the tool results, the answer. The one
tool, `bash`, is simulated: nothing is executed on this machine.

The SDKs read their usual variables: OPENAI_BASE_URL and OPENAI_API_KEY
(Chat Completions, Responses), ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY
(Messages). Pointed at the gateway, any key will do when the gateway holds
the real one (`--key-env`), and the mock model takes any key.
"""

import argparse
import json
import os
import uuid

PROMPT = "Clean up the build directory, then mail a summary to ann@example.com"
SCHEMA = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
MODEL = "mock-model"


def run_tool(arguments):
    """A simulated shell: says what it would run."""
    cmd = arguments.get("cmd", "") if isinstance(arguments, dict) else ""
    return f"(simulated) $ {cmd}: README.md src target"


# Each API's turn: (text, [(call id, name, arguments dict)], finish) and what
# to append to the history for it and for its tool results.

class Chat:
    tools = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command",
                                               "parameters": SCHEMA}}]

    def __init__(self, session):
        from openai import OpenAI
        self.client = OpenAI(default_headers={"x-hookwire-session": session}, max_retries=0)
        self.history = [{"role": "user", "content": PROMPT}]

    def turn(self, stream):
        args = dict(model=MODEL, messages=self.history, tools=self.tools)
        if not stream:
            r = self.client.chat.completions.create(**args)
            m = r.choices[0].message
            calls = [(t.id, t.function.name, t.function.arguments) for t in m.tool_calls or []]
            text, finish = m.content or "", r.choices[0].finish_reason
        else:
            text, slots, finish = "", {}, None
            for chunk in self.client.chat.completions.create(stream=True, **args):
                if not chunk.choices:
                    continue
                c = chunk.choices[0]
                text += c.delta.content or ""
                for t in c.delta.tool_calls or []:
                    slot = slots.setdefault(t.index, ["", "", ""])
                    slot[0] += t.id or ""
                    slot[1] += (t.function and t.function.name) or ""
                    slot[2] += (t.function and t.function.arguments) or ""
                finish = c.finish_reason or finish
            calls = [tuple(slots[i]) for i in sorted(slots)]
        self.history.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]}
            if calls else {"role": "assistant", "content": text})
        return text, [(i, n, json.loads(a or "{}")) for i, n, a in calls], finish

    def results(self, outputs):
        self.history += [{"role": "tool", "tool_call_id": i, "content": out} for i, out in outputs]


class Responses:
    tools = [{"type": "function", "name": "bash", "description": "Run a shell command", "parameters": SCHEMA}]

    def __init__(self, session):
        from openai import OpenAI
        self.client = OpenAI(default_headers={"x-hookwire-session": session}, max_retries=0)
        self.history = [{"role": "user", "content": PROMPT}]

    def turn(self, stream):
        args = dict(model=MODEL, input=self.history, tools=self.tools)
        if not stream:
            r = self.client.responses.create(**args)
        else:
            # The SDK's stream helper checks the events' order as it
            # assembles the answer.
            with self.client.responses.stream(**args) as events:
                for _ in events:
                    pass
                r = events.get_final_response()
        calls = [(i.call_id, i.name, i.arguments) for i in r.output if i.type == "function_call"]
        text = r.output_text
        if text:
            self.history.append({"role": "assistant", "content": text})
        self.history += [{"type": "function_call", "call_id": i, "name": n, "arguments": a} for i, n, a in calls]
        return text, [(i, n, json.loads(a or "{}")) for i, n, a in calls], r.status

    def results(self, outputs):
        self.history += [{"type": "function_call_output", "call_id": i, "output": out} for i, out in outputs]


class Messages:
    tools = [{"name": "bash", "description": "Run a shell command", "input_schema": SCHEMA}]

    def __init__(self, session):
        from anthropic import Anthropic
        self.client = Anthropic(default_headers={"x-hookwire-session": session}, max_retries=0)
        self.history = [{"role": "user", "content": PROMPT}]

    def turn(self, stream):
        args = dict(model=MODEL, max_tokens=1024, messages=self.history, tools=self.tools)
        if not stream:
            m = self.client.messages.create(**args)
        else:
            # The SDK's stream helper checks the events' order as it
            # assembles the message.
            with self.client.messages.stream(**args) as events:
                for _ in events:
                    pass
                m = events.get_final_message()
        content = []
        for b in m.content:
            if b.type == "text":
                content.append({"type": "text", "text": b.text})
            elif b.type == "tool_use":
                content.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
        self.history.append({"role": "assistant", "content": content})
        text = "".join(b["text"] for b in content if b["type"] == "text")
        calls = [(b["id"], b["name"], b["input"]) for b in content if b["type"] == "tool_use"]
        return text, calls, m.stop_reason

    def results(self, outputs):
        self.history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": out} for i, out in outputs]})


APIS = {"chat": Chat, "responses": Responses, "messages": Messages}


def main():
    parser = argparse.ArgumentParser(
        description="An agent on the official openai / anthropic SDK, meant to run through "
                    "`hookwire gateway` (see examples/gateway/README.md).",
        epilog="example: OPENAI_BASE_URL=http://127.0.0.1:50160/v1 OPENAI_API_KEY=sk-any "
               "agent.py --api responses --stream")
    parser.add_argument("--api", choices=sorted(APIS), default="chat",
                        help="the wire API: chat (Chat Completions), responses (Responses), "
                             "messages (Anthropic Messages); default chat")
    parser.add_argument("--stream", action="store_true", help="stream every answer")
    args = parser.parse_args()
    base = "ANTHROPIC_BASE_URL" if args.api == "messages" else "OPENAI_BASE_URL"
    key = "ANTHROPIC_API_KEY" if args.api == "messages" else "OPENAI_API_KEY"
    missing = [v for v in (base, key) if not os.environ.get(v)]
    if missing:
        parser.error(f"set {' and '.join(missing)} (the gateway's URL, e.g. {base}="
                     f"{'http://127.0.0.1:50160' if args.api == 'messages' else 'http://127.0.0.1:50160/v1'};"
                     " any key when the gateway holds the real one)")
    session = f"example-{uuid.uuid4().hex[:8]}"
    agent = APIS[args.api](session)
    print(f"agent: session {session} ({args.api}{', streamed' if args.stream else ''})")
    print(f"agent: > {PROMPT}")
    for _ in range(4):
        text, calls, finish = agent.turn(args.stream)
        print(f"agent: < [{finish}] {text}")
        if not calls:
            break
        outputs = []
        for call_id, name, arguments in calls:
            print(f"agent: running {name} {json.dumps(arguments)}")
            outputs.append((call_id, run_tool(arguments)))
        agent.results(outputs)


if __name__ == "__main__":
    main()
