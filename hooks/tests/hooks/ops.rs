//! The hooks daemon operated (the built `hookwire hooks serve`, with
//! `hookwire hook` as the agent's command hook): on a Unix socket (no
//! token: the socket's permissions authenticate; mode 0600; removed on
//! stop; bad paths refused; a stale socket replaced, a live one refused;
//! a peer that is not its owner disconnected) and with `--metrics-addr`,
//! the daemon's own series beside the host's, checked by `promtool`.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use hookwire_testkit::child::line_starting;
use hookwire_testkit::hooks_daemon::{
    Daemon, answer, failed_closed, golden, hook, post, pre_tool_decision, run_with_stdin,
};
use hookwire_testkit::{
    hookwire_bin, metric_value, promtool_accepts, scrape_metrics, workspace_root,
};
use serde_json::json;

/// A directory only this user can write to, for the socket.
fn socket_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn interrupt_and_wait(d: &mut Daemon) {
    let sent = Command::new("kill")
        .args(["-INT", &d.daemon.0.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let exit = d.daemon.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}

/// `hookwire hooks serve` run to its refusal: the stderr.
fn serve_refused(listen: &str) -> String {
    let out = Command::new(hookwire_bin())
        .args(["hooks", "serve", "--declaration"])
        .arg(workspace_root().join("examples/declarations/policy.json"))
        .args(["--listen", listen])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A copy of the binary in a directory `nobody` can reach.
fn nobody_can_run() -> PathBuf {
    static COPY: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    let (_, bin) = COPY.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.path().join("hookwire");
        std::fs::copy(hookwire_bin(), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, bin)
    });
    bin.clone()
}

fn nix_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

fn addr_of(line: &str) -> String {
    let url = line.split_whitespace().last().unwrap();
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned()
}

/// `hookwire hook` run as user `nobody` (the test runs as root).
fn hook_as_nobody(endpoint: &str, payload: &[u8]) -> Output {
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(nobody_can_run())
        .args(["hook", "--agent", "claude-code", "--endpoint", endpoint])
        .env_remove("HOOKWIRE_HOOKS_TOKEN");
    run_with_stdin(command, payload)
}

#[test]
fn a_hook_over_the_unix_socket_needs_no_token_and_the_socket_goes_on_stop() {
    let dir = socket_dir();
    let path = dir.path().join("hooks.sock");
    let listen = format!("unix:{}", path.display());
    let mut d = Daemon::start_with(&listen, false, &[]);
    assert_eq!(d.base, listen, "the banner names the socket");
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    // No token anywhere: the socket's permissions authenticate.
    assert_eq!(
        answer(&hook(&d.base, None, &golden("session-start"), &[])),
        json!({})
    );
    let denied = answer(&hook(
        &d.base,
        None,
        &golden("pre-tool-use-bash-destructive"),
        &[],
    ));
    assert_eq!(pre_tool_decision(&denied).0, "deny");
    // The endpoint from the environment.
    let mut command = Command::new(hookwire_bin());
    command
        .args(["hook", "--agent", "claude-code"])
        .env("HOOKWIRE_HOOKS_ENDPOINT", &listen)
        .env_remove("HOOKWIRE_HOOKS_TOKEN");
    let out = run_with_stdin(command, &golden("pre-tool-use-bash"));
    assert_eq!(answer(&out), json!({}));
    assert_eq!(
        d.points("claude-code:abc123"),
        ["agent_startup", "input", "pre_tool_call", "pre_tool_call"]
    );

    interrupt_and_wait(&mut d);
    assert!(!path.exists(), "the socket is removed on stop");
    // Down: the socket is gone, the hook blocks.
    let reason = failed_closed(&hook(&listen, None, &golden("pre-tool-use-bash"), &[]));
    assert!(reason.contains("unreachable"), "{reason}");
}

#[test]
fn a_token_given_on_the_socket_is_required_there_too() {
    let dir = socket_dir();
    let listen = format!("unix:{}", dir.path().join("hooks.sock").display());
    let d = Daemon::start_with(&listen, true, &[]);
    let payload = golden("pre-tool-use-bash");
    let reason = failed_closed(&hook(&d.base, None, &payload, &[]));
    assert!(reason.contains("401"), "{reason}");
    assert_eq!(
        answer(&hook(&d.base, Some(&d.token_file), &payload, &[])),
        json!({})
    );
}

#[test]
fn bad_socket_paths_are_refused_a_stale_socket_replaced_a_live_one_kept() {
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let why = serve_refused(&format!(
        "unix:{}",
        open.path().join("hooks.sock").display()
    ));
    assert!(why.contains("group- or world-writable"), "{why}");

    let dir = socket_dir();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "keep").unwrap();
    let why = serve_refused(&format!("unix:{}", file.display()));
    assert!(why.contains("is not a socket"), "{why}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
    assert!(serve_refused("unix:").contains("names no socket path"));

    // A stale socket (its daemon died) is replaced.
    let path = dir.path().join("hooks.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let listen = format!("unix:{}", path.display());
    let d = Daemon::start_with(&listen, false, &[]);
    assert_eq!(
        answer(&hook(&d.base, None, &golden("pre-tool-use-bash"), &[])),
        json!({})
    );
    // A second daemon on the live socket is refused and leaves it be.
    let why = serve_refused(&listen);
    assert!(why.contains("another process is listening"), "{why}");
    assert_eq!(
        answer(&hook(&d.base, None, &golden("pre-tool-use-mcp"), &[])),
        json!({})
    );
}

#[test]
fn another_user_is_kept_out_by_the_mode_and_by_the_peer_check() {
    if !hookwire_testkit::require(
        nix_root(),
        "root",
        "the test runs a hook as another user (nobody)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Reachable by others (0711), writable by the owner only.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let path = dir.path().join("hooks.sock");
    let listen = format!("unix:{}", path.display());
    let d = Daemon::start_with(&listen, false, &["--metrics-addr", "127.0.0.1:0"]);
    let metrics = line_starting(&d.said, "hookwire hooks metrics: ");
    let metrics = addr_of(&metrics);
    let payload = golden("pre-tool-use-bash-destructive");
    // The mode: 0600 refuses the connection itself.
    let reason = failed_closed(&hook_as_nobody(&listen, &payload));
    assert!(reason.contains("Permission denied"), "{reason}");
    // Opened up by mistake: the peer check still disconnects a stranger.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let reason = failed_closed(&hook_as_nobody(&listen, &payload));
    assert!(reason.contains("unreachable"), "{reason}");
    let text = scrape_metrics(metrics.as_str());
    assert_eq!(
        metric_value(
            &text,
            "hookwire_hooks_refused_callers_total",
            &[("agent", "unknown"), ("reason", "peer")]
        ),
        1.0
    );
    // Nothing of the stranger's reached the host.
    assert!(d.points("claude-code:abc123").is_empty());
}

#[test]
fn the_daemon_serves_its_own_series_beside_the_hosts() {
    let d = Daemon::start(&["--metrics-addr", "127.0.0.1:0"]);
    let metrics = addr_of(&line_starting(&d.said, "hookwire hooks metrics: "));
    assert_eq!(answer(&d.hook(&golden("session-start"))), json!({}));
    assert_eq!(answer(&d.hook(&golden("user-prompt-submit"))), json!({}));
    let denied = answer(&d.hook(&golden("pre-tool-use-bash-destructive")));
    assert_eq!(pre_tool_decision(&denied).0, "deny");
    failed_closed(&d.hook(&golden("notification")));
    let route = "/v1/hooks/claude-code";
    assert_eq!(post(&d.base, route, Some("wrong"), b"{}").0, 401);

    let text = scrape_metrics(metrics.as_str());
    promtool_accepts("hookwire hooks serve", &text);
    let decisions = |event: &str, outcome: &str| {
        metric_value(
            &text,
            "hookwire_hooks_decisions_total",
            &[
                ("agent", "claude-code"),
                ("event", event),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(decisions("SessionStart", "proceed"), 1.0);
    assert_eq!(decisions("UserPromptSubmit", "proceed"), 1.0);
    assert_eq!(decisions("PreToolUse", "block"), 1.0);
    assert_eq!(decisions("other", "stop"), 1.0, "the ungoverned event");
    assert_eq!(
        metric_value(
            &text,
            "hookwire_hooks_decision_duration_seconds_count",
            &[("agent", "claude-code"), ("event", "PreToolUse")]
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            "hookwire_hooks_failed_closed_total",
            &[("agent", "claude-code"), ("cause", "payload")]
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            "hookwire_hooks_refused_callers_total",
            &[("agent", "claude-code"), ("reason", "token")]
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            "hookwire_hooks_sessions_open",
            &[("agent", "claude-code")]
        ),
        1.0
    );
    // The host's series are there too.
    assert_eq!(
        metric_value(
            &text,
            "hookwire_host_emissions_total",
            &[
                ("point", "pre_tool_call"),
                ("mode", "enforce"),
                ("decision", "deny")
            ]
        ),
        1.0
    );
    assert_eq!(answer(&d.hook(&golden("session-end"))), json!({}));
    let text = scrape_metrics(metrics.as_str());
    assert_eq!(
        metric_value(
            &text,
            "hookwire_hooks_sessions_open",
            &[("agent", "claude-code")]
        ),
        0.0
    );
}
