//! The shell tools of the agents the demo policy meets, and the command
//! line each carries: the same command under every agent's own tool name
//! and argument, so that the policy denies `rm -rf` whoever proposes it.
//!
//! | tool | argument | agent |
//! | --- | --- | --- |
//! | `Bash` | `command` | Claude Code; the Codex CLI's hooks |
//! | `exec_command` | `cmd` | the Codex CLI through the gateway |
//! | `shell`, `local_shell` | `command` (argv array) | older Codex CLI, the Responses local shell |
//! | `shell_command` | `command` | the Codex CLI through the gateway |
//! | `run_shell_command` | `command` | Gemini CLI |
//! | `Shell` | `command` | Cursor (`preToolUse`, `beforeShellExecution`) |
//! | `bash` | `command` or `cmd` | GitHub Copilot; the demo's own agent |
//! | `sh`, `zsh` | `cmd` or `command` | other agents |

use serde_json::Value;

/// Every shell tool name the demo policy governs.
pub const SHELL_TOOLS: [&str; 10] = [
    "Bash",
    "bash",
    "sh",
    "zsh",
    "shell",
    "shell_command",
    "exec_command",
    "local_shell",
    "run_shell_command",
    "Shell",
];

/// The command line a call of tool `name` with `args` runs, when `name` is
/// a shell tool: `cmd`, else `command` as a string, else `command` as an
/// argv array joined with spaces. `None` for other tools.
pub fn command_of(name: &str, args: &Value) -> Option<String> {
    if !SHELL_TOOLS.contains(&name) {
        return None;
    }
    match (args.get("cmd"), args.get("command")) {
        (Some(Value::String(c)), _) | (_, Some(Value::String(c))) => Some(c.clone()),
        (_, Some(Value::Array(argv))) => Some(
            argv.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => Some(String::new()),
    }
}

/// Whether a command line deletes recursively, formats a disk or writes a
/// raw device.
pub fn is_destructive(command: &str) -> bool {
    let c = command.to_ascii_lowercase();
    c.contains("rm -rf")
        || c.contains("rm -fr")
        || c.contains("rm -r -f")
        || c.contains("rm -f -r")
        || c.contains("mkfs")
        || c.contains("of=/dev/")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    /// The tool name and input an agent reports in one of its golden hook
    /// payloads (`tests/fixtures/hooks/`): `tool_name`/`tool_input`, or
    /// Copilot's `toolName`/`toolArgs` (JSON text), or Cursor's
    /// `beforeShellExecution` `command` (its `Shell`).
    fn golden(path: &str) -> (String, Value) {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/hooks")
            .join(path);
        let p: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        if let Some(name) = p["tool_name"].as_str() {
            return (name.to_owned(), p["tool_input"].clone());
        }
        if let Some(name) = p["toolName"].as_str() {
            let args = serde_json::from_str(p["toolArgs"].as_str().unwrap()).unwrap();
            return (name.to_owned(), args);
        }
        ("Shell".to_owned(), json!({"command": p["command"]}))
    }

    #[test]
    fn every_agents_rm_rf_is_destructive() {
        for path in [
            "claude-code/pre-tool-use-bash-destructive.json",
            "codex/pre-tool-use-bash-destructive.json",
            "copilot/pre-tool-use-bash-destructive.json",
            "cursor/pre-tool-use-shell-destructive.json",
            "cursor/before-shell-execution-destructive.json",
            "gemini-cli/before-tool-shell-destructive.json",
        ] {
            let (name, args) = golden(path);
            let command = command_of(&name, &args).unwrap_or_else(|| panic!("{path}: {name}"));
            assert!(is_destructive(&command), "{path}: {command}");
        }
        for path in [
            "claude-code/pre-tool-use-bash.json",
            "copilot/pre-tool-use-bash.json",
            "cursor/pre-tool-use-shell.json",
            "gemini-cli/before-tool-shell.json",
        ] {
            let (name, args) = golden(path);
            let command = command_of(&name, &args).unwrap();
            assert!(!is_destructive(&command), "{path}: {command}");
        }
    }

    #[test]
    fn the_gateway_clients_shell_calls_are_read() {
        let cases = [
            ("exec_command", json!({"cmd": "rm -rf build"})),
            ("shell", json!({"command": ["bash", "-lc", "rm -rf build"]})),
            ("shell_command", json!({"command": "rm -rf build"})),
            ("local_shell", json!({"command": ["rm", "-rf", "build"]})),
            ("bash", json!({"cmd": "rm -rf build"})),
        ];
        for (name, args) in cases {
            assert!(is_destructive(&command_of(name, &args).unwrap()), "{name}");
        }
        assert_eq!(command_of("python", &json!({"cmd": "rm -rf /"})), None);
        assert_eq!(
            command_of("Bash", &json!({"command": 7})).as_deref(),
            Some("")
        );
    }
}
