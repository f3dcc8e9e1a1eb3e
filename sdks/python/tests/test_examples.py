"""The README's interceptor (sdks/python/examples/no_bash.py), run as a user runs it:
a process that prints PORT <n>, then real calls over gRPC."""

import pathlib
import subprocess
import sys

import grpc

from hookwire.v1 import interceptor_pb2 as pb
from hookwire.v1 import interceptor_pb2_grpc as pb_grpc
from helpers import WAIT, core, pre_tool_call, verdict_json

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "no_bash.py"


def test_the_readmes_no_bash_example_denies_bash_and_caps_results():
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("PORT "), (line, proc.stderr.read() if proc.poll() is not None else "")
        channel = grpc.insecure_channel("127.0.0.1:%d" % int(line.split()[1]))
        stub = pb_grpc.InterceptorStub(channel)

        denied = verdict_json(stub.PreToolCall(pre_tool_call("bash", {"cmd": "ls"}), timeout=WAIT))
        assert denied == {"decision": "DENY", "reason": "policy:no_shell"}, denied
        allowed = verdict_json(stub.PreToolCall(pre_tool_call("read_file"), timeout=WAIT))
        assert allowed == {"decision": "ALLOW"}, allowed

        long = pb.PostToolCallRequest(
            core=core(),
            tool_call=pb.ToolCall(id="c1", name="read_file", args=pb.JsonValue(json="{}")),
            tool_result=pb.ToolResult(value=pb.JsonValue(json='"%s"' % ("x" * 20_000))),
        )
        capped = verdict_json(stub.PostToolCall(long, timeout=WAIT))
        assert capped["decision"] == "TRANSFORM", capped
        assert capped["transform"]["path"] == "$target"
        assert len(capped["transform"]["value"]) == 10_000
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT)
