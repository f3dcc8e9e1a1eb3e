package hookwire.no_curl

import rego.v1

points := {"pre_tool_call"}

deny contains {"reason": "policy:no_curl", "message": "no network from the shell"} if {
	input.tool_call.name == "bash"
	contains(input.tool_call.args.cmd, "curl")
}
