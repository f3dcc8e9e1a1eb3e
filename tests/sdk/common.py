"""What the SDK client scripts of tests/sdk/ share: the command line, the
tool the agent runs, the prompts, and how an answer or an error is printed.

Usage of each script: SCRIPT CASE[=SESSION] ...

Each case prints one JSON line: {"case": NAME, "sdk_version": V, ...}. A
SESSION is sent as the `x-hookwire-session` header. The base URL is
HOOKWIRE_TEST_BASE_URL. Retries are off so that a refused request is seen
once; an exception the SDK does not raise as its own error fails the run.
"""

import json
import os
import sys

# The prompts the mock upstreams' scripted conversation answers.
PII = "Write to ann@example.com about the report."
TOOLS = "List the files, then clean up. Report to bob@example.com"
RATE_LIMITED = "Please rate limit me."
SECRET = "Tell me the secret."
SYSTEM = "You are terse."

BASE_URL = os.environ["HOOKWIRE_TEST_BASE_URL"]


def run_bash(cmd):
    """The agent's simulated shell: what each command prints."""
    if cmd == "ls":
        return "a.txt\nb.txt"
    if cmd == "env":
        return "AWS_SECRET_ACCESS_KEY=abc"
    return "ok"


def headers(session):
    return {"x-hookwire-session": session} if session else {}


def error_of(e):
    """An error the SDK raised, as its own class."""
    return {
        "error": type(e).__name__,
        "status": getattr(e, "status_code", None),
        "body": getattr(e, "body", None),
        "message": str(e),
    }


def main(cases, version):
    """Runs each CASE[=SESSION] of the command line through `cases`."""
    for arg in sys.argv[1:]:
        name, _, session = arg.partition("=")
        out = cases[name](session or None)
        out["case"] = name
        out["sdk_version"] = version
        print(json.dumps(out), flush=True)
