//! The Grafana dashboard of `deploy/grafana/hookwire.json` against what the
//! code exports: each command that serves metrics is started on
//! 127.0.0.1:0 with `--metrics-addr` as an operator runs it (`demo`,
//! `serve-demo`, `policy serve`, `approvals serve`, `gateway`, `hooks
//! serve`, `mcp`), given a little traffic where its series only appear
//! once something happened (`policy serve` one decision from a host), and
//! scraped. Every series a dashboard query
//! names must be in those scrapes with the labels the query groups or
//! matches by; every query must be recorded in the `hookwire-dashboard`
//! group of `docs/prometheus/hookwire.rules.yml`, which must parse
//! (`promtool check rules`); and both files must be what
//! `deploy/grafana/generate.py` writes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use hookwire_client::{Host, InputRole, ShutdownReason, ToolCall};
use hookwire_testkit::{promtool, scrape_metrics, workspace_root};
use serde_json::{Value, json};

/// The dashboard's rows, in order.
const ROWS: [&str; 7] = [
    "Hosts",
    "Interceptor services",
    "Policy service",
    "Approval queue",
    "Gateway",
    "MCP proxy",
    "Hooks daemon",
];

/// A command, killed on drop, and every line it prints on either stream.
struct Running {
    child: Child,
    lines: Receiver<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run hookwire {args:?}: {e}"));
    let (tx, lines) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    for stream in [Box::new(out) as Box<dyn Read + Send>, Box::new(err)] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    Running { child, lines }
}

impl Running {
    /// Waits for a printed line holding `needle` and returns it.
    fn line_with(&self, needle: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no line with {needle:?} within 60 s"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// The `ADDR` of the printed `http://ADDR/metrics`.
    fn metrics_addr(&self) -> String {
        let line = self.line_with("/metrics");
        url_in(&line, "/metrics")
    }
}

/// The host:port of the first `http://host:port...` in `line` whose URL
/// contains `marker` (`""`: any).
fn url_in(line: &str, marker: &str) -> String {
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://") && w.contains(marker))
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    let rest = &url["http://".len()..];
    rest.split('/').next().unwrap().to_owned()
}

/// One HTTP/1.1 POST; the status code.
fn post(addr: &str, path: &str, token: Option<&str>, body: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let auth = token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{auth}content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {answer:?}"))
}

fn scrape(addr: &str) -> String {
    scrape_metrics(addr)
}

/// Series name → the label names of its samples, from expositions.
fn series(texts: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in texts.iter().flat_map(|t| t.lines()) {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (name, labels) = match line.split_once('{') {
            Some((name, rest)) => (name, rest.split_once('}').map_or("", |(l, _)| l)),
            None => (line.split_whitespace().next().unwrap(), ""),
        };
        let names = found.entry(name.to_owned()).or_default();
        for pair in labels.split(',').filter(|p| !p.is_empty()) {
            names.insert(pair.split('=').next().unwrap().trim().to_owned());
        }
    }
    found
}

/// The `hookwire_*` series an expression names.
fn names_in(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("hookwire_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

/// The label names an expression groups by (`by (...)`) or matches on.
fn labels_in(expr: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    for part in expr.split("by (").skip(1) {
        let list = part.split(')').next().unwrap();
        labels.extend(list.split(',').map(|l| l.trim().to_owned()));
    }
    for part in expr.split('{').skip(1) {
        let matchers = part.split('}').next().unwrap();
        for m in matchers.split(',') {
            let name = m.split(['=', '!']).next().unwrap().trim();
            labels.insert(name.to_owned());
        }
    }
    labels.remove("le");
    labels
}

/// The dashboard's panels: (row, panel title, every query).
fn panels(dashboard: &Value) -> Vec<(String, String, Vec<String>)> {
    let mut row = String::new();
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().unwrap() {
        let title = p["title"].as_str().unwrap().to_owned();
        if p["type"] == "row" {
            row = title;
            continue;
        }
        let exprs = p["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["expr"].as_str().unwrap().to_owned())
            .collect();
        out.push((row.clone(), title, exprs));
    }
    out
}

fn hookwire_out(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "hookwire {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `policy serve`'s scrape after one decision (a destructive command at
/// `pre_tool_call`, from a host bound to it): the interceptor row's series
/// and the policy service row's.
fn policy_service_scrape() -> String {
    let policies = workspace_root().join("examples/policies");
    let policy = start(&[
        "policy",
        "serve",
        policies.to_str().unwrap(),
        "--addr",
        "127.0.0.1:0",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let (mut metrics, mut serving) = (None, None);
    while metrics.is_none() || serving.is_none() {
        let line = policy.line_with("http://");
        if line.contains("/metrics") {
            metrics = Some(url_in(&line, "/metrics"));
        } else if line.starts_with("policy serving") {
            serving = Some(url_in(&line, ""));
        }
    }
    let endpoint = format!("http://{}", serving.unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let host = Host::builder("dashboard-agent", "hookwire")
            .remote("policy", endpoint)
            .build()
            .unwrap();
        let session = host.session("s").unwrap();
        session.start(["bash"]).await.unwrap();
        session
            .input(json!("tidy up"), InputRole::User)
            .await
            .unwrap();
        let rm = ToolCall::new("c1", "bash", json!({"cmd": "rm -rf /"}));
        session.pre_tool_call(&rm).await.unwrap();
        session.shutdown(ShutdownReason::Completed).await.unwrap();
    });
    scrape(&metrics.unwrap())
}

/// Every command's scrape, each after the traffic its series need.
fn scrapes(dir: &std::path::Path) -> Vec<String> {
    let mut texts = Vec::new();
    // A host and both demo services, after the demo's session.
    let demo = start(&["demo", "--metrics-addr", "127.0.0.1:0"]);
    let addr = demo.metrics_addr();
    demo.line_with("metrics kept serving");
    texts.push(scrape(&addr));
    let services = start(&[
        "serve-demo",
        "--policy",
        "127.0.0.1:0",
        "--redactor",
        "127.0.0.1:0",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    texts.push(scrape(&services.metrics_addr()));
    texts.push(policy_service_scrape());

    // The approval service, with one approver.
    let token = hookwire_out(&["approvals", "token", "--name", "ann"]);
    let hash = token
        .lines()
        .find_map(|l| l.strip_prefix("sha256:"))
        .unwrap()
        .trim();
    let access = dir.join("access.json");
    std::fs::write(
        &access,
        format!(r#"{{"hosts":[],"approvers":[{{"name":"ann","token_sha256":"{hash}"}}],"revoked_token_sha256":[]}}"#),
    )
    .unwrap();
    let approvals = start(&[
        "approvals",
        "serve",
        "--access",
        access.to_str().unwrap(),
        "--grpc-addr",
        "127.0.0.1:0",
        "--web-addr",
        "127.0.0.1:0",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    texts.push(scrape(&approvals.metrics_addr()));

    // The gateway, one request to an upstream that refuses connections.
    let declaration = dir.join("allow.json");
    std::fs::write(
        &declaration,
        r#"{"declaration": "agent-hooks-declaration/1.0", "bindings": [{"id": "passthrough", "kind": "hookwire.allow"}]}"#,
    )
    .unwrap();
    let declaration = declaration.to_str().unwrap();
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let upstream = format!("http://{closed}/v1");
    let gateway = start(&[
        "gateway",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--declaration",
        declaration,
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let listen = url_in(&gateway.line_with("hookwire gateway: http://"), "");
    let metrics = gateway.metrics_addr();
    let chat = br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
    assert_eq!(post(&listen, "/v1/chat/completions", None, chat), 502);
    texts.push(scrape(&metrics));

    // The hooks daemon: one governed call, one refused caller, one
    // unreadable payload.
    let token_file = dir.join("hooks-token");
    let hooks_token = "dashboard-test-hooks-token";
    std::fs::write(&token_file, hooks_token).unwrap();
    let hooks = start(&[
        "hooks",
        "serve",
        "--declaration",
        declaration,
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        token_file.to_str().unwrap(),
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    let listen = url_in(&hooks.line_with("hookwire hooks: http://"), "");
    let metrics = hooks.metrics_addr();
    let route = "/v1/hooks/claude-code";
    let call = std::fs::read(
        workspace_root().join("tests/fixtures/hooks/claude-code/pre-tool-use-bash.json"),
    )
    .unwrap();
    assert_eq!(post(&listen, route, Some(hooks_token), &call), 200);
    assert_eq!(post(&listen, route, None, &call), 401);
    post(&listen, route, Some(hooks_token), b"not json");
    texts.push(scrape(&metrics));

    // The MCP proxy over HTTP, one client.
    let client = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["mcp", "token", "--name", "c1"])
        .output()
        .unwrap();
    assert!(client.status.success());
    let clients = dir.join("mcp-clients");
    std::fs::write(&clients, &client.stderr).unwrap();
    let mcp_upstream = format!("http://{closed}/mcp");
    let mcp = start(&[
        "mcp",
        "--declaration",
        declaration,
        "--listen",
        "127.0.0.1:0",
        "--clients-file",
        clients.to_str().unwrap(),
        "--upstream",
        &mcp_upstream,
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    texts.push(scrape(&mcp.metrics_addr()));
    texts
}

#[test]
fn every_dashboard_query_names_exported_series_and_parses() {
    let root = workspace_root();
    let generated = Command::new("python3")
        .arg(root.join("deploy/grafana/generate.py"))
        .arg("--check")
        .output()
        .expect("run python3 deploy/grafana/generate.py --check");
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("deploy/grafana/hookwire.json")).unwrap(),
    )
    .unwrap();
    let panels = panels(&dashboard);
    let rows: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "row")
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(rows, ROWS);

    let dir = tempfile::tempdir().unwrap();
    let exported = series(&scrapes(dir.path()));
    let rules_file = root.join("docs/prometheus/hookwire.rules.yml");
    let rules = std::fs::read_to_string(&rules_file).unwrap();
    let mut n = 0;
    for (row, title, exprs) in &panels {
        assert!(!exprs.is_empty(), "{row} / {title}: no query");
        for expr in exprs {
            let names = names_in(expr);
            assert!(!names.is_empty(), "{title}: {expr} names no series");
            let recorded = format!("expr: '{}'", expr.replace('\'', "''"));
            assert!(
                rules.contains(&recorded),
                "{row} / {title}: {expr} is not recorded in {}",
                rules_file.display()
            );
            n += 1;
            let mut labels = BTreeSet::new();
            for name in &names {
                let have = exported
                    .get(name)
                    .unwrap_or_else(|| panic!("{row} / {title}: {name} is in no scrape ({expr})"));
                labels.extend(have.iter().cloned());
            }
            for label in labels_in(expr) {
                assert!(
                    labels.contains(&label),
                    "{row} / {title}: no exported {names:?} has label {label} ({expr})"
                );
            }
        }
    }
    let checked = Command::new(promtool())
        .args(["check", "rules"])
        .arg(&rules_file)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "promtool check rules: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    eprintln!(
        "dashboard: {} rows, {} panels, {n} queries parsed, recorded and compared with the scrapes",
        rows.len(),
        panels.len()
    );
}
