# Tool allowlists per agent and per tenant (data.tool_allowlist): an agent
# or tenant with a list may call only the tools on it; when both have one,
# the tool must be on both. Agents and tenants without a list are not
# restricted by this policy.
package hookwire.tool_allowlist

import rego.v1

points := {"pre_tool_call"}

applicable contains {"scope": "agent", "id": id, "tools": tools} if {
	id := input.agent.id
	tools := data.tool_allowlist.agents[id]
}

applicable contains {"scope": "tenant", "id": id, "tools": tools} if {
	id := input.tenant.id
	tools := data.tool_allowlist.tenants[id]
}

deny contains {
	"reason": "policy:tool_not_allowed",
	"message": sprintf("tool %q is not on the allowlist of %s %q", [input.tool_call.name, list.scope, list.id]),
} if {
	some list in applicable
	not input.tool_call.name in list.tools
}
