package hookwire.tool_allowlist_test

import rego.v1

import data.hookwire.tool_allowlist

lists := {
	"agents": {"billing-agent": ["lookup_invoice", "wire_transfer"]},
	"tenants": {"acme": ["lookup_invoice"]},
}

ctx(agent, tenant, tool) := {
	"interception_point": "pre_tool_call",
	"agent": {"id": agent, "framework": "test"},
	"tenant": {"id": tenant},
	"tool_call": {"id": "c1", "name": tool, "args": {}},
}

reasons(c) := found if {
	found := {d.reason | some d in tool_allowlist.deny} with input as c with data.tool_allowlist as lists
}

test_listed_tool_allowed if {
	count(reasons(ctx("billing-agent", "other", "lookup_invoice"))) == 0
}

test_unlisted_tool_denied_for_agent if {
	reasons(ctx("billing-agent", "other", "bash")) == {"policy:tool_not_allowed"}
}

test_tenant_list_also_applies if {
	reasons(ctx("billing-agent", "acme", "wire_transfer")) == {"policy:tool_not_allowed"}
}

test_unlisted_agent_and_tenant_unrestricted if {
	count(reasons(ctx("someone", "nobody", "anything"))) == 0
}

test_message_names_the_list if {
	some d in tool_allowlist.deny with input as ctx("billing-agent", "other", "bash")
		with data.tool_allowlist as lists
	contains(d.message, "agent \"billing-agent\"")
}
