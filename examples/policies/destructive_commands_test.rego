package hookwire.destructive_commands_test

import rego.v1

import data.hookwire.destructive_commands

call(tool, cmd) := call_args(tool, {"cmd": cmd})

call_args(tool, args) := {
	"interception_point": "pre_tool_call",
	"tool_call": {"id": "c1", "name": tool, "args": args},
}

denied(ctx) if {
	some d in destructive_commands.deny with input as ctx
	d.reason == "policy:destructive_command"
}

test_rm_rf_denied if denied(call("bash", "rm -rf /tmp/build"))

test_rm_fr_and_capitals_denied if {
	denied(call("bash", "rm -fr /"))
	denied(call("sh", "RM -Rf ~"))
	denied(call("bash", "rm -r -f /var"))
}

test_mkfs_and_dd_denied if {
	denied(call("bash", "mkfs.ext4 /dev/sdb1"))
	denied(call("zsh", "dd if=/dev/zero of=/dev/sda bs=1M"))
}

test_harmless_commands_allowed if {
	not denied(call("bash", "du -sh /tmp/build"))
	not denied(call("bash", "rm notes.txt"))
	not denied(call("bash", "ls -rf"))
}

test_other_tools_not_governed if {
	not denied(call("python", "rm -rf /"))
}

test_decides_only_before_tool_calls if {
	destructive_commands.points == {"pre_tool_call"}
}

# Each agent's shell tool, as its golden payload (tests/fixtures/hooks/)
# or its model requests name it.

test_claude_code_bash_command_denied if {
	denied(call_args("Bash", {"command": "rm -rf build", "description": "Remove the build directory"}))
	not denied(call_args("Bash", {"command": "ls -la"}))
}

test_codex_exec_command_denied if {
	denied(call_args("exec_command", {"cmd": "rm -rf build", "yield_time_ms": 1000}))
	not denied(call_args("exec_command", {"cmd": "cargo test"}))
}

test_codex_shell_argv_denied if {
	denied(call_args("shell", {"command": ["bash", "-lc", "rm -rf build"]}))
	denied(call_args("shell_command", {"command": "rm -rf build"}))
	denied(call_args("local_shell", {"command": ["rm", "-rf", "build"]}))
	not denied(call_args("shell", {"command": ["ls", "-la"]}))
}

test_gemini_cli_run_shell_command_denied if {
	denied(call_args("run_shell_command", {"command": "rm -rf build", "description": "Remove the build directory"}))
}

test_cursor_shell_denied if {
	denied(call_args("Shell", {"command": "rm -rf /home/user/my-project/build", "working_directory": "/home/user/my-project"}))
}

test_copilot_bash_command_denied if {
	denied(call_args("bash", {"command": "rm -rf build", "description": "Clean"}))
}

test_a_command_of_another_type_is_not_a_command if {
	not denied(call_args("Bash", {"command": 7}))
}
