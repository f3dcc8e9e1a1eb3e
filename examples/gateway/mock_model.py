#!/usr/bin/env python3
"""A scripted model server on loopback speaking the three wire APIs
`hookwire gateway` governs, so its examples run without a provider key:

- OpenAI Chat Completions  POST /v1/chat/completions   (OpenAI base URL http://HOST:PORT/v1)
- OpenAI Responses         POST /v1/responses
- Anthropic Messages       POST /v1/messages           (Anthropic base URL http://HOST:PORT)

each whole or streamed (server-sent events with the provider's own event
types in the provider's order), plus GET /v1/models and
POST /v1/messages/count_tokens. Errors are the provider's own shapes and
statuses: OpenAI's {"error": {"message", "type", "param", "code"}},
Anthropic's {"type": "error", "error": {"type", "message"}}; a request
without a key is a 401, a missing required member a 400, an unknown route a
404. Python 3 standard library only.

The script, the same in every API:
- a request whose last turn is tool results is answered with a text
  summing them up ("Here is what I found: ...");
- a user turn mentioning "rate limit me" is answered with the API's 429;
- otherwise, when the request offers a tool named `bash`, the model asks
  for two calls of it: {"cmd": "ls -la"} and the destructive
  {"cmd": "rm -rf /tmp/build"} (what the gateway's policy is there to stop);
- otherwise it greets, echoing what the user said.

Each request is logged on stderr with the user's last words as they arrived
(so a redaction upstream of the model shows).
"""

import argparse
import collections
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: The largest request body read (a bigger one is a 413).
MAX_BODY = 8 * 1024 * 1024
#: How many Responses answers are kept for `previous_response_id`.
MAX_STORED = 1000
#: The two calls the script asks for: (short name, command).
CALLS = (("ls", "ls -la"), ("rm", "rm -rf /tmp/build"))

_ids = itertools.count(1)
_stored = collections.OrderedDict()
_stored_lock = threading.Lock()


def next_id():
    return next(_ids)


def pieces(text, n=8):
    """A text cut into deltas of at most `n` characters."""
    return [text[i:i + n] for i in range(0, len(text), n)] or []


def halves(text):
    return text[: len(text) // 2], text[len(text) // 2:]


def answer(user, results, tools):
    """The script: ("error", None) for the 429, ("text", TEXT) or
    ("calls", [(short, arguments dict)])."""
    if results:
        return "text", "Here is what I found: " + " | ".join(results)
    if "rate limit me" in user:
        return "error", None
    if "bash" in tools:
        return "calls", [(short, {"cmd": cmd}) for short, cmd in CALLS]
    return "text", "Hello from the mock model. You said: " + user


def text_of(content, kinds=("text", "input_text", "output_text")):
    """The text of a content member: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type") in kinds)
    return ""


# --- the three APIs: what the script sees in a request -----------------------

def chat_view(body):
    messages = body.get("messages") or []
    tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    last = messages[-1] if messages else {}
    results = []
    if last.get("role") == "tool":
        results = [text_of(m.get("content")) for m in messages if m.get("role") == "tool"]
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    return (users[-1] if users else ""), results, tools


def responses_items(body):
    value = body.get("input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value) if isinstance(value, list) else []


def responses_view(items, body):
    tools = {t.get("name") for t in body.get("tools") or [] if t.get("type") == "function"}
    last = items[-1] if items else {}
    results = []
    if last.get("type") == "function_call_output":
        results = [text_of(i.get("output")) for i in items if i.get("type") == "function_call_output"]
    users = [text_of(i.get("content")) for i in items if i.get("role") == "user"]
    return (users[-1] if users else ""), results, tools


def messages_view(body):
    messages = body.get("messages") or []
    tools = {t.get("name") for t in body.get("tools") or []}
    last = messages[-1] if messages else {}

    def blocks(m, kind):
        c = m.get("content")
        return [b for b in c if isinstance(b, dict) and b.get("type") == kind] if isinstance(c, list) else []

    results = []
    if blocks(last, "tool_result"):
        results = [text_of(b.get("content")) for m in messages for b in blocks(m, "tool_result")]
    users = [text_of(m.get("content")) for m in messages
             if m.get("role") == "user" and text_of(m.get("content"))]
    return (users[-1] if users else ""), results, tools


def openai_error(message, kind="invalid_request_error", code=None, param=None):
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def anthropic_error(kind, message):
    return {"type": "error", "error": {"type": kind, "message": message}}


class Handler(BaseHTTPRequestHandler):
    """One request: routed by path to its API."""

    server_version = "mock-model/1"
    #: A client that stalls longer than this mid-request is dropped.
    timeout = 30
    said = ""

    def log_message(self, fmt, *args):
        if not self.server.quiet:
            sys.stderr.write("mock model: %s%s\n" % (fmt % args, self.said))
            sys.stderr.flush()

    # --- plumbing -------------------------------------------------------

    def send_json(self, status, value, headers=()):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, v in headers:
            self.send_header(name, v)
        self.end_headers()
        self.wfile.write(data)

    def open_stream(self, headers=()):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        for name, v in headers:
            self.send_header(name, v)
        self.end_headers()

    def event(self, name, data):
        """One SSE frame: `event: NAME` (when named) and its data."""
        head = ("event: %s\n" % name) if name else ""
        self.wfile.write((head + "data: " + data + "\n\n").encode())
        self.wfile.flush()

    def body(self, fail):
        """The JSON body, or None after `fail(status, message)` answered."""
        try:
            length = int(self.headers.get("content-length") or "0")
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            fail(413, "The request body is larger than %d bytes." % MAX_BODY)
            return None
        try:
            value = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            value = None
        if not isinstance(value, dict):
            fail(400, "We could not parse the JSON body of your request.")
            return None
        return value

    def bearer(self):
        auth = self.headers.get("authorization") or ""
        return auth[len("Bearer "):].strip() if auth.startswith("Bearer ") else ""

    def route(self):
        return self.path.split("?", 1)[0]

    # --- routes ---------------------------------------------------------

    def do_GET(self):  # noqa: N802
        if self.route() != "/v1/models":
            return self.not_found()
        if self.headers.get("anthropic-version"):
            return self.send_json(200, {"data": [{"type": "model", "id": "mock-model",
                                                  "display_name": "Mock model",
                                                  "created_at": "2026-01-01T00:00:00Z"}],
                                        "has_more": False, "first_id": "mock-model",
                                        "last_id": "mock-model"})
        self.send_json(200, {"object": "list", "data": [
            {"id": "mock-model", "object": "model", "created": 0, "owned_by": "hookwire-example"}]})

    def do_POST(self):  # noqa: N802
        route = self.route()
        if route == "/v1/chat/completions":
            return self.chat_completions()
        if route == "/v1/responses":
            return self.openai_responses()
        if route == "/v1/messages":
            return self.anthropic_messages()
        if route == "/v1/messages/count_tokens":
            return self.count_tokens()
        return self.not_found()

    def not_found(self):
        if self.route().startswith("/v1/messages"):
            return self.send_json(404, anthropic_error("not_found_error", "Not Found"))
        self.send_json(404, openai_error("Invalid URL (%s %s)." % (self.command, self.route())))

    # --- OpenAI Chat Completions ---------------------------------------

    def chat_completions(self):
        def fail(status, message, code=None, param=None):
            self.send_json(status, openai_error(message, code=code, param=param))

        body = self.body(fail)
        if body is None:
            return
        if not self.bearer():
            return self.send_json(401, openai_error("You didn't provide an API key.", code=None))
        for member in ("model", "messages"):
            if member not in body:
                return fail(400, "Missing required parameter: '%s'." % member,
                            "missing_required_parameter", member)
        user, results, tools = chat_view(body)
        self.said = " (user said: %r)" % user
        kind, value = answer(user, results, tools)
        if kind == "error":
            return self.send_json(429, openai_error("Rate limit reached for mock-model.", "requests",
                                                    "rate_limit_exceeded"))
        n = next_id()
        content = value if kind == "text" else None
        calls = [{"id": "call_%s" % short, "type": "function",
                  "function": {"name": "bash", "arguments": json.dumps(args)}}
                 for short, args in (value if kind == "calls" else [])]
        finish = "tool_calls" if calls else "stop"
        base = {"id": "chatcmpl-mock%d" % n, "created": int(time.time()),
                "model": body["model"], "system_fingerprint": None}
        usage = {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}
        if not body.get("stream"):
            message = {"role": "assistant", "content": content, "refusal": None}
            if calls:
                message["tool_calls"] = calls
            return self.send_json(200, dict(base, object="chat.completion", usage=usage, choices=[
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}]))
        include_usage = (body.get("stream_options") or {}).get("include_usage")
        self.open_stream()

        def chunk(delta, finish_reason=None):
            value = dict(base, object="chat.completion.chunk", choices=[
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}])
            if include_usage:
                value["usage"] = None
            self.event(None, json.dumps(value))

        chunk({"role": "assistant", "content": "" if content is not None else None, "refusal": None})
        for piece in pieces(content or ""):
            chunk({"content": piece})
        for i, call in enumerate(calls):
            first, rest = halves(call["function"]["arguments"])
            chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                   "function": {"name": "bash", "arguments": first}}]})
            chunk({"tool_calls": [{"index": i, "function": {"arguments": rest}}]})
        chunk({}, finish)
        if include_usage:
            self.event(None, json.dumps(dict(base, object="chat.completion.chunk", choices=[], usage=usage)))
        self.event(None, "[DONE]")

    # --- OpenAI Responses -------------------------------------------------

    def openai_responses(self):
        def fail(status, message, code=None, param=None):
            self.send_json(status, openai_error(message, code=code, param=param))

        body = self.body(fail)
        if body is None:
            return
        if not self.bearer():
            return self.send_json(401, openai_error("You didn't provide an API key."))
        if not isinstance(body.get("model"), str):
            return fail(400, "Missing required parameter: 'model'.", "missing_required_parameter", "model")
        items = responses_items(body)
        previous = body.get("previous_response_id")
        if previous:
            with _stored_lock:
                stored = _stored.get(previous)
            if stored is None:
                return self.send_json(404, openai_error(
                    "Previous response with id '%s' not found." % previous,
                    code="previous_response_not_found", param="previous_response_id"))
            answered = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
            open_calls = [i["call_id"] for i in stored["output"]
                          if i.get("type") == "function_call" and i["call_id"] not in answered]
            if open_calls:
                return fail(400, "No tool output found for function call %s." % open_calls[0], param="input")
            items = stored["transcript"] + items
        user, results, tools = responses_view(items, body)
        self.said = " (user said: %r)" % user
        kind, value = answer(user, results, tools)
        if kind == "error":
            return self.send_json(429, openai_error("Rate limit reached for mock-model.", "requests",
                                                    "rate_limit_exceeded"))
        n = next_id()
        rid = "resp_mock%d" % n
        if kind == "text":
            output = [{"id": "msg_mock%d" % n, "type": "message", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": value, "annotations": [], "logprobs": []}]}]
        else:
            output = [{"id": "fc_mock%d_%s" % (n, short), "type": "function_call", "status": "completed",
                       "call_id": "call_%s" % short, "name": "bash", "arguments": json.dumps(args)}
                      for short, args in value]
        if body.get("store", True):
            with _stored_lock:
                _stored[rid] = {"transcript": items + output, "output": output}
                while len(_stored) > MAX_STORED:
                    _stored.popitem(last=False)
        usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 8,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 20}

        def response(status, out, use):
            return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status,
                    "background": False, "error": None, "incomplete_details": None,
                    "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
                    "model": body["model"], "output": out,
                    "parallel_tool_calls": body.get("parallel_tool_calls", True),
                    "previous_response_id": previous, "reasoning": {"effort": None, "summary": None},
                    "store": body.get("store", True), "temperature": body.get("temperature", 1.0),
                    "text": {"format": {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
                    "tools": body.get("tools", []), "top_p": body.get("top_p", 1.0), "truncation": "disabled",
                    "usage": use, "user": None, "metadata": body.get("metadata") or {}}

        if not body.get("stream"):
            return self.send_json(200, response("completed", output, usage))
        self.open_stream()
        seq = itertools.count()

        def emit(kind, data):
            data = dict(data, type=kind, sequence_number=next(seq))
            self.event(kind, json.dumps(data))

        emit("response.created", {"response": response("in_progress", [], None)})
        emit("response.in_progress", {"response": response("in_progress", [], None)})
        for index, item in enumerate(output):
            at = {"item_id": item["id"], "output_index": index}
            if item["type"] == "message":
                text = item["content"][0]["text"]
                emit("response.output_item.added", {"output_index": index, "item": dict(
                    item, status="in_progress", content=[])})
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                emit("response.content_part.added", dict(at, content_index=0, part=part))
                for piece in pieces(text):
                    emit("response.output_text.delta", dict(at, content_index=0, delta=piece, logprobs=[]))
                emit("response.output_text.done", dict(at, content_index=0, text=text, logprobs=[]))
                emit("response.content_part.done", dict(at, content_index=0, part=item["content"][0]))
            else:
                emit("response.output_item.added", {"output_index": index, "item": dict(
                    item, status="in_progress", arguments="")})
                for piece in halves(item["arguments"]):
                    emit("response.function_call_arguments.delta", dict(at, delta=piece))
                emit("response.function_call_arguments.done", dict(
                    at, name=item["name"], arguments=item["arguments"]))
            emit("response.output_item.done", {"output_index": index, "item": item})
        emit("response.completed", {"response": response("completed", output, usage)})

    # --- Anthropic Messages -----------------------------------------------

    def anthropic_checks(self, required):
        """The body after Anthropic's checks, or None once refused."""
        rid = ("request-id", "req_mock%d" % next_id())

        def fail(status, message, kind="invalid_request_error"):
            self.send_json(status, anthropic_error(kind, message), [rid])

        body = self.body(fail)
        if body is None:
            return None
        if not (self.headers.get("x-api-key") or self.bearer()):
            fail(401, "x-api-key header is required", "authentication_error")
            return None
        if not self.headers.get("anthropic-version"):
            fail(400, "anthropic-version: header is required")
            return None
        for member in required:
            if member not in body:
                fail(400, "%s: Field required" % member)
                return None
        return body

    def count_tokens(self):
        body = self.anthropic_checks(("model", "messages"))
        if body is not None:
            self.send_json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})

    def anthropic_messages(self):
        body = self.anthropic_checks(("model", "max_tokens", "messages"))
        if body is None:
            return
        user, results, tools = messages_view(body)
        self.said = " (user said: %r)" % user
        kind, value = answer(user, results, tools)
        n = next_id()
        headers = [("request-id", "req_mock%d" % n)]
        if kind == "error":
            return self.send_json(429, anthropic_error(
                "rate_limit_error", "Number of request tokens has exceeded your rate limit."), headers)
        if kind == "text":
            blocks, stop = [{"type": "text", "text": value}], "end_turn"
        else:
            blocks = [{"type": "tool_use", "id": "toolu_mock%d%s" % (n, short), "name": "bash", "input": args}
                      for short, args in value]
            stop = "tool_use"

        def message(content, stop_reason, output_tokens):
            return {"id": "msg_mock%d" % n, "type": "message", "role": "assistant", "model": body["model"],
                    "content": content, "stop_reason": stop_reason, "stop_sequence": None,
                    "usage": {"input_tokens": 12, "output_tokens": output_tokens,
                              "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}

        if not body.get("stream"):
            return self.send_json(200, message(blocks, stop, 8), headers)
        self.open_stream(headers)

        def emit(kind, data):
            self.event(kind, json.dumps(dict(data, type=kind)))

        emit("message_start", {"message": message([], None, 1)})
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
            else:
                start = dict(block, input={})
                deltas = [{"type": "input_json_delta", "partial_json": p}
                          for p in ("",) + halves(json.dumps(block["input"]))]
            emit("content_block_start", {"index": index, "content_block": start})
            if index == 0:
                emit("ping", {})
            for delta in deltas:
                emit("content_block_delta", {"index": index, "delta": delta})
            emit("content_block_stop", {"index": index})
        emit("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 8}})
        emit("message_stop", {})


def address(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT, e.g. 127.0.0.1:50161")
    return host, int(port)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n"
               "  mock_model.py --listen 127.0.0.1:50161 &\n"
               "  hookwire gateway --listen 127.0.0.1:50160 --upstream http://127.0.0.1:50161/v1 \\\n"
               "    --declaration examples/declarations/demo.json\n"
               "  OPENAI_BASE_URL=http://127.0.0.1:50160/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:50160 \\\n"
               "    python examples/gateway/agent.py --api messages --stream\n\n"
               "The script is in the module's docstring (a `bash` tool offered: `ls -la` and\n"
               "`rm -rf /tmp/build` asked for; tool results: a summary; \"rate limit me\": a 429).",
    )
    parser.add_argument("--listen", type=address, default=("127.0.0.1", 50161), metavar="HOST:PORT",
                        help="where to listen (default 127.0.0.1:50161; port 0 picks a free one)")
    parser.add_argument("--quiet", action="store_true", help="do not log each request on stderr")
    args = parser.parse_args()
    try:
        server = ThreadingHTTPServer(args.listen, Handler)
    except OSError as e:
        sys.exit("mock model: cannot listen on %s:%d: %s" % (args.listen[0], args.listen[1], e.strerror))
    server.daemon_threads = True
    server.quiet = args.quiet
    host, port = server.server_address[:2]
    sys.stderr.write("mock model: listening on http://%s:%d (OpenAI base URL http://%s:%d/v1, "
                     "Anthropic base URL http://%s:%d)\n" % (host, port, host, port, host, port))
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
