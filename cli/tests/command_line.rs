//! The command line as a new user meets it: output to a closed pipe, a
//! busy port, `--help` listing every command, and the README listing the
//! same commands.

use std::net::TcpListener;
use std::process::{Command, Output, Stdio};

use hookwire::InterceptionPoint;
use hookwire_testkit::Scripted;
use serde_json::json;

/// Every subcommand of `hookwire`, with the README's one line for it.
const SUBCOMMANDS: &[&str] = &[
    "check",
    "demo",
    "emit",
    "policy",
    "serve-demo",
    "gateway",
    "approvals",
    "hooks",
    "hook",
    "mcp",
    "audit",
];

fn hookwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run hookwire")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A pipe whose reading end is already closed: every write to it fails
/// with `EPIPE`, as `| head -3` does once head has its lines.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    writer
}

#[tokio::test(flavor = "multi_thread")]
async fn check_into_a_closed_pipe_finishes_quietly_with_its_own_status() {
    let service = Scripted::allow_all("policy")
        .declaring(&[InterceptionPoint::PreToolCall])
        .serve()
        .await;
    let path = std::env::temp_dir().join(format!("hookwire-cli-pipe-{}.json", std::process::id()));
    let doc = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "bindings": [{"id": "policy", "kind": "hookwire.grpc",
                      "config": {"endpoint": service.endpoint()}}],
    });
    std::fs::write(&path, doc.to_string()).unwrap();

    // stdout closed, stderr kept: the check passes and says nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .arg("check")
        .arg(&path)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .expect("run hookwire check");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");

    // Both closed (`2>&1 | head`), and a finding to report: the status is
    // still check's own (1), not a panic's (101).
    service.shutdown().await.unwrap();
    let pipe = closed_pipe();
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .arg("check")
        .arg(&path)
        .args(["--timeout-ms", "500"])
        .stderr(pipe.try_clone().unwrap())
        .stdout(pipe)
        .output()
        .expect("run hookwire check");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_demo_into_a_closed_pipe_still_runs_to_its_end() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .arg("demo")
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .expect("run hookwire demo");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_busy_port_is_named_in_words() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let policies = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/policies");
    let declaration = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/declarations/demo.json"
    );
    let token = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token.path(), "a-hooks-token-long-enough-for-the-daemon").unwrap();
    let token = token.path().to_str().unwrap();
    let runs: [&[&str]; 6] = [
        &[
            "gateway",
            "--listen",
            &addr,
            "--upstream",
            "http://127.0.0.1:9",
            "--declaration",
            declaration,
        ],
        &[
            "hooks",
            "serve",
            "--listen",
            &addr,
            "--declaration",
            declaration,
            "--token-file",
            token,
        ],
        &[
            "gateway",
            "--upstream",
            "http://127.0.0.1:9",
            "--declaration",
            declaration,
            "--listen",
            "127.0.0.1:0",
            "--metrics-addr",
            &addr,
        ],
        &["serve-demo", "--policy", &addr, "--redactor", "127.0.0.1:0"],
        &["policy", "serve", policies, "--addr", &addr, "--no-watch"],
        &[
            "serve-demo",
            "--policy",
            "127.0.0.1:0",
            "--redactor",
            "127.0.0.1:0",
            "--metrics-addr",
            &addr,
        ],
    ];
    for args in runs {
        let out = hookwire(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{addr} is already in use")),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("Os {"), "{args:?}: {stderr}");
    }
    drop(busy);
}

/// (clap refuses them; the examples' own tests check theirs.)
#[test]
fn unknown_flags_are_refused_with_the_usage_status() {
    for args in [
        &["demo", "--bogus"][..],
        &["check", "x.json", "--bogus"],
        &["--bogus"],
    ] {
        let out = hookwire(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("--bogus"), "{args:?}");
    }
}

/// The commands `hookwire --help` lists.
fn listed_in_help() -> Vec<String> {
    let out = hookwire(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    let commands = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .split("\n\n")
        .next()
        .unwrap();
    commands
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn help_and_the_readme_list_every_command_with_an_example() {
    let listed = listed_in_help();
    assert_eq!(listed, SUBCOMMANDS, "hookwire --help");
    let help = text(&hookwire(&["--help"]).stdout);
    assert!(help.contains("Example:"), "{help}");
    let readme = include_str!("../../README.md");
    for command in SUBCOMMANDS {
        let row = format!("| `hookwire {command}");
        assert!(
            readme.contains(&row),
            "the README's command table has no {row}"
        );
        let out = hookwire(&[command, "--help"]);
        assert!(out.status.success(), "{command} --help");
        assert!(
            text(&out.stdout).contains("Example"),
            "{command} --help shows no example"
        );
    }
}

#[test]
fn mcp_token_prints_the_token_alone_on_stdout_and_its_line_on_stderr() {
    use sha2::Digest;
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["mcp", "token", "--name", "cursor"])
        .output()
        .expect("run hookwire mcp token");
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    // `> cursor.token` keeps the token and nothing else.
    let token = stdout.strip_suffix('\n').expect("one line");
    assert!(
        !token.is_empty() && !token.contains(char::is_whitespace),
        "{stdout:?}"
    );
    // `2>> mcp-clients` appends exactly the clients-file line.
    let hash = hex::encode(sha2::Sha256::digest(token.as_bytes()));
    assert_eq!(stderr, format!("cursor {hash}\n"));
}
