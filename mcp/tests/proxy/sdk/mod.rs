//! `hookwire mcp` end to end with the official MCP SDKs (pinned, installed
//! by `scripts/setup.sh`): the Python SDK's client (`ClientSession` over
//! `stdio_client` and `streamable_http_client`, tests/fixtures/mcp/client.py)
//! talks to the proxy, which governs the Python SDK's server
//! (tests/fixtures/mcp/upstream.py, over stdio or Streamable HTTP) or the
//! TypeScript SDK's (tests/fixtures/mcp/ts/upstream.mjs, over stdio) with
//! the Rego policy of tests/fixtures/mcp/policy/, served here over gRPC and
//! watched so that every emission is known. The upstreams append every call
//! they receive to a file, so a denied call is proven never to reach them;
//! the proxy's signed records are read back and matched to the emissions.
//!
//! This module holds the fixtures (paths, the watched policy, the proxy's
//! command line, the SDK client runner, records); the cases are in its
//! children by concern. The proxy is the `hookwire` binary
//! ([`hookwire_testkit::hookwire_bin`]: built beside this test binary by
//! `cargo build -p hookwire-cli`, or `HOOKWIRE_BIN`).

mod approval;
mod failures;
mod governed;
mod http;
mod malformed;
mod mediation;
mod proxy;
mod schema;
mod stateless;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire_policy::{Policies, PolicyOptions, PolicyService};
use hookwire_server::prelude::*;
use serde_json::{Value, json};

pub(crate) use proxy::{Proxy, Upstream};

/// The tool the proxy is told to hide (`--hide-tool`).
const HIDDEN: &str = "internal_debug";

/// The API key `read_config` returns.
const SECRET: &str = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";

/// Every bounded wait of these tests.
const WAIT: Duration = Duration::from_secs(60);

/// What the Python SDK client and upstream import from the venv: the
/// pinned MCP SDK and the modules the fixtures use.
const MCP_SDK: &[&str] = &[
    "mcp==2.3.0",
    "mcp.server.mcpserver",
    "mcp.client.streamable_http",
];

fn fixtures() -> PathBuf {
    hookwire_testkit::workspace_root().join("tests/fixtures/mcp")
}

/// The TypeScript upstream's script, once its SDK is installed.
fn ts_upstream() -> PathBuf {
    let dir = fixtures().join("ts");
    let sdk = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    let version = std::fs::read(&sdk)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|p| p["version"].as_str().map(str::to_owned));
    assert_eq!(
        version.as_deref(),
        Some("1.32.2"),
        "{} is missing: run scripts/setup.sh (npm ci in tests/fixtures/mcp/ts)",
        sdk.display()
    );
    dir.join("upstream.mjs")
}

// ---------------------------------------------------------------------------
// The policy, watched.

/// One emission the policy service received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) point: InterceptionPoint,
    pub(crate) session: String,
    pub(crate) tool: Option<String>,
    pub(crate) target: Option<Value>,
    pub(crate) context: Value,
}

/// The test policy, recording every context it decides on.
struct Watched {
    inner: PolicyService,
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[async_trait]
impl Interceptor for Watched {
    type Response = Result<Verdict, hookwire_policy::Error>;

    fn manifest(&self) -> Manifest {
        self.inner.manifest()
    }

    async fn intercept(&self, ctx: &AgentContext) -> Self::Response {
        hookwire_testkit::check_context(ctx);
        self.seen.lock().unwrap().push(Seen {
            point: ctx.point(),
            session: ctx.session_id().to_owned(),
            tool: ctx.tool_name().map(str::to_owned),
            target: ctx.target().cloned(),
            context: ctx.to_json(),
        });
        self.inner.intercept(ctx).await
    }
}

/// The policy service on 127.0.0.1:0 and what it has seen.
pub(crate) struct Policy {
    server: RunningServer,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Policy {
    /// Serves tests/fixtures/mcp/policy.
    pub(crate) async fn serve() -> Self {
        let policies = Policies::load(fixtures().join("policy"), PolicyOptions::default())
            .expect("the MCP test policy loads");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let watched = Watched {
            inner: PolicyService::new(policies),
            seen: seen.clone(),
        };
        let server = spawn_local(watched).await.expect("serve on 127.0.0.1:0");
        Self { server, seen }
    }

    /// The service's `http://127.0.0.1:PORT`.
    pub(crate) fn endpoint(&self) -> String {
        self.server.endpoint()
    }

    /// Every emission so far, in arrival order.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

// ---------------------------------------------------------------------------
// The proxy's records.

/// The `record` members of a signed record log, in order (an absent file:
/// none yet), each with the line's host facts (`extensions`, travelling
/// beside the closed §10.3 record) copied in as `facts`.
pub(crate) fn read_records(path: &std::path::Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let line: Value = serde_json::from_str(l).expect("a record line is JSON");
            let mut record = line["record"].clone();
            record["facts"] = line.get("extensions").cloned().unwrap_or(Value::Null);
            record
        })
        .collect()
}

/// The records of a proxy's sessions once one has ended (`agent_shutdown`
/// recorded).
pub(crate) async fn records_after_shutdown(path: &std::path::Path) -> Vec<Value> {
    records_when(path, "agent_shutdown", |r| {
        r.iter().any(|r| point_of(r) == "agent_shutdown")
    })
    .await
}

/// Asserts that a failed call (of `what`) left a `host_error:*` in the
/// records (a record's reason, or a host fact naming one), as issue 27 asks
/// of every failure, so the audit trail does not read as an allowed call.
pub(crate) fn assert_failure_recorded(records: &[Value], what: &str) {
    assert!(
        records
            .iter()
            .any(|r| r.to_string().contains("host_error:")),
        "{what}: no record names a host_error: {records:#?}"
    );
}

/// Waits (bounded) until `done` holds for the records in `path`: the proxy
/// writes its last records as a session ends, which the client does not
/// wait for.
async fn records_when(
    path: &std::path::Path,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let until = Instant::now() + WAIT;
    loop {
        let records = read_records(path);
        if done(&records) {
            return records;
        }
        assert!(
            Instant::now() < until,
            "{what} not recorded within {WAIT:?}: {records:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A record's point name.
pub(crate) fn point_of(record: &Value) -> &str {
    record["interception_point"].as_str().unwrap_or_default()
}

/// A record's verdict reason, if any.
pub(crate) fn reason_of(record: &Value) -> Option<&str> {
    record["verdict"]["reason"].as_str()
}

/// Reasons of the records the proxy's host decides without asking the
/// policy service: a hidden tool's call (its binding comes first in the
/// chain) and the `post_tool_call` of a call whose result could not be had.
const HOST_DECIDED: [&str; 2] = ["mcp:tool_hidden", "host_error:context_invalid"];

/// Whether the host decided `record` without the policy service.
pub(crate) fn host_decided(record: &Value) -> bool {
    reason_of(record).is_some_and(|r| HOST_DECIDED.contains(&r))
}

/// Asserts that the records are exactly the emissions: those the policy
/// service received, one for one in order per session (the policy declares
/// every point the proxy emits at), plus the ones the host decided alone
/// ([`HOST_DECIDED`]); and that each session began with `agent_startup`
/// and ended with `agent_shutdown`.
pub(crate) fn assert_records_match(records: &[Value], seen: &[Seen]) {
    let mut sessions: Vec<&str> = records
        .iter()
        .map(|r| r["session_id"].as_str().unwrap_or_default())
        .collect();
    sessions.sort_unstable();
    sessions.dedup();
    for session in sessions {
        let all: Vec<&Value> = records
            .iter()
            .filter(|r| r["session_id"] == session)
            .collect();
        let asked: Vec<&str> = all
            .iter()
            .filter(|r| !host_decided(r))
            .map(|r| point_of(r))
            .collect();
        let emitted: Vec<&str> = seen
            .iter()
            .filter(|s| s.session == session)
            .map(|s| s.point.as_str())
            .collect();
        assert_eq!(asked, emitted, "session {session}: records vs emissions");
        assert_eq!(all.first().map(|r| point_of(r)), Some("agent_startup"));
        assert_eq!(all.last().map(|r| point_of(r)), Some("agent_shutdown"));
    }
    let alone = records.iter().filter(|r| host_decided(r)).count();
    assert_eq!(records.len(), seen.len() + alone, "one record per emission");
}

/// The calls an upstream received, as `(tool, arguments)`.
pub(crate) fn upstream_calls(path: &std::path::Path) -> Vec<(String, Value)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a call line is JSON");
            (
                v["tool"].as_str().unwrap().to_owned(),
                v["arguments"].clone(),
            )
        })
        .collect()
}

/// A `call` step of the client's scenario.
pub(crate) fn call(name: &str, arguments: Value) -> Value {
    json!({"op": "call", "name": name, "arguments": arguments})
}

/// Asserts that a step's tool result is a deny naming `reason` and not
/// carrying `never`.
pub(crate) fn assert_denied(step: &Value, reason: &str, never: &str) {
    assert_eq!(step["is_error"], true, "{step}");
    let text = step["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("hookwire: denied"), "{step}");
    assert!(text.contains(reason), "{step}");
    assert!(!text.contains(never), "the denied payload leaked: {step}");
}
