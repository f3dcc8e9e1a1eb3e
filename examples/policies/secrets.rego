# Secrets in tool results: withhold a tool result that carries a cloud
# access key or a private key, naming the kind of secret found (never the
# secret) in the message and the evidence.
package hookwire.secrets

import rego.v1

points := {"post_tool_call"}

secret_patterns := {
	"aws_access_key_id": `\b(AKIA|ASIA)[0-9A-Z]{16}\b`,
	"aws_secret_access_key": `(?i)aws_secret_access_key["'\s:=]+[A-Za-z0-9/+=]{40}`,
	"gcp_api_key": `\bAIza[0-9A-Za-z_-]{35}\b`,
	"azure_storage_key": `AccountKey=[A-Za-z0-9+/=]{80,}`,
	"github_token": `\bgh[pousr]_[A-Za-z0-9]{36,}\b`,
	"private_key": `-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED) )?PRIVATE KEY-----`,
}

# The result as text, whatever its JSON shape.
result_text := input.tool_result.value if is_string(input.tool_result.value)

result_text := json.marshal(input.tool_result.value) if not is_string(input.tool_result.value)

found contains kind if {
	some kind, pattern in secret_patterns
	regex.match(pattern, result_text)
}

deny contains {
	"reason": "policy:secret_in_tool_result",
	"message": sprintf("the result of %q carries a secret (%s); it is withheld", [input.tool_call.name, concat(", ", sort(found))]),
} if count(found) > 0

evidence := {"secret_kinds": sort(found)} if count(found) > 0

labels contains "secret_detected" if count(found) > 0
