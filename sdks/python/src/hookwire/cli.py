"""The command line every Python service shares (``--host``, ``--port``,
``--unix``, ``--points``, ``--call-log``, ``--unary-only``) and :func:`run`, which serves a
policy until SIGTERM or SIGINT with a ``PORT <n>`` line (``SOCKET unix:<path>`` with
``--unix``) on stdout once it accepts calls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import threading
from typing import Any, Optional

from . import jsonx
from .context import Context
from .server import Interceptor, serve

EXAMPLE = """example:
  python policy.py --port 50051 --points pre_tool_call,output
  # prints PORT 50051, serves until SIGTERM; a hookwire host binds
  # http://127.0.0.1:50051 (unary or over the Multiplex stream)
  python policy.py --unix "$XDG_RUNTIME_DIR/hookwire/policy.sock"
  # prints SOCKET unix:<path>; an owner-only socket (0600) a host on this
  # machine binds as that unix: endpoint"""


def arg_parser(description: Optional[str] = None) -> argparse.ArgumentParser:
    """The shared options; add your own to the parser it returns."""
    p = argparse.ArgumentParser(
        description=description, epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free port)")
    p.add_argument("--unix", metavar="PATH",
                   help="serve on an owner-only Unix socket at PATH instead of --host/--port "
                        "(0600, in a directory only you can write to)")
    p.add_argument("--points", help="comma-separated points to declare in Describe, or 'all' (default: the policy's own)")
    p.add_argument("--call-log", help="append one JSON line per call: the point and the context seen")
    p.add_argument("--unary-only", action="store_true",
                   help="declare no Multiplex stream: hosts call the unary RPCs")
    return p


class CallLog:
    """One JSON line per call, ``{"point", "context", "transport"}``,
    appended before the hook runs: what the service saw and how it came
    (``unary`` or ``multiplex``), for tests and debugging."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def __call__(self, point: str, ctx: Context, transport: str) -> None:
        """Appends the call's line."""
        line = jsonx.dumps({"point": point, "context": ctx, "transport": transport}) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)


def run(policy: Interceptor, args: Optional[Any] = None) -> None:
    """Parses :func:`arg_parser`'s options (or takes ``args`` already parsed)
    and serves ``policy`` until SIGTERM or SIGINT, then stops gracefully."""
    if args is None:
        args = arg_parser(policy.description).parse_args()
    points = None
    if args.points:
        points = [] if args.points == "all" else [p.strip() for p in args.points.split(",") if p.strip()]
    observe = CallLog(args.call_log) if args.call_log else None

    async def main() -> None:
        """Serves until a signal sets ``stop``."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        unix = getattr(args, "unix", None)

        def ready(port: int) -> None:
            """The line a supervisor waits for."""
            if unix is not None:
                print("SOCKET unix:%s" % os.path.realpath(unix), flush=True)
            else:
                print("PORT %d" % port, flush=True)

        await serve(policy, args.host, args.port, points, stop=stop, on_ready=ready, observe=observe,
                    unary_only=getattr(args, "unary_only", False), unix=unix)

    try:
        asyncio.run(main())
    except (OSError, ValueError) as e:
        raise SystemExit("hookwire: %s" % e) from None
