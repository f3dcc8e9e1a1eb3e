# Destructive shell commands: deny a shell tool call that deletes
# recursively, formats a disk, or writes to a raw device.
package hookwire.destructive_commands

import rego.v1

points := {"pre_tool_call"}

shell_tools := {"bash", "sh", "zsh", "shell"}

# Patterns over the lower-cased command line.
destructive_patterns := [
	`\brm\s+(-[a-z]*r[a-z]*f|-[a-z]*f[a-z]*r)\b`, # rm -rf, rm -fr, rm -Rf ...
	`\brm\s+-r\s+-f\b|\brm\s+-f\s+-r\b`,
	`\bmkfs(\.[a-z0-9]+)?\b`,
	`\bdd\b.*\bof=/dev/`,
	`>\s*/dev/(sd|nvme|hd|xvd)`,
	`:\(\)\s*\{\s*:\|:&\s*\};:`, # fork bomb
]

command := lower(input.tool_call.args.cmd)

# Words every destructive pattern needs: a cheap substring test first, so
# that most commands never reach the regular expression.
keywords := {"rm", "mkfs", "dd", "/dev/", ":("}

mentions_keyword if {
	some keyword in keywords
	contains(command, keyword)
}

# One alternation, so that a decision runs at most one match.
destructive_pattern := concat("|", destructive_patterns)

destructive if {
	input.tool_call.name in shell_tools
	mentions_keyword
	regex.match(destructive_pattern, command)
}

deny contains {
	"reason": "policy:destructive_command",
	"message": "bash may not delete or overwrite files recursively",
} if destructive
