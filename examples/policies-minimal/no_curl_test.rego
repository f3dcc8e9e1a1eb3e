package hookwire.no_curl_test

import rego.v1

import data.hookwire.no_curl

bash(cmd) := {"interception_point": "pre_tool_call", "tool_call": {"id": "c1", "name": "bash", "args": {"cmd": cmd}}}

test_curl_denied if {
	some d in no_curl.deny with input as bash("curl https://example.com")
	d.reason == "policy:no_curl"
}

test_other_commands_allowed if {
	count(no_curl.deny) == 0 with input as bash("ls -la")
}
