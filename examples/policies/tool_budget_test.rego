package hookwire.tool_budget_test

import rego.v1

import data.hookwire.tool_budget

config := {"max_tool_calls": 10, "tenants": {"trial": 2}}

with_count(n, tenant) := {
	"interception_point": "pre_tool_call",
	"tenant": {"id": tenant},
	"budgets": {"tool_call_count": n},
	"tool_call": {"id": "c1", "name": "bash", "args": {}},
}

denied(c) := found if {
	found := {d.reason | some d in tool_budget.deny} with input as c with data.tool_budget as config
}

warned(c) := found if {
	found := {w.reason | some w in tool_budget.warn} with input as c with data.tool_budget as config
}

test_within_budget_allowed if {
	count(denied(with_count(3, "paid"))) == 0
	count(warned(with_count(3, "paid"))) == 0
}

test_budget_low_warns if {
	warned(with_count(8, "paid")) == {"policy:tool_budget_low"}
	count(denied(with_count(8, "paid"))) == 0
}

test_budget_exhausted_denied if {
	denied(with_count(10, "paid")) == {"policy:tool_budget_exhausted"}
	denied(with_count(2, "trial")) == {"policy:tool_budget_exhausted"}
}

test_no_budgets_not_governed if {
	c := {"interception_point": "pre_tool_call", "tool_call": {"id": "c1", "name": "bash", "args": {}}}
	count(denied(c)) == 0
	count(warned(c)) == 0
}
