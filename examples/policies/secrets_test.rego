package hookwire.secrets_test

import rego.v1

import data.hookwire.secrets

result(value) := {
	"interception_point": "post_tool_call",
	"tool_call": {"id": "c1", "name": "bash", "args": {}},
	"tool_result": {"value": value, "is_error": false},
}

kinds(value) := found if {
	found := secrets.found with input as result(value)
}

test_aws_key_in_stdout_denied if {
	kinds({"stdout": "key=AKIAIOSFODNN7EXAMPLE", "exit_code": 0}) == {"aws_access_key_id"}
	count(secrets.deny) == 1 with input as result({"stdout": "AKIAIOSFODNN7EXAMPLE"})
}

test_private_key_denied if {
	kinds("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----") == {"private_key"}
	kinds({"file": "-----BEGIN OPENSSH PRIVATE KEY-----"}) == {"private_key"}
}

test_gcp_key_denied if {
	kinds("AIzaSyA1234567890abcdefghijklmnopqrstuv") == {"gcp_api_key"}
}

test_message_and_evidence_name_kind_not_secret if {
	some d in secrets.deny with input as result("AKIAIOSFODNN7EXAMPLE")
	not contains(d.message, "AKIAIOSFODNN7EXAMPLE")
	secrets.evidence == {"secret_kinds": ["aws_access_key_id"]} with input as result("AKIAIOSFODNN7EXAMPLE")
}

test_clean_results_pass if {
	count(kinds({"stdout": "1.2G\t/tmp/build", "exit_code": 0})) == 0
	count(secrets.deny) == 0 with input as result("AKIA too short")
}
