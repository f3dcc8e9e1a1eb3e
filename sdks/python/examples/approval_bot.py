"""An approval bot on the hookwire package's approver client: approves the
pending requests whose tool is in an allowlist and rejects the others with
a reason. One line per decision on stdout.

    python approval_bot.py --endpoint http://127.0.0.1:7070 \\
        --token-file ~/.hookwire/bot-token --allow read_file,list_dir
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

import grpc

from hookwire.approvals import Approver, ApproverError, Decision, Request, approve, reject

EXAMPLE = """example:
  HOOKWIRE_APPROVER_TOKEN=hwa_... python approval_bot.py \\
      --endpoint http://127.0.0.1:7070 --allow read_file,list_dir
  # prints "approved <id> <tool> accepted" or "rejected <id> <tool> accepted" per request"""


def arguments() -> argparse.Namespace:
    """The bot's options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EXAMPLE,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint", required=True, help="the approval service, http(s)://host:port")
    p.add_argument("--token-file", help="the approver token (default: $HOOKWIRE_APPROVER_TOKEN)")
    p.add_argument("--ca", help="PEM CA certificate: TLS to the service")
    p.add_argument("--allow", default="", help="comma-separated tools to approve; the rest are rejected")
    p.add_argument("--reason", default="policy:not_allowlisted", help="the rejections' reason")
    return p.parse_args()


def main() -> int:
    """Runs the bot until SIGTERM or SIGINT."""
    args = arguments()
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            token = f.read().strip()
    else:
        token = os.environ.get("HOOKWIRE_APPROVER_TOKEN", "")
    if not token:
        sys.exit("approval_bot: no token: --token-file or $HOOKWIRE_APPROVER_TOKEN")
    credentials = None
    if args.ca:
        with open(args.ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(f.read())
    allowed = {t.strip() for t in args.allow.split(",") if t.strip()}

    def decide(request: Request) -> Decision:
        """Allowlisted tools pass; everything else is rejected."""
        if request.tool_name in allowed:
            return approve("allowlisted by the approval bot")
        return reject(args.reason, "%s is not on the bot's allowlist" % (request.tool_name or request.point))

    def report(request: Request, decision: Decision, status: str) -> None:
        """One line per decision."""
        verb = "approved" if decision.approved else "rejected"
        print("%s %s %s %s" % (verb, request.id, request.tool_name or request.point, status), flush=True)

    async def run() -> None:
        """Watches until a signal."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        approver = Approver(args.endpoint, token, credentials=credentials)
        print("approval bot: watching %s" % args.endpoint, flush=True)
        await approver.run(decide, stop=stop, on_decided=report)

    try:
        asyncio.run(run())
    except (ApproverError, ValueError) as e:
        print("approval_bot: %s" % e, file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
