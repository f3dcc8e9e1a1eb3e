package hookwire.spending_test

import rego.v1

import data.hookwire.spending

config := {"threshold": 10000, "tools": {"wire_transfer": "amount"}, "tenants": {"small-co": 500}}

transfer(amount, tenant) := {
	"interception_point": "pre_tool_call",
	"tenant": {"id": tenant},
	"tool_call": {"id": "c1", "name": "wire_transfer", "args": {"amount": amount, "to": "ACME"}},
}

escalations(c) := found if {
	found := spending.escalate with input as c with data.spending as config
}

denials(c) := found if {
	found := spending.deny with input as c with data.spending as config
}

test_large_transfer_escalated if {
	some e in escalations(transfer(25000, "big-co"))
	e.reason == "policy:spend_above_threshold"
	e.approval == {"amount": 25000, "threshold": 10000}
}

test_small_transfer_allowed if {
	count(escalations(transfer(9999.5, "big-co"))) == 0
	count(denials(transfer(9999.5, "big-co"))) == 0
}

test_tenant_threshold_applies if {
	count(escalations(transfer(600, "small-co"))) == 1
}

test_missing_amount_denied if {
	some d in denials(transfer("lots", "big-co"))
	d.reason == "policy:spend_amount_invalid"
}

test_other_tools_not_governed if {
	c := {"interception_point": "pre_tool_call", "tool_call": {"id": "c1", "name": "bash", "args": {"cmd": "ls"}}}
	count(escalations(c)) == 0
	count(denials(c)) == 0
}
