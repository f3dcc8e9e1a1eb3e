"""The official OpenAI Python SDK against `hookwire gateway`, for gateway/tests/logged/.

Usage: gateway_sdk.py CASE BASE_URL [ARG]

Each case talks to the gateway at BASE_URL the way an agent would and prints
one JSON object on stdout with what the SDK returned (or the error it raised),
for the Rust test to assert on. Retries are off so that a refused request is
seen once. The API key is whatever OPENAI_API_KEY holds (the gateway may
replace it with a pooled key).
"""

import json
import sys

import openai
from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {
                "type": "object",
                "properties": {"cmd": {"type": "string"}},
                "required": ["cmd"],
            },
        },
    }
]


def client(base_url, headers=None):
    return OpenAI(base_url=base_url, max_retries=0, timeout=30, default_headers=headers or {})


def error_of(e):
    body = getattr(e, "body", None)
    return {
        "error": type(e).__name__,
        "status": getattr(e, "status_code", None),
        "body": body,
        "message": str(e),
    }


def collect_stream(stream):
    """The text, tool calls and finish reason of a streamed answer."""
    text, calls, finish = "", {}, None
    for chunk in stream:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta.content:
            text += delta.content
        for tc in delta.tool_calls or []:
            slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] += tc.id or ""
            if tc.function:
                slot["name"] += tc.function.name or ""
                slot["arguments"] += tc.function.arguments or ""
        if choice.finish_reason:
            finish = choice.finish_reason
    return text, [calls[i] for i in sorted(calls)], finish


def chat(base_url, stream, session=None):
    """One question carrying an e-mail address, answered in one piece or streamed."""
    c = client(base_url, {"x-hookwire-session": session} if session else None)
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Write to ann@example.com about the report."},
    ]
    try:
        if stream:
            text, calls, finish = collect_stream(
                c.chat.completions.create(model="test-model", messages=messages, stream=True)
            )
            return {"content": text, "tool_calls": calls, "finish_reason": finish}
        r = c.chat.completions.create(model="test-model", messages=messages)
        return {"content": r.choices[0].message.content, "finish_reason": r.choices[0].finish_reason}
    except openai.APIError as e:
        return error_of(e)


def tools(base_url, stream):
    """A tool loop: the model proposes two shell commands, the agent runs what
    it receives and sends the results back, the model answers."""
    c = client(base_url, {"x-hookwire-session": "tools-stream" if stream else "tools"})
    messages = [{"role": "user", "content": "List the files, then clean up. Report to bob@example.com"}]
    transcript = []
    for _ in range(4):
        if stream:
            text, calls, finish = collect_stream(
                c.chat.completions.create(
                    model="test-model", messages=messages, tools=TOOLS, stream=True
                )
            )
        else:
            r = c.chat.completions.create(model="test-model", messages=messages, tools=TOOLS)
            m = r.choices[0].message
            text, finish = m.content, r.choices[0].finish_reason
            calls = [
                {"id": t.id, "name": t.function.name, "arguments": t.function.arguments}
                for t in (m.tool_calls or [])
            ]
        transcript.append({"content": text, "tool_calls": calls, "finish_reason": finish})
        if not calls:
            break
        messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": t["id"], "type": "function",
                     "function": {"name": t["name"], "arguments": t["arguments"]}}
                    for t in calls
                ],
            }
        )
        for t in calls:
            cmd = json.loads(t["arguments"]).get("cmd", "")
            result = "a.txt\nb.txt" if cmd == "ls" else "AWS_SECRET_ACCESS_KEY=abc" if cmd == "env" else "ok"
            messages.append({"role": "tool", "tool_call_id": t["id"], "content": result})
    return {"turns": transcript}


def expect_error(base_url, headers=None, stream=False):
    """One request that the gateway (or the upstream) should refuse."""
    c = client(base_url, headers)
    try:
        r = c.chat.completions.create(
            model="test-model",
            messages=[{"role": "user", "content": "hello"}],
            stream=stream,
        )
        if stream:
            text, _, finish = collect_stream(r)
            return {"content": text, "finish_reason": finish}
        return {"content": r.choices[0].message.content, "finish_reason": r.choices[0].finish_reason}
    except openai.APIError as e:
        return error_of(e)


def retried(base_url, timeout):
    """One tool-proposing request with the SDK's default retries and a
    short timeout: the gateway holds it (an approval), the SDK times out
    and retries; what the SDK finally gets, and how many attempts it made."""
    import logging

    attempts = []

    class Count(logging.Handler):
        def emit(self, record):
            if "Retrying request" in record.getMessage():
                attempts.append(record.getMessage())

    log = logging.getLogger("openai")
    log.setLevel(logging.INFO)
    log.addHandler(Count())
    c = OpenAI(base_url=base_url, max_retries=2, timeout=float(timeout))
    try:
        r = c.chat.completions.create(
            model="test-model",
            messages=[{"role": "user", "content": "List the files"}],
            tools=TOOLS,
        )
        calls = [t.function.arguments for t in r.choices[0].message.tool_calls or []]
        out = {"calls": calls, "finish_reason": r.choices[0].finish_reason}
    except openai.APIError as e:
        out = error_of(e)
    out["retries"] = len(attempts)
    return out


def callback(base_url, token):
    """An interceptor's own model call, with the token the gateway issued."""
    return expect_error(base_url, {"x-hookwire-callback": token})


def models(base_url):
    try:
        return {"models": [m.id for m in client(base_url).models.list()]}
    except openai.APIError as e:
        return error_of(e)


def main():
    case, base_url = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    out = {
        "chat": lambda: chat(base_url, False, arg),
        "chat-stream": lambda: chat(base_url, True, arg),
        "tools": lambda: tools(base_url, False),
        "tools-stream": lambda: tools(base_url, True),
        "plain": lambda: expect_error(base_url),
        "plain-stream": lambda: expect_error(base_url, stream=True),
        "callback": lambda: callback(base_url, arg),
        "retried": lambda: retried(base_url, arg),
        "models": lambda: models(base_url),
    }[case]()
    out["sdk_version"] = openai.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
