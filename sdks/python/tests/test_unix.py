"""Serving on an owner-only Unix socket (``Server(unix=PATH)``, ``--unix``):
calls over it, its mode, each refusal, stale-socket replacement and its
removal on stop."""

import asyncio
import os
import socket
import stat
import tempfile

import grpc
import pytest

import hookwire
from hookwire.unix import MAX_SOCKET_PATH_BYTES
from hookwire.v1 import interceptor_pb2_grpc as pb_grpc
from helpers import WAIT, pre_tool_call, verdict_json


class NoBash(hookwire.Interceptor):
    """Denies bash."""

    name = "no-bash"
    version = "1.0.0"

    def pre_tool_call(self, ctx):
        if ctx.tool_name == "bash":
            return hookwire.deny("policy:no_shell", "no shell")
        return hookwire.allow()


def run(coro):
    asyncio.run(asyncio.wait_for(coro, WAIT * 3))


def private_dir(mode: int = 0o700) -> tempfile.TemporaryDirectory:
    d = tempfile.TemporaryDirectory()
    os.chmod(d.name, mode)
    return d


def test_calls_reach_the_policy_over_an_owner_only_socket_removed_on_stop():
    async def scenario():
        with private_dir() as d:
            path = os.path.join(d, "policy.sock")
            server = hookwire.Server(NoBash(), unix=path)
            assert await server.start() == 0
            assert server.endpoint == "unix:" + os.path.realpath(path)
            info = os.lstat(path)
            assert stat.S_ISSOCK(info.st_mode)
            assert stat.S_IMODE(info.st_mode) == 0o600
            assert os.listdir(d) == ["policy.sock"], "no staging directory is left"
            channel = grpc.aio.insecure_channel("unix:" + path)
            try:
                stub = pb_grpc.InterceptorStub(channel)
                r = await stub.PreToolCall(pre_tool_call("bash", {"cmd": "ls"}), timeout=WAIT)
                assert verdict_json(r) == {"decision": "DENY", "reason": "policy:no_shell"}
            finally:
                await channel.close()
                await server.stop(grace=1.0)
            assert not os.path.exists(path)

    run(scenario())


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_a_directory_others_can_write_is_refused(mode):
    async def scenario():
        with private_dir(mode) as d:
            server = hookwire.Server(NoBash(), unix=os.path.join(d, "policy.sock"))
            with pytest.raises(OSError, match="group- or world-writable"):
                await server.start()
            assert os.listdir(d) == []

    run(scenario())


def test_a_file_that_is_not_a_socket_a_live_socket_and_a_long_path_are_refused():
    async def scenario():
        with private_dir() as d:
            precious = os.path.join(d, "policy.sock")
            with open(precious, "w") as f:
                f.write("precious")
            with pytest.raises(OSError, match="is not a socket"):
                await hookwire.Server(NoBash(), unix=precious).start()
            assert open(precious).read() == "precious"

            live_path = os.path.join(d, "live.sock")
            live = hookwire.Server(NoBash(), unix=live_path)
            await live.start()
            try:
                with pytest.raises(OSError, match="another process is listening"):
                    await hookwire.Server(NoBash(), unix=live_path).start()
                assert os.path.exists(live_path), "the refused server left the live socket alone"
            finally:
                await live.stop(grace=1.0)

            long_path = os.path.join(d, "s" * MAX_SOCKET_PATH_BYTES)
            with pytest.raises(OSError, match="longer than"):
                await hookwire.Server(NoBash(), unix=long_path).start()

    run(scenario())


def test_a_stale_socket_is_replaced():
    async def scenario():
        with private_dir() as d:
            path = os.path.join(d, "policy.sock")
            stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            stale.bind(path)
            stale.close()
            server = hookwire.Server(NoBash(), unix=path)
            await server.start()
            try:
                channel = grpc.aio.insecure_channel("unix:" + path)
                stub = pb_grpc.InterceptorStub(channel)
                r = await stub.PreToolCall(pre_tool_call("ls"), timeout=WAIT)
                assert verdict_json(r) == {"decision": "ALLOW"}
                await channel.close()
            finally:
                await server.stop(grace=1.0)

    run(scenario())
