package hookwire.agent_files_network_test

import rego.v1

import data.hookwire.agent_files_network

call(tool, args) := {
	"interception_point": "pre_tool_call",
	"tool_call": {"id": "c1", "name": tool, "args": args},
}

denied(ctx, reason) if {
	some d in agent_files_network.deny with input as ctx
	d.reason == reason
}

test_claude_code_write_to_git_denied if {
	denied(call("Write", {"file_path": "/home/user/my-project/.git/hooks/pre-commit", "content": "x"}), "policy:protected_path")
	denied(call("Edit", {"file_path": "/home/user/.ssh/authorized_keys", "old_string": "a", "new_string": "b"}), "policy:protected_path")
	not denied(call("Write", {"file_path": "/home/user/my-project/factorial.py", "content": "def factorial(n): ..."}), "policy:protected_path")
}

test_gemini_cli_write_file_denied if {
	denied(call("write_file", {"file_path": "/etc/hosts", "content": "x"}), "policy:protected_path")
	not denied(call("write_file", {"file_path": "src/main.ts", "content": "x"}), "policy:protected_path")
}

test_codex_apply_patch_denied if {
	patch := "*** Begin Patch\n*** Update File: .env\n@@\n-A=1\n+A=2\n*** End Patch"
	denied(call("apply_patch", {"input": patch}), "policy:protected_path")
	harmless := "*** Begin Patch\n*** Add File: src/lib.rs\n+fn f() {}\n*** End Patch"
	not denied(call("apply_patch", {"input": harmless}), "policy:protected_path")
}

test_metadata_fetch_denied if {
	denied(call("WebFetch", {"url": "http://169.254.169.254/latest/meta-data/", "prompt": "read it"}), "policy:blocked_host")
	denied(call("web_fetch", {"prompt": "Summarize http://localhost:8080/admin"}), "policy:blocked_host")
	not denied(call("WebFetch", {"url": "https://docs.rs/serde", "prompt": "read it"}), "policy:blocked_host")
}

test_other_tools_not_governed if {
	not denied(call("Read", {"file_path": "/etc/hosts"}), "policy:protected_path")
}
