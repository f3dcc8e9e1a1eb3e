# Spending above a threshold goes to a human: a payment tool call whose
# amount exceeds data.spending.threshold (per tenant if listed) is
# escalated; the approval seam may lift it.
package hookwire.spending

import rego.v1

points := {"pre_tool_call"}

# Tool name -> the argument holding the amount.
amount_argument := data.spending.tools[input.tool_call.name]

amount := input.tool_call.args[amount_argument]

threshold := data.spending.tenants[input.tenant.id] if {
	input.tenant.id
	data.spending.tenants[input.tenant.id]
} else := data.spending.threshold

escalate contains {
	"reason": "policy:spend_above_threshold",
	"message": sprintf("%s of %v exceeds the approval threshold of %v", [input.tool_call.name, amount, threshold]),
	"approval": {"amount": amount, "threshold": threshold},
} if {
	is_number(amount)
	amount > threshold
}

deny contains {
	"reason": "policy:spend_amount_invalid",
	"message": sprintf("%s needs a numeric %s", [input.tool_call.name, amount_argument]),
} if {
	amount_argument
	not is_number(amount)
}
