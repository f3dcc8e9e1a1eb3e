package hookwire.destructive_commands_test

import rego.v1

import data.hookwire.destructive_commands

call(tool, cmd) := {
	"interception_point": "pre_tool_call",
	"tool_call": {"id": "c1", "name": tool, "args": {"cmd": cmd}},
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
