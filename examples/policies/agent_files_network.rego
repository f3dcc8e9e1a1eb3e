# Coding agents' file writes and network fetches: a write to a protected
# path (the repository's .git, credentials, system configuration) is
# denied, and so is a fetch of a cloud metadata or loopback address —
# under the tool names and arguments the agents report:
#
#   tool                          path or URL member     agent
#   Write, Edit, MultiEdit        file_path              Claude Code
#   NotebookEdit                  notebook_path          Claude Code
#   write_file, replace           file_path              Gemini CLI
#   apply_patch                   the patch's file lines Codex CLI
#   WebFetch                      url                    Claude Code
#   web_fetch                     prompt (URLs in it)    Gemini CLI
#
# The protected paths and blocked hosts are data
# (`data.agent_files_network`, data.yaml).
package hookwire.agent_files_network

import rego.v1

points := {"pre_tool_call"}

args := input.tool_call.args

write_tools := {"Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "replace"}

fetch_tools := {"WebFetch", "web_fetch"}

# The paths a call writes.
written contains path if {
	input.tool_call.name in write_tools
	some member in ["file_path", "notebook_path", "path"]
	path := args[member]
	is_string(path)
}

# A Codex patch names its files on `*** Add File: P`, `*** Update File: P`,
# `*** Delete File: P` and `*** Move to: P` lines.
written contains trim_space(line_path[1]) if {
	input.tool_call.name == "apply_patch"
	patch := object.get(args, "input", object.get(args, "patch", ""))
	is_string(patch)
	some line_path in regex.find_all_string_submatch_n(`\*\*\* (?:Add File|Update File|Delete File|Move to): ([^\n]+)`, patch, -1)
}

protected(path) if {
	some fragment in data.agent_files_network.protected_paths
	contains(path, fragment)
}

deny contains {
	"reason": "policy:protected_path",
	"message": sprintf("%s may not write %s", [input.tool_call.name, path]),
} if {
	some path in written
	protected(path)
}

# The text a fetch names its URLs in.
fetched := args.url if {
	input.tool_call.name in fetch_tools
	is_string(args.url)
} else := args.prompt if {
	input.tool_call.name in fetch_tools
	is_string(args.prompt)
}

deny contains {
	"reason": "policy:blocked_host",
	"message": sprintf("%s may not fetch %s", [input.tool_call.name, host]),
} if {
	some host in data.agent_files_network.blocked_hosts
	contains(lower(fetched), host)
}
