#!/usr/bin/env python3
"""Writes deploy/grafana/hookwire.json, hookwire's Grafana dashboard, and
the recording rules of its queries (the group `hookwire-dashboard`, between
the markers of docs/prometheus/hookwire.rules.yml).

One row per part that serves metrics (`--metrics-addr`): hosts (every
command that runs one: gateway, demo, hooks serve, mcp), interceptor
services (policy serve, serve-demo, any hookwire-server), the approval
queue, the gateway, the MCP proxy, the hooks daemon, and the policy service
once it exports its own series. Every query is plain PromQL over the series
the code exports, with fixed 5m windows and no dashboard variables, so that
cli/tests/dashboard.rs can check each against live scrapes and with
`promtool check rules`.

Usage: deploy/grafana/generate.py [--check]
  --check  exit 1 if hookwire.json or the recorded group differs from what
           this script writes

Example: deploy/grafana/generate.py && git diff deploy/grafana/hookwire.json
"""
import json
import sys
from pathlib import Path

OUT = Path(__file__).with_name("hookwire.json")
RULES = Path(__file__).parents[2] / "docs" / "prometheus" / "hookwire.rules.yml"
BEGIN = "  # BEGIN hookwire-dashboard: written by deploy/grafana/generate.py\n"
END = "  # END hookwire-dashboard\n"


def rate(expr):
    return f"rate({expr}[5m])"


def p99(series, by=""):
    labels = f"{by}, le" if by else "le"
    return f"histogram_quantile(0.99, sum by ({labels}) ({rate(series + '_bucket')}))"


def panel(title, unit, *targets, kind="timeseries", description=""):
    """A panel: targets are (PromQL, legend) pairs."""
    return {
        "title": title,
        "unit": unit,
        "kind": kind,
        "description": description,
        "targets": list(targets),
    }


HOSTS = [
    panel("Emissions by point", "reqps",
          (f"sum by (point) ({rate('hookwire_host_emissions_total')})", "{{point}}")),
    panel("Emission latency p99", "s",
          (p99("hookwire_host_emission_duration_seconds", "point"), "{{point}}")),
    panel("Enforced denies by reason", "reqps",
          ("sum by (reason) (" + rate('hookwire_host_denies_total{mode="enforce"}') + ")", "{{reason}}"),
          description="host_error:* reasons are outages, not policy (alert HookwireHostErrorDenies)."),
    panel("Interceptor calls by outcome", "reqps",
          (f"sum by (interceptor, outcome) ({rate('hookwire_host_interceptor_calls_total')})",
           "{{interceptor}} {{outcome}}")),
    panel("Interceptor call latency p99", "s",
          (p99("hookwire_host_interceptor_call_duration_seconds", "interceptor"), "{{interceptor}}")),
    panel("Sessions open, emissions in flight", "short",
          ("sum(hookwire_host_sessions_open)", "sessions"),
          ("sum(hookwire_host_emissions_in_flight)", "in flight")),
    panel("Replicas: ejections, retries, nothing usable", "ops",
          (f"sum by (interceptor) ({rate('hookwire_host_replica_ejections_total')})", "{{interceptor}} ejected"),
          (f"sum by (interceptor) ({rate('hookwire_host_replica_readmissions_total')})", "{{interceptor}} re-admitted"),
          (f"sum by (interceptor) ({rate('hookwire_host_replica_retries_total')})", "{{interceptor}} retried"),
          (f"sum by (interceptor) ({rate('hookwire_host_replica_unavailable_total')})", "{{interceptor}} none usable"),
          description="docs/replicas.md: a replica leaves on a refused connection, transport failures or NOT_SERVING."),
    panel("Approvals at the host", "ops",
          (f"sum by (outcome) ({rate('hookwire_host_approvals_total')})", "{{outcome}}"),
          (p99("hookwire_host_approval_wait_seconds"), "wait p99 (s)")),
    panel("Records: deliveries and drops", "ops",
          (f"sum({rate('hookwire_host_record_sink_deliveries_total')})", "delivered"),
          (f"sum({rate('hookwire_host_record_sink_drops_total')})", "dropped")),
]

INTERCEPTORS = [
    panel("Requests by service and decision", "reqps",
          (f"sum by (service, decision) ({rate('hookwire_interceptor_requests_total')})",
           "{{service}} {{decision}}")),
    panel("Failures by service and kind", "reqps",
          (f"sum by (service, kind) ({rate('hookwire_interceptor_request_failures_total')})",
           "{{service}} {{kind}}")),
    panel("Request latency p99", "s",
          (p99("hookwire_interceptor_request_duration_seconds", "service"), "{{service}}")),
    panel("Requests in flight", "short",
          ("sum by (service) (hookwire_interceptor_requests_in_flight)", "{{service}}")),
]

APPROVALS = [
    panel("Pending", "short", ("sum(hookwire_approval_pending)", "pending"), kind="stat"),
    panel("Oldest pending", "s", ("max(hookwire_approval_oldest_pending_age_seconds)", "oldest"), kind="stat"),
    panel("Connected", "short",
          ("sum(hookwire_approval_approvers_connected)", "approvers"),
          ("sum(hookwire_approval_hosts_connected)", "hosts")),
    panel("Requests and decisions", "ops",
          (f"sum({rate('hookwire_approval_requests_total')})", "requested"),
          (f"sum by (outcome) ({rate('hookwire_approval_decisions_total')})", "{{outcome}}")),
    panel("Decision wait p99", "s", (p99("hookwire_approval_decision_wait_seconds"), "p99")),
]

GATEWAY = [
    panel("Requests by route and status", "reqps",
          (f"sum by (api, route, status) ({rate('hookwire_gateway_requests_total')})",
           "{{route}} {{status}}")),
    panel("Upstream answers by class", "reqps",
          (f"sum by (api, class) ({rate('hookwire_gateway_upstream_responses_total')})",
           "{{api}} {{class}}")),
    panel("Request latency p99", "s",
          (p99("hookwire_gateway_request_duration_seconds", "api"), "{{api}}")),
    panel("Requests in flight", "short", ("sum(hookwire_gateway_requests_in_flight)", "in flight")),
]

MCP = [
    panel("Sessions open", "short", ("sum(hookwire_mcp_sessions_open)", "sessions"),
          description="Tool calls are counted by the host row (pre_tool_call, post_tool_call)."),
]

HOOKS = [
    panel("Decisions by agent and outcome", "reqps",
          (f"sum by (agent, outcome) ({rate('hookwire_hooks_decisions_total')})",
           "{{agent}} {{outcome}}")),
    panel("Decision latency p99", "s",
          (p99("hookwire_hooks_decision_duration_seconds", "agent"), "{{agent}}")),
    panel("Sessions open", "short", ("sum by (agent) (hookwire_hooks_sessions_open)", "{{agent}}")),
    panel("Refused callers, failed closed", "reqps",
          (f"sum by (agent, reason) ({rate('hookwire_hooks_refused_callers_total')})", "{{agent}} refused: {{reason}}"),
          (f"sum by (agent, cause) ({rate('hookwire_hooks_failed_closed_total')})", "{{agent}} failed closed: {{cause}}")),
]

# The policy service's own series (`hookwire policy serve --metrics-addr`,
# docs/policies.md): decisions by package and outcome, evaluation time, the
# serving generation and refused reloads. Its interceptor series are in the
# row above; cli/tests/dashboard.rs scrapes `policy serve` after one
# decision for what this row names.
POLICY_SERVICE = [
    panel("Decisions by package and outcome", "reqps",
          (f"sum by (package, outcome) ({rate('hookwire_policy_decisions_total')})",
           "{{package}} {{outcome}}"),
          description='package="*" outcome="error": the evaluation failed and the host denied.'),
    panel("Evaluation time p99", "s",
          (p99("hookwire_policy_evaluation_duration_seconds", "point"), "{{point}}")),
    panel("Serving generation", "short", ("max(hookwire_policy_generation)", "generation"), kind="stat"),
    panel("Reloads refused", "short",
          ("max(hookwire_policy_reload_failures)", "since start"),
          ("max(hookwire_policy_last_reload_failed)", "last reload refused"), kind="stat",
          description="A refused reload keeps the previous generation serving (alert HookwirePolicyReloadRejected)."),
]

ROWS = [
    ("Hosts", "hookwire_host_*: every command running a host", HOSTS),
    ("Interceptor services", "hookwire_interceptor_*: policy serve, serve-demo, any hookwire-server service", INTERCEPTORS),
    ("Policy service", "hookwire policy serve's decisions and reloads", POLICY_SERVICE),
    ("Approval queue", "hookwire_approval_*: approvals serve", APPROVALS),
    ("Gateway", "hookwire_gateway_*: hookwire gateway", GATEWAY),
    ("MCP proxy", "hookwire_mcp_*: hookwire mcp", MCP),
    ("Hooks daemon", "hookwire_hooks_*: hookwire hooks serve", HOOKS),
]


def dashboard():
    panels = []
    next_id = 1
    y = 0
    for title, description, row in ROWS:
        if not row:
            continue
        panels.append({"id": next_id, "type": "row", "title": title, "description": description,
                       "collapsed": False, "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        next_id += 1
        y += 1
        for i, p in enumerate(row):
            width = 6 if p["kind"] == "stat" else 12
            x = (i % 2) * 12 if width == 12 else (i % 4) * 6
            panels.append({
                "id": next_id,
                "type": p["kind"],
                "title": p["title"],
                "description": p["description"],
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": width, "x": x, "y": y + (i // 2) * 8},
                "fieldConfig": {"defaults": {"unit": p["unit"]}, "overrides": []},
                "options": {},
                "targets": [
                    {"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend,
                     "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                    for j, (expr, legend) in enumerate(p["targets"])
                ],
            })
            next_id += 1
        y += ((len(row) + 1) // 2) * 8
    return {
        "title": "hookwire",
        "uid": "hookwire",
        "description": "Generated by deploy/grafana/generate.py: hosts, interceptor services, the approval queue, the gateway, the MCP proxy and the hooks daemon.",
        "tags": ["hookwire"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "utc",
        "templating": {"list": [{
            "name": "datasource", "label": "Prometheus", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0,
        }]},
        "annotations": {"list": []},
        "panels": panels,
    }


def slug(text):
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_").replace("__", "_")


def recorded():
    """The group recording every query of the dashboard, one rule each:
    `hookwire_dashboard:ROW:PANEL_N`, so that a long-range dashboard or a
    federation reads precomputed series."""
    lines = [BEGIN,
             "  # Every query of deploy/grafana/hookwire.json, recorded: what the\n",
             "  # dashboard shows, precomputed for long ranges and federation.\n",
             "  - name: hookwire-dashboard\n", "    rules:\n"]
    for title, _, row in ROWS:
        for p in row:
            for n, (expr, _) in enumerate(p["targets"], 1):
                name = f"hookwire_dashboard:{slug(title)}:{slug(p['title'])}_{n}"
                quoted = expr.replace("'", "''")
                lines.append(f"      - record: {name}\n        expr: '{quoted}'\n")
    lines.append(END)
    return "".join(lines)


def rules_text():
    text = RULES.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{RULES} lacks the markers of the hookwire-dashboard group")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + recorded() + tail


def main(argv):
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv not in ([], ["--check"]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    text = json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"
    rules = rules_text()
    if argv == ["--check"]:
        stale = [str(path) for path, want in ((OUT, text), (RULES, rules))
                 if not path.is_file() or path.read_text() != want]
        if stale:
            print(f"stale: {', '.join(stale)}: run deploy/grafana/generate.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    RULES.write_text(rules)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
