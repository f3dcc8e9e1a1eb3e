"""An agent policy as a hookwire interceptor service, on the hookwire package
(``pip install ./sdks/python``):

- ``input``: e-mail addresses and phone numbers are redacted (a transform);
- ``pre_tool_call``: destructive shell commands are denied; a
  ``wire_transfer`` above ``--wire-limit`` (default 10000) is escalated to
  a human, one without a numeric amount denied;
- ``post_tool_call``: output carrying an AWS access key id is blocked;
- ``output``: an e-mail address in the answer is a warning.

``python policy.py --port 50051`` prints ``PORT 50051`` once it serves;
``--probes`` adds the tools the test suite checks the wire with.
"""

import re
import time
from decimal import Decimal

import hookwire as hw

EMAIL = re.compile(r"[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
PHONE = re.compile(r"\+?\(?\d[\d ().-]{6,}\d")
AWS_KEY = re.compile(r"\bAKIA[A-Z0-9]{16}\b")
DESTRUCTIVE = re.compile(r"\brm\s+-\w*(?:r\w*f|f\w*r)|\bmkfs\b|\bdd\b.*\bof=/dev/|:\(\)\s*\{", re.I)
NUMBER = re.compile(r"\d+(?:\.\d+)?")

policy = hw.Interceptor("python-policy", "0.2.0", points=["input", "pre_tool_call", "post_tool_call", "output"],
                        description="redacts PII, denies destructive shell commands, escalates large transfers")


def strings(value):
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    for v in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        yield from strings(v)


def redacted(value):
    """``value`` with every e-mail address and phone number replaced."""
    if isinstance(value, str):
        return PHONE.sub("[redacted:phone]", EMAIL.sub("[redacted:email]", value))
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    return [redacted(v) for v in value] if isinstance(value, list) else value


@policy.hook("input")
def redact_pii(ctx):
    content = ctx.target.get("content")
    clean = redacted(content)
    return hw.transform("$target.content", clean, reason="policy:pii_redacted") if clean != content else hw.allow()


@policy.hook("pre_tool_call")
def guard_tools(ctx):
    if ctx.tool_name in PROBES:
        return PROBES[ctx.tool_name](ctx)
    if ctx.tool_name in ("bash", "sh", "zsh") and any(DESTRUCTIVE.search(s) for s in strings(ctx.target)):
        return hw.deny("policy:destructive_command", "shell commands that wipe files or devices are not allowed")
    if ctx.tool_name == "wire_transfer":
        amount = ctx.target.get("amount")
        if isinstance(amount, bool) or not NUMBER.fullmatch(str(amount).strip()):
            return hw.deny("policy:invalid_amount", "wire_transfer needs a non-negative amount")
        if Decimal(str(amount).strip()) > LIMIT:
            return hw.escalate("policy:approval_required", "wire transfers above %s need a human approval" % LIMIT,
                               approval={"approver_role": "finance", "limit": LIMIT})
    return hw.allow()


@policy.hook("post_tool_call")
def no_keys_in_output(ctx):
    if PROBES and ctx.tool_name == "echo":
        return echo_result(ctx)
    if any(AWS_KEY.search(s) for s in strings(ctx.target)):
        return hw.deny("policy:secret_in_tool_output", "the tool output contains an AWS access key id")
    return hw.allow()


@policy.hook("output")
def pii_in_answer(ctx):
    if any(EMAIL.search(s) for s in strings(ctx.target)):
        return hw.warn("policy:pii_in_output", "the final answer contains an e-mail address")
    return hw.allow()


def echo_result(ctx):
    """The arguments and the result as received, and ``counter + 1`` computed here."""
    value = {"args": ctx.tool_args, "result": ctx.target}
    if isinstance(ctx.tool_args, dict) and type(ctx.tool_args.get("counter")) is int:
        value["next"] = ctx.tool_args["counter"] + 1
    return hw.transform("$target", value)


def sleep(ctx):
    time.sleep(ctx.target.get("ms", 0) / 1000)
    return hw.allow()


def fail(ctx):
    raise RuntimeError("probe failure")


# --probes: the wire checked exactly (echo), a raising hook (fail), a slow one (sleep).
PROBE_TOOLS = {"echo": lambda ctx: hw.transform("$target", ctx.target), "fail": fail, "sleep": sleep}
PROBES = {}

if __name__ == "__main__":
    parser = hw.arg_parser(policy.description)
    parser.add_argument("--wire-limit", type=int, default=10000, help="escalate transfers above this (default 10000)")
    parser.add_argument("--probes", action="store_true", help="enable the test probes echo, fail and sleep")
    args = parser.parse_args()
    LIMIT = args.wire_limit
    PROBES = PROBE_TOOLS if args.probes else {}
    hw.run(policy, args)
