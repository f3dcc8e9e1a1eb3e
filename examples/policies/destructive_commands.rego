# Destructive shell commands: deny a shell tool call that deletes
# recursively, formats a disk, or writes to a raw device — under the shell
# tools of the agents hookwire meets, each with its own name and argument:
#
#   tool                    argument          reported by
#   Bash                    command           Claude Code, Codex CLI (hooks)
#   exec_command            cmd               Codex CLI (through the gateway)
#   shell                   command (array)   Codex CLI (older, gateway)
#   shell_command           command           Codex CLI (gateway)
#   local_shell             command (array)   the Responses local shell
#   run_shell_command       command           Gemini CLI
#   Shell                   command           Cursor (also beforeShellExecution)
#   bash                    command or cmd    Copilot, the demo agent
#   sh, zsh                 cmd or command    other agents
package hookwire.destructive_commands

import rego.v1

points := {"pre_tool_call"}

shell_tools := {
	"Bash", "bash", "sh", "zsh", "shell", "shell_command", "exec_command",
	"local_shell", "run_shell_command", "Shell",
}

# Patterns over the lower-cased command line.
destructive_patterns := [
	`\brm\s+(-[a-z]*r[a-z]*f|-[a-z]*f[a-z]*r)\b`, # rm -rf, rm -fr, rm -Rf ...
	`\brm\s+-r\s+-f\b|\brm\s+-f\s+-r\b`,
	`\bmkfs(\.[a-z0-9]+)?\b`,
	`\bdd\b.*\bof=/dev/`,
	`>\s*/dev/(sd|nvme|hd|xvd)`,
	`:\(\)\s*\{\s*:\|:&\s*\};:`, # fork bomb
]

args := input.tool_call.args

# The command line, whichever member carries it: `cmd`, or `command` as a
# string or as an argv array (joined with spaces).
raw_command := args.cmd if is_string(args.cmd)

else := args.command if is_string(args.command)

else := concat(" ", [word | some word in args.command; is_string(word)]) if is_array(args.command)

command := lower(raw_command)

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
	"message": "shell commands may not delete or overwrite files recursively",
} if destructive
