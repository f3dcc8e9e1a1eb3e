"""A scripted OpenAI-compatible model on loopback, for the gateway example.

It answers `POST /v1/chat/completions` (one piece or server-sent events) and
`GET /v1/models` with the Python standard library only: the first request of a
conversation asks for two shell commands, a request ending in tool results is
answered with a summary of them. It stands in for a real provider so the
example runs offline; point `hookwire gateway --upstream` at a real one
(`https://api.openai.com/v1` with `--key-env OPENAI_API_KEY`) to use it instead.

Usage: mock_upstream.py [PORT]   (default 50161)
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(body):
    messages = body.get("messages", [])
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        results = [m.get("content", "") for m in messages if m.get("role") == "tool"]
        return {"content": "Here is what I found: " + " | ".join(results), "tool_calls": []}
    user = last.get("content", "")
    return {
        "content": None,
        "tool_calls": [
            {"id": "call_ls", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"cmd": "ls -la"})}},
            {"id": "call_rm", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"cmd": "rm -rf /tmp/build"})}},
        ],
        "echo": user,
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        seen = getattr(self, "seen", "")
        sys.stderr.write("upstream: %s %s\n" % (fmt % args, seen))

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": "mock-model", "object": "model", "created": 0, "owned_by": "example"}]})
        else:
            self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error",
                                           "param": None, "code": None}})

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
        self.seen = "(user said: %r)" % (users[-1] if users else None)
        r = reply(body)
        finish = "tool_calls" if r["tool_calls"] else "stop"
        base = {"id": "chatcmpl-mock", "created": int(time.time()), "model": body.get("model", "mock-model")}
        if not body.get("stream"):
            message = {"role": "assistant", "content": r["content"]}
            if r["tool_calls"]:
                message["tool_calls"] = r["tool_calls"]
            self.send_json(200, dict(base, object="chat.completion", choices=[
                {"index": 0, "message": message, "finish_reason": finish}]))
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

        def event(delta, finish_reason=None):
            chunk = dict(base, object="chat.completion.chunk",
                         choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason}])
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()

        event({"role": "assistant", "content": ""})
        for word in (r["content"] or "").split():
            event({"content": word + " "})
        for i, tc in enumerate(r["tool_calls"]):
            event({"tool_calls": [dict(tc, index=i)]})
        event({}, finish)
        self.wfile.write(b"data: [DONE]\n\n")


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 50161
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    sys.stderr.write("upstream: mock model on http://127.0.0.1:%d/v1\n" % port)
    server.serve_forever()


if __name__ == "__main__":
    main()
