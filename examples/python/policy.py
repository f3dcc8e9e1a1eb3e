"""An interceptor service in Python: a small but realistic agent policy.

- ``pre_tool_call``: deny shell calls (``bash``, ``sh``, ...) that run
  destructive commands (recursive forced ``rm``, ``mkfs``, ``dd of=/dev/...``,
  fork bombs, redirection onto a block device, ``shred``/``wipefs`` on a
  device); escalate ``wire_transfer`` calls above ``--wire-limit`` (default
  10000) to a human (a deny with an ``approval`` object); deny a
  ``wire_transfer`` whose amount is not a number.
- ``input``: redact e-mail addresses and phone numbers from the request by
  transforming ``$target.content``.
- ``post_tool_call``: block tool output that contains an AWS access key id.
- ``output``: warn when the final answer contains an e-mail address.

Run it with ``python policy.py [--port N] [--wire-limit N]``; it prints
``PORT <n>`` once it serves. ``--probes`` adds the behaviours the test suite
uses to check the wire (see ``Probes`` below); they are off by default.
"""

import re
import sys
import time
from decimal import Decimal, InvalidOperation

import hookwire as hw

SHELL_TOOLS = {"bash", "sh", "shell", "zsh"}

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
PHONE_CANDIDATE = re.compile(r"(?<![A-Za-z0-9_+])\+?\(?[0-9][0-9 ().-]{5,}[0-9](?![A-Za-z0-9_])")
AWS_ACCESS_KEY_ID = re.compile(r"(?<![A-Z0-9])AKIA[A-Z0-9]{16}(?![A-Z0-9])")

DESTRUCTIVE = [
    re.compile(r"\bmkfs(?:\.[a-z0-9]+)?\b", re.I),
    re.compile(r"\bdd\b[^;|&\n]*\bof=/dev/", re.I),
    # `:(){ :|:& };:` and the same with any function name.
    re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&"),
    re.compile(r">\s*/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme[0-9]|mmcblk[0-9]|disk[0-9])"),
    re.compile(r"\b(?:shred|wipefs)\b[^;|&\n]*/dev/", re.I),
]
RM = re.compile(r"(?:^|[\s;|&(`])rm\s+([^;|&\n]*)")


def strings_in(value):
    """Every string in a JSON value, member names included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


def is_recursive_forced_rm(command):
    for m in RM.finditer(command):
        recursive = forced = False
        for word in m.group(1).split():
            if word in ("--recursive",):
                recursive = True
            elif word == "--force":
                forced = True
            elif word.startswith("-") and not word.startswith("--"):
                recursive |= "r" in word or "R" in word
                forced |= "f" in word
        if recursive and forced:
            return True
    return False


def is_destructive(command):
    return is_recursive_forced_rm(command) or any(p.search(command) for p in DESTRUCTIVE)


def redact(text):
    text = EMAIL.sub("[redacted:email]", text)

    def phone(m):
        s = m.group(0)
        digits = sum(c.isdigit() for c in s)
        if 7 <= digits <= 15 and (s.startswith("+") or digits >= 9):
            return "[redacted:phone]"
        return s

    return PHONE_CANDIDATE.sub(phone, text)


def redact_value(value):
    """Redacts every string of a JSON value (member names stay)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value


def amount_of(args):
    """The transfer amount as a Decimal, or None when it is not a number."""
    a = args.get("amount") if isinstance(args, dict) else None
    if isinstance(a, bool):
        return None
    if isinstance(a, (int, float)):
        return Decimal(str(a))
    if isinstance(a, str) and re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", a.strip()):
        try:
            return Decimal(a.strip())
        except InvalidOperation:
            return None
    return None


class Policy(hw.Interceptor):
    """The policy: one method per point it decides on."""

    name = "python-policy"
    version = "0.1.0"
    description = (
        "denies destructive shell commands, escalates large wire transfers, "
        "redacts PII in input, blocks AWS keys in tool output"
    )
    points = ["input", "pre_tool_call", "post_tool_call", "output"]

    def __init__(self, wire_limit=10000):
        super().__init__()
        self.wire_limit = wire_limit

    def input(self, ctx):
        content = ctx["target"].get("content")
        redacted = redact_value(content)
        if redacted != content:
            return hw.transform("$target.content", redacted, reason="policy:pii_redacted")
        return hw.allow()

    def pre_tool_call(self, ctx):
        call = ctx["tool_call"]
        args = ctx["target"]
        if call["name"] in SHELL_TOOLS:
            if any(is_destructive(s) for s in strings_in(args)):
                return hw.deny(
                    "policy:destructive_command",
                    "shell commands that wipe files or devices are not allowed",
                )
        if call["name"] == "wire_transfer":
            amount = amount_of(args)
            if amount is None or amount < 0:
                return hw.deny("policy:invalid_amount", "wire_transfer needs a non-negative amount")
            if amount > self.wire_limit:
                return hw.escalate(
                    "policy:approval_required",
                    "wire transfers above %s need a human approval" % self.wire_limit,
                    approval={"approver_role": "finance", "limit": self.wire_limit},
                )
        return hw.allow()

    def post_tool_call(self, ctx):
        if any(AWS_ACCESS_KEY_ID.search(s) for s in strings_in(ctx["target"])):
            return hw.deny(
                "policy:secret_in_tool_output",
                "the tool output contains an AWS access key id",
            )
        return hw.allow()

    def output(self, ctx):
        if any(EMAIL.search(s) for s in strings_in(ctx["target"])):
            return hw.warn("policy:pii_in_output", "the final answer contains an e-mail address")
        return hw.allow()


class Probes(Policy):
    """The policy plus behaviours that let a test look at the wire itself.

    - tool ``echo`` at ``pre_tool_call``: transform ``$target`` to the
      arguments exactly as received (a round trip of the JSON text);
    - tool ``echo`` at ``post_tool_call``: transform ``$target`` to
      ``{"args", "result", "next"}``: the arguments and the result as
      received, and ``args.counter + 1`` computed here;
    - tool ``fail``: the handler raises;
    - tool ``sleep``: the handler sleeps ``args.ms`` milliseconds first.
    """

    def pre_tool_call(self, ctx):
        name = ctx["tool_call"]["name"]
        if name == "echo":
            return hw.transform("$target", ctx["target"])
        if name == "fail":
            raise RuntimeError("probe failure")
        if name == "sleep":
            time.sleep(ctx["target"].get("ms", 0) / 1000)
        return super().pre_tool_call(ctx)

    def post_tool_call(self, ctx):
        if ctx["tool_call"]["name"] == "echo":
            args = ctx["tool_call"].get("args")
            value = {"args": args, "result": ctx["target"]}
            if isinstance(args, dict) and type(args.get("counter")) is int:
                value["next"] = args["counter"] + 1
            return hw.transform("$target", value)
        return super().post_tool_call(ctx)


def main():
    parser = hw.arg_parser(Policy.description)
    parser.add_argument(
        "--wire-limit",
        type=Decimal,
        default=Decimal(10000),
        help="escalate wire transfers above this amount (default 10000)",
    )
    parser.add_argument("--probes", action="store_true", help="enable the test probes")
    args = parser.parse_args()
    limit = args.wire_limit
    limit = int(limit) if limit == limit.to_integral_value() else float(limit)
    service = (Probes if args.probes else Policy)(wire_limit=limit)
    hw.run(service, args)


if __name__ == "__main__":
    sys.exit(main())
