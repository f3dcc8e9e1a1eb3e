//! The commands made operable, run as the built binary: `hookwire gateway
//! --metrics-addr` serves the host's and the gateway's series after known
//! requests (checked by `promtool check metrics`), and with
//! `RUST_LOG=hookwire_gateway=info` writes one access line per request on
//! stderr while `--print-records` keeps stdout to records; `hookwire demo
//! --metrics-addr` serves its host's and its services' series from one
//! registry; `hookwire policy serve --metrics-addr` serves the service's,
//! and logs through `RUST_LOG` on stderr.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hookwire_client::{Host, InputRole, ShutdownReason, ToolCall};
pub(crate) use hookwire_testkit::child::{line_with, stderr_lines};
use hookwire_testkit::{metric_value, promtool_accepts, scrape_metrics};
use serde_json::{Value, json};

use crate::gateway::{CLIENT_KEY, Running, UPSTREAM_KEY, chat, line_starting, lines_of, upstream};

/// The `ADDR` of a printed `http://ADDR/...` URL ending the line.
pub(crate) fn addr_of(line: &str) -> String {
    let url = line.split_whitespace().last().unwrap();
    let rest = url.trim_start_matches("http://");
    rest.split('/').next().unwrap().to_owned()
}

/// A plain HTTP/1.0 request; the status.
fn status_of(addr: &str, method: &str, path: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(stream, "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line")
}

/// Sends SIGINT (what Ctrl-C sends) to `child`.
pub(crate) fn interrupt(child: &Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
fn the_gateway_command_serves_its_metrics_and_logs_one_access_line_per_request() {
    let bin = env!("CARGO_BIN_EXE_hookwire");
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("allow.json");
    let document = json!({
        "declaration": "agent-hooks-declaration/1.0",
        "spec": "agent-hooks/0.1",
        "id": "cli-gateway-metrics",
        "host": {"name": "hookwire", "version": "0.1.0"},
        "configuration": {"mode": "enforce",
                          "composition": {"profile": "sequential/first_deny", "on_approval": "stop"},
                          "identity_provider": "jcs-sha256"},
        "bindings": [{"id": "passthrough", "kind": "hookwire.allow"}],
    });
    std::fs::write(&declaration, document.to_string()).unwrap();
    let (upstream, seen) = upstream();
    let mut gateway = Command::new(bin)
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
        ])
        .arg("--declaration")
        .arg(&declaration)
        .args(["--key-env", "HOOKWIRE_TEST_UPSTREAM_KEY", "--print-records"])
        .args(["--metrics-addr", "127.0.0.1:0"])
        .env("HOOKWIRE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
        .env("RUST_LOG", "hookwire_gateway=info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire gateway");
    let lines = lines_of(&mut gateway);
    let errors = stderr_lines(&mut gateway);
    let mut gateway = Running(gateway);
    let banner = line_starting(&errors, "hookwire gateway: ");
    let addr = banner
        .split_whitespace()
        .nth(2)
        .unwrap()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let metrics_line = line_starting(&errors, "hookwire gateway metrics: ");
    assert!(metrics_line.ends_with("/metrics"), "{metrics_line}");
    let metrics = addr_of(&metrics_line);

    let (status, answer) = chat(
        &addr,
        &json!({"model": "demo-model",
                "messages": [{"role": "user", "content": "tidy up"}],
                "tools": [{"type": "function", "function": {"name": "bash",
                           "parameters": {"type": "object"}}}]}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(
        status_of(&addr, "POST", "/v1/ungoverned?key=sk-in-query"),
        404
    );

    // One line per request, on stderr, with what the gateway applied.
    let mut err = Vec::new();
    let access = line_with(
        &errors,
        &["hookwire_gateway::access", "route=/v1/chat/completions"],
        &mut err,
    );
    for fact in [
        "method=POST",
        "api=\"chat_completions\"",
        "status=200",
        "session=\"cli-gateway\"",
        "request_id=\"gw-",
        "upstream_status=200",
        "outcome=\"forwarded\"",
        "completed=true",
        "latency_ms=",
    ] {
        assert!(access.contains(fact), "{fact} missing: {access}");
    }
    let unmatched = line_with(
        &errors,
        &["hookwire_gateway::access", "route=unmatched"],
        &mut err,
    );
    for fact in ["status=404", "path=\"/v1/ungoverned\"", "api=\"other\""] {
        assert!(unmatched.contains(fact), "{fact} missing: {unmatched}");
    }
    assert!(!unmatched.contains("sk-in-query"), "{unmatched}");

    let text = scrape_metrics(metrics.as_str());
    promtool_accepts("hookwire gateway", &text);
    let requests = "hookwire_gateway_requests_total";
    let chat_route = [
        ("api", "chat_completions"),
        ("route", "/v1/chat/completions"),
    ];
    assert_eq!(
        metric_value(
            &text,
            requests,
            &[chat_route[0], chat_route[1], ("status", "2xx")]
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            requests,
            &[("api", "other"), ("route", "unmatched"), ("status", "4xx")]
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            "hookwire_gateway_request_duration_seconds_count",
            &chat_route
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            "hookwire_gateway_upstream_responses_total",
            &[("api", "chat_completions"), ("class", "2xx")]
        ),
        1.0
    );
    assert_eq!(
        metric_value(&text, "hookwire_gateway_requests_in_flight", &[]),
        0.0
    );
    // The host's series, from the same registry.
    assert_eq!(
        metric_value(
            &text,
            "hookwire_host_emissions_total",
            &[
                ("point", "input"),
                ("mode", "enforce"),
                ("decision", "allow")
            ]
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            "hookwire_host_emissions_total",
            &[
                ("point", "pre_tool_call"),
                ("mode", "enforce"),
                ("decision", "allow")
            ]
        ),
        2.0,
        "both proposed calls"
    );
    assert_eq!(metric_value(&text, "hookwire_host_sessions_open", &[]), 1.0);

    interrupt(&gateway.0);
    let exit = gateway.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let mut out = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(10)) {
        out.push(line);
    }
    while let Ok(line) = errors.recv_timeout(Duration::from_secs(10)) {
        err.push(line);
    }
    // stdout: records only (the log lines went to stderr).
    assert!(!out.is_empty());
    for line in &out {
        let record: Value = serde_json::from_str(line)
            .unwrap_or_else(|_| panic!("not a record line on stdout: {line}"));
        assert!(record["interception_point"].is_string(), "{line}");
    }
    assert!(
        err.iter().any(|l| l.contains("hookwire_gateway::applied")),
        "{err:?}"
    );
    for text in out.iter().chain(&err).chain([&access, &unmatched, &text]) {
        assert!(!text.contains(UPSTREAM_KEY), "the key leaked: {text}");
        assert!(!text.contains(CLIENT_KEY), "the client key leaked: {text}");
    }
}

#[test]
fn the_demo_serves_its_host_and_service_series_from_one_registry() {
    let mut demo = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["demo", "--metrics-addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run hookwire demo");
    let lines = lines_of(&mut demo);
    let mut demo = Running(demo);
    let metrics = addr_of(&line_starting(&lines, "metrics "));
    line_starting(&lines, "(metrics kept serving");
    let text = scrape_metrics(metrics.as_str());
    promtool_accepts("hookwire demo", &text);
    let emissions = |point: &'static str, decision: &'static str| {
        metric_value(
            &text,
            "hookwire_host_emissions_total",
            &[
                ("point", point),
                ("mode", "enforce"),
                ("decision", decision),
            ],
        )
    };
    assert_eq!(emissions("agent_startup", "allow"), 1.0);
    assert_eq!(emissions("pre_tool_call", "deny"), 1.0, "the rm -rf");
    assert_eq!(emissions("agent_shutdown", "allow"), 1.0);
    assert_eq!(metric_value(&text, "hookwire_host_sessions_open", &[]), 0.0);
    // Every host series the shipped alert rules query is exported here.
    let rules = include_str!("../../docs/prometheus/hookwire.rules.yml");
    let mut queried: Vec<&str> = rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("hookwire_host_"))
        .collect();
    queried.sort_unstable();
    queried.dedup();
    assert!(!queried.is_empty(), "the rules query no host series");
    for series in queried {
        let family = ["_total", "_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| series.strip_suffix(s))
            .unwrap_or(series);
        assert!(
            text.contains(&format!("# TYPE {series} "))
                || text.contains(&format!("# TYPE {family} ")),
            "the rules query {series}, which hookwire demo does not export:\n{text}"
        );
    }
    assert_eq!(
        metric_value(
            &text,
            "hookwire_interceptor_requests_total",
            &[
                ("service", "demo-policy"),
                ("point", "pre_tool_call"),
                ("decision", "deny")
            ]
        ),
        1.0
    );
    interrupt(&demo.0);
    let exit = demo.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn policy_serve_serves_its_metrics_and_logs_through_rust_log_on_stderr() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookwire"))
        .args(["policy", "serve", "examples/policies", "--no-watch"])
        .args(["--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
        // A debug build beside other tests: no decision cut off.
        .args(["--eval-timeout-ms", "10000"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("RUST_LOG", "hookwire_server=info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hookwire policy serve");
    let lines = lines_of(&mut child);
    let errors = stderr_lines(&mut child);
    let mut policy = Running(child);
    let metrics = addr_of(&line_starting(&lines, "policy metrics: "));
    let serving = line_starting(&lines, "policy serving ");
    let endpoint = serving
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    // The endpoint's own INFO line, through RUST_LOG, on stderr.
    line_with(&errors, &["metrics serving", &metrics], &mut Vec::new());

    let host = Host::builder("policy-metrics-agent", "hookwire")
        .remote("policy", endpoint)
        .build()
        .unwrap();
    let session = host.session("s").unwrap();
    session.start(["bash"]).await.unwrap();
    let turn = session
        .input(json!("tidy up"), InputRole::User)
        .await
        .unwrap();
    assert!(turn.proceeds(), "{:?}", turn.verdict());
    let rm = ToolCall::new("c1", "bash", json!({"cmd": "rm -rf /"}));
    assert!(!session.pre_tool_call(&rm).await.unwrap().proceeds());
    session.shutdown(ShutdownReason::Completed).await.unwrap();

    let text = tokio::task::spawn_blocking(move || scrape_metrics(metrics.as_str()))
        .await
        .unwrap();
    promtool_accepts("hookwire policy serve", &text);
    assert_eq!(
        metric_value(
            &text,
            "hookwire_interceptor_requests_total",
            &[("point", "pre_tool_call"), ("decision", "deny")]
        ),
        1.0,
        "{text}"
    );
    interrupt(&policy.0);
    let exit = policy.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}
