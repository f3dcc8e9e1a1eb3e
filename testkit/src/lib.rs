//! Shared support for hookwire's tests (unpublished): scriptable
//! interceptor services served for real on 127.0.0.1:0 (plain or behind a
//! token check), a host builder shortcut, one valid context per
//! interception point, where the workspace keeps what
//! `scripts/setup.sh` installs ([`workspace_root`]), the `hookwire`
//! command for the products' tests ([`hookwire_bin`]), the project's
//! Python venv checked for what a test imports ([`python_venv`]),
//! `promtool` checks of Prometheus expositions and their scrape, an approval request, a runtime a test
//! can kill like a crash, the log capture of the no-secret-in-logs checks
//! ([`process_logs`]), throwaway PostgreSQL clusters ([`postgres`]),
//! throwaway certificate authorities ([`tls`]) and a TLS front for any
//! plain test upstream ([`tls_front`]), a misbehaving approval
//! service ([`rogue`]), what a test needs from the machine ([`require`]:
//! a missing tool fails under CI, skips loudly elsewhere), child processes
//! killed when a test ends and read line by line ([`child`]), the hooks
//! daemon and the command hook run as an agent runs them
//! ([`hooks_daemon`]), a gateway's chat route called without a runtime
//! ([`gateway_http`]), the recording mock model APIs and the official Python SDKs as their
//! clients ([`model_upstream`]: the gateway's tests and the workspace's
//! scenarios through it share one copy), and the
//! official JSON schemas as an oracle ([`schema`]): the hosts built here validate every record they produce
//! and [`Scripted`] validates every context it receives.
//!
//! Used by the integration tests (`hookwire-tests`), `hookwire-cli`'s
//! tests and the products' own tests (`hookwire-mcp`, `hookwire-gateway`, `hookwire-hooks`). `hookwire-server`'s
//! own tests keep their wire-level fixtures in `server/tests/common/`: this crate depends on `hookwire-server`, so the
//! server depending on it back (even as a dev-dependency) would build two
//! copies of the server crate whose types do not match.

pub mod child;
mod crash;
pub mod gateway_http;
pub mod hooks_daemon;
mod logs;
pub mod model_upstream;
pub mod postgres;
mod python;
mod require;
pub mod rogue;
pub mod schema;
pub mod tls;
pub mod tls_front;
mod workspace;

pub use crash::CrashableRuntime;
pub use logs::{LogCapture, process_logs};
pub use python::python_venv;
pub use require::{on_path, require, require_tool, under_ci};
pub use schema::{SchemaSink, check_context, check_record};
pub use workspace::{hookwire_bin, workspace_root};

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_client::{Host, HostBuilder, InterceptorBinding, RecordLog};
use hookwire_server::prelude::*;
use hookwire_server::{RunningServer, Server, spawn_local};
use serde_json::{Map, Value, json};

/// Decides with a closure, records every context it receives (after
/// validating it against its point's official schema, [`check_context`]),
/// and can be slowed down or made to declare points in its manifest.
#[derive(Clone)]
pub struct Scripted {
    name: String,
    respond: Arc<dyn Fn(&AgentContext) -> Verdict + Send + Sync>,
    /// Every context the service received, in arrival order.
    pub seen: Arc<Mutex<Vec<AgentContext>>>,
    delay: Option<Duration>,
    points: Vec<InterceptionPoint>,
}

impl Scripted {
    /// A service named `name` answering every point with `respond`.
    pub fn new(
        name: &str,
        respond: impl Fn(&AgentContext) -> Verdict + Send + Sync + 'static,
    ) -> Self {
        // Missing schemas fail the test here, not a call.
        schema::schemas();
        Self {
            name: name.into(),
            respond: Arc::new(respond),
            seen: Arc::default(),
            delay: None,
            points: Vec::new(),
        }
    }

    /// Escalates every tool call (a liftable deny with `reason` and
    /// `message`) and allows everything else.
    pub fn escalating_tool_calls(name: &str, reason: &'static str, message: &'static str) -> Self {
        Self::escalating_at(name, &[InterceptionPoint::PreToolCall], reason, message)
    }

    /// Escalates at each of `points` (a liftable deny with `reason` and
    /// `message`) and allows everything else.
    pub fn escalating_at(
        name: &str,
        points: &[InterceptionPoint],
        reason: &'static str,
        message: &'static str,
    ) -> Self {
        let points = points.to_vec();
        Self::new(name, move |ctx| {
            if points.contains(&ctx.point()) {
                Verdict::escalate(reason).with_message(message)
            } else {
                Verdict::allow()
            }
        })
    }

    /// A service that allows everything.
    pub fn allow_all(name: &str) -> Self {
        Self::new(name, |_| Verdict::allow())
    }

    /// Declares `points` in the manifest `Describe` returns (by default it
    /// declares none, which means all eight).
    pub fn declaring(mut self, points: &[InterceptionPoint]) -> Self {
        self.points = points.to_vec();
        self
    }

    /// Sleeps `delay` before answering each call.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// A copy of the contexts received so far.
    pub fn seen(&self) -> Vec<AgentContext> {
        self.seen.lock().unwrap().clone()
    }

    /// Serves the service on 127.0.0.1:0 until the returned handle is shut down.
    pub async fn serve(self) -> RunningServer {
        spawn_local(self).await.expect("serve on 127.0.0.1:0")
    }

    /// Serves the service like [`serve`](Self::serve), behind
    /// [`serve_gated`]'s token check.
    pub async fn serve_gated(self, authorization: &str) -> RunningServer {
        serve_gated(self, authorization).await
    }
}

#[async_trait]
impl Interceptor for Scripted {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        let mut m = manifest(self.name.clone(), "1.0.0");
        m.points = self.points.clone();
        m
    }

    async fn intercept(&self, ctx: &AgentContext) -> Verdict {
        check_context(ctx);
        self.seen.lock().unwrap().push(ctx.clone());
        if let Some(d) = self.delay {
            tokio::time::sleep(d).await;
        }
        (self.respond)(ctx)
    }
}

/// Serves `service` on 127.0.0.1:0, refusing every request (health checks
/// and `Describe` included) whose `authorization` metadata is not exactly
/// `authorization`, with `UNAUTHENTICATED`: how tests check that a host
/// sends the metadata it was configured with.
pub async fn serve_gated<S: Interceptor>(service: S, authorization: &str) -> RunningServer {
    let expected = authorization.to_owned();
    let check = tonic::service::InterceptorLayer::new(move |req: tonic::Request<()>| {
        match req.metadata().get("authorization").map(|v| v.to_str()) {
            Some(Ok(v)) if v == expected => Ok(req),
            _ => Err(tonic::Status::unauthenticated("token required")),
        }
    });
    Server::builder()
        .layer(check)
        .service(service)
        .spawn_local()
        .await
        .expect("serve on 127.0.0.1:0")
}

/// A host builder with a record log, for the agent `test-agent`; its
/// records are also validated against the official record schema
/// ([`SchemaSink`]).
pub fn host() -> (HostBuilder, RecordLog) {
    let records = RecordLog::new();
    (
        validated(Host::builder("test-agent", "hookwire").record_sink(records.clone())),
        records,
    )
}

/// `builder` with a [`SchemaSink`]: for the tests that build their hosts
/// themselves.
pub fn validated(builder: HostBuilder) -> HostBuilder {
    builder.record_sink(SchemaSink::new())
}

/// A host with one remote interceptor per running server, in order.
pub fn host_with(servers: &[(&str, &RunningServer)]) -> (Host, RecordLog) {
    let (mut b, records) = host();
    for (name, s) in servers {
        b = b.bind(InterceptorBinding::remote(*name, s.endpoint()));
    }
    (b.build().expect("valid host"), records)
}

/// The bash tool call the tests guard.
pub fn bash(cmd: &str) -> hookwire_client::ToolCall {
    hookwire_client::ToolCall::new("call-1", "bash", json!({"cmd": cmd, "timeout_s": 30}))
}

/// Reads a string member of the target.
pub fn target_str<'a>(ctx: &'a AgentContext, key: &str) -> Option<&'a str> {
    ctx.target()
        .and_then(|t| t.get(key))
        .and_then(Value::as_str)
}

/// A valid context at `point`, as JSON: agent `test-agent`, session `s`,
/// sequence 1, and the point's members (at the tool points, the `bash`
/// call `{"cmd": "ls"}` with id `call-1`). Edit it to build a variant.
pub fn context_json(point: InterceptionPoint) -> Map<String, Value> {
    let tool_call = || json!({"id": "call-1", "name": "bash", "args": {"cmd": "ls"}});
    let model = || json!({"id": "model-1"});
    let members: Vec<(&str, Value)> = match point {
        InterceptionPoint::AgentStartup => {
            vec![("agent_init", json!({"tools_registered": ["bash"]}))]
        }
        InterceptionPoint::Input => vec![("input", json!({"content": "hello", "role": "user"}))],
        InterceptionPoint::PreModelCall => vec![
            ("model", model()),
            ("messages", json!([{"role": "user", "content": "hello"}])),
        ],
        InterceptionPoint::PostModelCall => vec![
            ("model", model()),
            (
                "response",
                json!({"content": "hi", "tool_calls": [], "finish_reason": "stop"}),
            ),
        ],
        InterceptionPoint::PreToolCall => vec![("tool_call", tool_call())],
        InterceptionPoint::PostToolCall => vec![
            ("tool_call", tool_call()),
            (
                "tool_result",
                json!({"value": "file.txt", "is_error": false}),
            ),
        ],
        InterceptionPoint::Output => vec![("output", json!({"content": "done"}))],
        InterceptionPoint::AgentShutdown => vec![("summary", json!({"reason": "completed"}))],
    };
    let mut m = Map::new();
    m.insert("spec".into(), json!(hookwire::SPEC_VERSION));
    m.insert("interception_point".into(), json!(point.as_str()));
    m.insert("timestamp".into(), json!("2026-01-01T00:00:00Z"));
    m.insert("sequence".into(), json!(1));
    m.insert(
        "agent".into(),
        json!({"id": "test-agent", "framework": "hookwire"}),
    );
    m.insert("session".into(), json!({"id": "s"}));
    m.extend(members.into_iter().map(|(k, v)| (k.to_owned(), v)));
    m
}

/// [`context_json`] as the validated [`AgentContext`].
pub fn context(point: InterceptionPoint) -> AgentContext {
    AgentContext::from_json(Value::Object(context_json(point))).expect("a valid context")
}

// ---------------------------------------------------------------------------
// Prometheus expositions: promtool and sample look-ups
// ---------------------------------------------------------------------------

/// `promtool`: `$PROMTOOL`, or the one on the PATH.
pub fn promtool() -> PathBuf {
    if let Some(p) = std::env::var_os("PROMTOOL") {
        return p.into();
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("promtool"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "promtool is missing: run scripts/setup.sh (it installs Debian's prometheus package), or set PROMTOOL"
        )
    })
}

/// Asserts that `promtool check metrics` accepts `text` (lint included).
pub fn promtool_accepts(what: &str, text: &str) {
    let mut child = Command::new(promtool())
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics refused the {what} exposition:\n{}{}\n--- exposition ---\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// In a Prometheus text exposition, the value of the sample `name` whose labels include every pair of
/// `labels`; `None` when no such sample exists.
pub fn metric_sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, set) = match series.split_once('{') {
                Some((m, rest)) => (m, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let all = labels
                .iter()
                .all(|(k, v)| set.split(',').any(|kv| kv == format!("{k}=\"{v}\"")));
            (metric == name && all).then(|| value.parse().ok())?
        })
}

/// [`metric_sample`], which must exist.
pub fn metric_value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metric_sample(text, name, labels)
        .unwrap_or_else(|| panic!("no sample {name} {labels:?} in:\n{text}"))
}

/// `GET /metrics` at `addr` over plain HTTP/1.0, as a scraper does: the
/// body, after checking the status is 200 and the content type is
/// Prometheus' text format.
pub fn scrape_metrics(addr: impl std::net::ToSocketAddrs + std::fmt::Debug) -> String {
    use std::io::Read;
    let mut stream =
        std::net::TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connect to {addr:?}: {e}"));
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    body.to_owned()
}

/// Approval request `n`: a `pre_tool_call` of `wire_transfer` (amount `n`,
/// session `s-{n}`) escalated `big_transfer`, with its own context
/// identity.
pub fn approval_request(n: u64) -> hookwire::approval::ApprovalRequest {
    let context = hookwire::AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1",
        "interception_point": "pre_tool_call",
        "timestamp": "2026-01-01T00:00:00Z",
        "sequence": n,
        "agent": {"id": "a", "framework": "hookwire"},
        "session": {"id": format!("s-{n}")},
        "tool_call": {"id": format!("tc-{n}"), "name": "wire_transfer", "args": {"amount": n}},
    }))
    .expect("valid context");
    hookwire::approval::ApprovalRequest {
        context_identity: Some(format!("sha256:{n:064}")),
        interception_point: InterceptionPoint::PreToolCall,
        verdict: hookwire::Verdict::escalate("big_transfer"),
        context,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_has_a_valid_context_fixture() {
        for point in InterceptionPoint::ALL {
            let ctx = context(point);
            assert_eq!(ctx.point(), point);
            assert!(ctx.validate().is_ok(), "{point}");
            assert!(ctx.target().is_some(), "{point} has a target");
        }
    }
}
