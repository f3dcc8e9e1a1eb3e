# A tool-call budget per session, from the context's budgets: deny a tool
# call once budgets.tool_call_count reached the limit
# (data.tool_budget.max_tool_calls, per tenant if listed), and warn when 80%
# of it is used. Contexts without budgets are not governed.
package hookwire.tool_budget

import rego.v1

points := {"pre_tool_call"}

limit := data.tool_budget.tenants[input.tenant.id] if {
	input.tenant.id
	data.tool_budget.tenants[input.tenant.id]
} else := data.tool_budget.max_tool_calls

used := input.budgets.tool_call_count

deny contains {
	"reason": "policy:tool_budget_exhausted",
	"message": sprintf("this session used %v of its %v tool calls", [used, limit]),
} if used >= limit

warn contains {
	"reason": "policy:tool_budget_low",
	"message": sprintf("this session used %v of its %v tool calls", [used, limit]),
} if {
	used < limit
	used >= limit * 0.8
}
