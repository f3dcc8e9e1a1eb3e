//! Interceptor services written in other languages from `proto/` alone —
//! `examples/python` (grpcio) and `examples/node` (@grpc/grpc-js) — each
//! spawned as a child process and driven over loopback by the Rust host and
//! the reference agent loop: every point, every verdict kind, the approval
//! seam, exact JSON round trips, `Describe`-driven binding, fail-closed
//! failures and a graceful stop.
//!
//! Needs what `scripts/setup.sh` installs (the venv with grpcio, the Python
//! stubs, `examples/node/node_modules`); `scripts/test.sh` runs it first.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hookwire::approval::{ApprovalRequest, ApprovalResolution};
use hookwire::json;
use hookwire::{AgentContext, Decision, InterceptionPoint, ResolvedBy, Verdict};
use hookwire_client::{
    Agent, ApprovalAnswer, ApprovalResolver, BoxError, BoxFuture, Host, HostBuilder,
    IdentityProvider, InputRole, InterceptorBinding, Model, ModelResponse, RecordLog, Session,
    ShutdownReason, ToolCall, ToolCallOutcome, ToolError, ToolResult, Tools, interceptor_fn,
    model_fn, tool_fn,
};
use hookwire_testkit as testkit;
use serde_json::{Map, Value, json};

use InterceptionPoint::*;

// ---------------------------------------------------------------------------
// The services as child processes
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Node,
}

impl Lang {
    fn label(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Node => "node",
        }
    }

    /// The name the service gives itself in `Describe`.
    fn service_name(self) -> &'static str {
        match self {
            Self::Python => "python-policy",
            Self::Node => "node-policy",
        }
    }

    fn command(self) -> Command {
        let root = testkit::workspace_root();
        let (program, script, needs) = match self {
            Self::Python => (
                root.join(".cache/venv/bin/python"),
                root.join("examples/python/policy.py"),
                root.join(".cache/venv/.hookwire-sdk-python-sha256"),
            ),
            Self::Node => (
                PathBuf::from("node"),
                root.join("examples/node/policy.js"),
                root.join("examples/node/node_modules/@grpc/grpc-js/package.json"),
            ),
        };
        assert!(
            needs.exists(),
            "{} is missing: run scripts/setup.sh (scripts/test.sh does) before cargo test",
            needs.display()
        );
        let mut cmd = Command::new(program);
        cmd.arg(script);
        cmd
    }
}

/// A running interceptor service: killed on drop, its stderr kept for the
/// failure message, its call log (one JSON line per call) readable.
struct Service {
    lang: Lang,
    child: Child,
    port: u16,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
    call_log: PathBuf,
}

const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

impl Service {
    /// Starts the example policy with `args` on 127.0.0.1:0 and waits for
    /// its `PORT <n>` line.
    fn spawn(lang: Lang, args: &[&str]) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let call_log = std::env::temp_dir().join(format!(
            "hookwire-polyglot-{}-{}-{}.jsonl",
            std::process::id(),
            lang.label(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_file(&call_log);
        let mut child = lang
            .command()
            .args(["--host", "127.0.0.1", "--port", "0", "--call-log"])
            .arg(&call_log)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start the {} service: {e}", lang.label()));

        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        // Keeps draining stdout after the PORT line so the child never
        // blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = line.strip_prefix("PORT ") {
                    let _ = tx.send(port.trim().parse::<u16>());
                }
            }
        });

        let mut service = Self {
            lang,
            child,
            port: 0,
            stderr,
            stderr_reader: Some(stderr_reader),
            call_log,
        };
        match rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(Ok(port)) if port != 0 => service.port = port,
            Ok(_) => service.fail("printed an unusable PORT line"),
            Err(RecvTimeoutError::Timeout) => service.fail("printed no PORT line within 30 s"),
            Err(RecvTimeoutError::Disconnected) => {
                service.fail("exited before printing its PORT line")
            }
        }
        service
    }

    fn fail(&mut self, what: &str) -> ! {
        let _ = self.child.kill();
        let status = self.child.wait();
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
        panic!(
            "the {} service {what} (exit: {status:?}); its stderr:\n{}",
            self.lang.label(),
            self.stderr.lock().unwrap()
        );
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every call the service received so far: the point and the context as
    /// the service's helper rebuilt it (spec JSON, `target` included).
    fn calls(&self) -> Vec<(String, Value)> {
        let text = std::fs::read_to_string(&self.call_log).unwrap_or_default();
        text.lines()
            .map(|line| {
                let v = json::decode(line).expect("a call log line is exact JSON");
                (
                    v["point"].as_str().unwrap_or_default().to_owned(),
                    v["context"].clone(),
                )
            })
            .collect()
    }

    /// How many calls the service received, by point.
    fn calls_by_point(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for (point, _) in self.calls() {
            *counts.entry(point).or_default() += 1;
        }
        counts
    }

    /// How many calls came over each transport (`unary`, `multiplex`), as
    /// the service logged them (the Python package logs it; the Node
    /// helper does not, its calls count under `""`).
    fn calls_by_transport(&self) -> BTreeMap<String, usize> {
        let text = std::fs::read_to_string(&self.call_log).unwrap_or_default();
        let mut counts = BTreeMap::new();
        for line in text.lines() {
            let v = json::decode(line).expect("a call log line is exact JSON");
            let transport = v["transport"].as_str().unwrap_or_default().to_owned();
            *counts.entry(transport).or_default() += 1;
        }
        counts
    }

    /// Sends SIGTERM and waits for the process to exit.
    fn terminate(mut self, within: Duration) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid} failed");
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the service") {
                return status;
            }
            if Instant::now() > deadline {
                self.fail("did not exit after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.call_log);
    }
}

// ---------------------------------------------------------------------------
// Host fixtures
// ---------------------------------------------------------------------------

const REMOTE: &str = "svc";
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Every context an in-process interceptor saw, in emission order.
type Seen = Arc<Mutex<Vec<AgentContext>>>;

/// An explicit allow-all (§7: a deliberate passthrough is a registered
/// interceptor) that also records what it was handed: registered first, it
/// sees exactly the context the remote service is sent next.
fn passthrough() -> (InterceptorBinding, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let binding = InterceptorBinding::local(
        "passthrough",
        interceptor_fn(move |ctx: AgentContext| {
            log.lock().unwrap().push(ctx);
            async { Ok::<_, BoxError>(Verdict::allow()) }
        }),
    );
    (binding, seen)
}

/// The passthrough at every point, then the service at the points its
/// manifest declares.
async fn host_with_passthrough(service: &Service) -> (Host, RecordLog, Seen) {
    let (b, records) = testkit::host();
    connect_with_passthrough(b, service, records).await
}

/// The same under the `null` identity provider: the default `jcs-sha256`
/// provider refuses integers beyond ±(2^53 − 1) (§4.4, §10.2) before any
/// interceptor sees them, and these tests send the whole 64-bit range.
async fn exact_host_with_passthrough(service: &Service) -> (Host, RecordLog, Seen) {
    let (b, records) = testkit::host();
    let b = b.identity_provider(IdentityProvider::Null);
    connect_with_passthrough(b, service, records).await
}

async fn connect_with_passthrough(
    b: HostBuilder,
    service: &Service,
    records: RecordLog,
) -> (Host, RecordLog, Seen) {
    let (pass, seen) = passthrough();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .expect("Describe answered");
    (host, records, seen)
}

fn reason(e: &hookwire_client::Emission) -> &str {
    e.reason().unwrap_or_default()
}

/// JSON text equality on top of value equality: tells `1` from `1.0` and
/// `0.0` from `-0.0`.
fn assert_exact(actual: &Value, expected: &Value, what: &str) {
    assert_eq!(actual, expected, "{what}");
    assert_eq!(
        json::encode(actual),
        json::encode(expected),
        "{what} (as text)"
    );
}

/// Approves every liftable deny with `allow`, remembering the requests.
#[derive(Clone, Default)]
struct Approver {
    requests: Arc<Mutex<Vec<ApprovalRequest>>>,
}

impl ApprovalResolver for Approver {
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalAnswer, BoxError>> {
        self.requests.lock().unwrap().push(request.clone());
        Box::pin(async move { Ok(ApprovalResolution::approve(request, Verdict::allow()).into()) })
    }
}

// ---------------------------------------------------------------------------
// The policy through the reference agent loop
// ---------------------------------------------------------------------------

fn calls(list: &[(&str, &str, Value)]) -> ModelResponse {
    ModelResponse {
        content: Value::Null,
        tool_calls: list
            .iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, args.clone()))
            .collect(),
        finish_reason: "tool_calls".into(),
    }
}

fn answer(text: &str) -> ModelResponse {
    ModelResponse {
        content: json!(text),
        tool_calls: Vec::new(),
        finish_reason: "stop".into(),
    }
}

type Invocations = Arc<Mutex<Vec<(String, Value)>>>;

/// A scripted model (and what it was shown) plus tools that log their
/// invocations: `bash`, `wire_transfer`, `read_file` (which returns an AWS
/// key) and `echo`.
fn scripted(
    responses: Vec<ModelResponse>,
) -> (impl Model, Arc<Mutex<Vec<Vec<Value>>>>, Tools, Invocations) {
    let script = Arc::new(Mutex::new(VecDeque::from(responses)));
    let shown: Arc<Mutex<Vec<Vec<Value>>>> = Arc::default();
    let shown_log = shown.clone();
    let model = model_fn("mock-model", move |messages: Vec<Value>| {
        shown_log.lock().unwrap().push(messages);
        let next = script.lock().unwrap().pop_front();
        futures::future::ready(next.ok_or_else(|| BoxError::from("script exhausted")))
    });
    let invoked: Invocations = Arc::default();
    let tool = |name: &'static str, result: fn(&Value) -> Value| {
        let log = invoked.clone();
        tool_fn(name, move |args: Value| {
            log.lock().unwrap().push((name.to_owned(), args.clone()));
            futures::future::ready(Ok::<_, ToolError>(result(&args)))
        })
    };
    let tools = Tools::new()
        .with(tool("bash", |_| json!({"stdout": "total 0\n", "code": 0})))
        .with(tool(
            "wire_transfer",
            |a| json!({"status": "sent", "amount": a["amount"]}),
        ))
        .with(tool(
            "read_file",
            |_| json!({"content": "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"}),
        ))
        .with(tool("echo", |a| a.clone()));
    (model, shown, tools, invoked)
}

/// One turn through the agent loop against the policy, bound at the points
/// it declares: allow, deny (`rm -rf`), transform (PII in the input),
/// escalate without a resolver (a large wire transfer), the AKIA block after
/// a tool, and a warning at `output`.
async fn policy_governs_a_full_turn(lang: Lang) {
    let service = Service::spawn(lang, &[]);
    let (host, records, _) = host_with_passthrough(&service).await;
    for point in InterceptionPoint::ALL {
        let expected: &[&str] = match point {
            Input | PreToolCall | PostToolCall | Output => &["passthrough", REMOTE],
            _ => &["passthrough"],
        };
        assert_eq!(host.chain(point), expected, "{point:?}");
    }
    let (model, shown, tools, invoked) = scripted(vec![
        calls(&[
            ("c1", "bash", json!({"cmd": "ls -la"})),
            (
                "c2",
                "bash",
                json!({"cmd": "cd /srv && rm -rf --no-preserve-root /"}),
            ),
            (
                "c3",
                "wire_transfer",
                json!({"amount": 50000, "currency": "EUR", "to": "ACME"}),
            ),
            (
                "c4",
                "wire_transfer",
                json!({"amount": 500, "currency": "EUR", "to": "ACME"}),
            ),
            ("c5", "read_file", json!({"path": "~/.aws/credentials"})),
        ]),
        answer("Paid 500 EUR; the large transfer awaits approval. Questions: billing@example.com"),
    ]);
    let session = host.session("turn-1").unwrap();
    let mut agent = Agent::new(session, model, tools);
    let (turn, shutdown) = agent
        .run_once(
            json!("Pay invoice 42 for jane.doe@example.com, call me at +1 (555) 123-4567"),
            InputRole::User,
        )
        .await
        .unwrap();
    assert!(shutdown.proceeds());

    // transform: the model only ever saw the redacted input.
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 2);
    assert_eq!(
        shown[0][0],
        json!({"role": "user", "content": "Pay invoice 42 for [redacted:email], call me at [redacted:phone]"})
    );

    // allow / deny / escalate / post-action block, per tool call.
    let outcome = |i: usize| &turn.tool_calls[i];
    assert!(matches!(outcome(0), ToolCallOutcome::Completed { .. }));
    let ToolCallOutcome::Blocked { record, .. } = outcome(1) else {
        panic!("rm -rf ran: {:?}", outcome(1));
    };
    assert_eq!(
        record.verdict.reason.as_deref(),
        Some("policy:destructive_command")
    );
    assert_eq!(record.decided_by, Some(1), "the remote service decided");
    let ToolCallOutcome::Blocked { record, .. } = outcome(2) else {
        panic!("the large transfer ran: {:?}", outcome(2));
    };
    assert_eq!(
        record.verdict.reason.as_deref(),
        Some("policy:approval_required")
    );
    assert!(
        record.verdict.approval.is_some(),
        "an escalation is a liftable deny"
    );
    assert_eq!(record.resolved_by, None, "no resolver registered");
    assert!(matches!(outcome(3), ToolCallOutcome::Completed { .. }));
    let ToolCallOutcome::Discarded { record, .. } = outcome(4) else {
        panic!("the AWS key reached the model: {:?}", outcome(4));
    };
    assert_eq!(
        record.verdict.reason.as_deref(),
        Some("policy:secret_in_tool_output")
    );
    let ran: Vec<_> = invoked
        .lock()
        .unwrap()
        .iter()
        .map(|(n, a)| (n.clone(), a.clone()))
        .collect();
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(
        ran.iter()
            .all(|(n, a)| n != "bash" || a["cmd"] == json!("ls -la"))
    );
    assert!(
        ran.iter()
            .all(|(n, a)| n != "wire_transfer" || a["amount"] == json!(500))
    );
    let tool_message = shown[1]
        .iter()
        .find(|m| m["tool_call_id"] == json!("c5"))
        .unwrap();
    assert!(!tool_message.to_string().contains("AKIA"), "{tool_message}");

    // warn: the answer is released, with the warning on the record.
    assert_eq!(
        turn.output(),
        Some(&json!(
            "Paid 500 EUR; the large transfer awaits approval. Questions: billing@example.com"
        ))
    );
    let recs = records.session("turn-1");
    let at = |p: InterceptionPoint| recs.iter().filter(move |r| r.interception_point == p);
    let input = at(Input).next().unwrap();
    assert_eq!(input.verdict.decision, Decision::Transform);
    assert_eq!(input.verdict.reason.as_deref(), Some("policy:pii_redacted"));
    let output = at(Output).next().unwrap();
    assert_eq!(output.verdict.decision, Decision::Allow);
    assert_eq!(output.verdict.warnings.len(), 1);
    assert_eq!(
        output.verdict.warnings[0].reason.as_deref(),
        Some("policy:pii_in_output")
    );
    assert_eq!(recs.len(), 2 + 1 + 2 * 2 + 5 + 3 + 1);

    // The service was called at the points it declared, and only there.
    let expected: BTreeMap<String, usize> = [
        ("input", 1),
        ("pre_tool_call", 5),
        ("post_tool_call", 3),
        ("output", 1),
    ]
    .into_iter()
    .map(|(p, n)| (p.to_owned(), n))
    .collect();
    assert_eq!(service.calls_by_point(), expected);
    // The Python package declares the Multiplex stream: the host takes it
    // once its `Describe` probe has answered (the first emission may still
    // go unary while the probe is under way).
    if lang == Lang::Python {
        let transports = service.calls_by_transport();
        assert!(
            transports.get("multiplex").copied().unwrap_or(0) >= 9,
            "{transports:?}"
        );
    }
}

/// The escalation is lifted by an in-process approval resolver, which is
/// shown the service's `approval` object exactly; the limit is the
/// service's `--wire-limit`.
async fn escalation_is_lifted_by_the_resolver(lang: Lang) {
    let service = Service::spawn(lang, &["--wire-limit", "1000"]);
    let approver = Approver::default();
    let (pass, _) = passthrough();
    let (b, records) = testkit::host();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .approval_resolver(approver.clone())
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("approve").unwrap();
    session.start(["wire_transfer"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();

    let small = ToolCall::new(
        "t1",
        "wire_transfer",
        json!({"amount": 999.5, "to": "ACME"}),
    );
    let e = session.pre_tool_call(&small).await.unwrap();
    assert!(e.proceeds());
    assert_eq!(e.verdict().decision, Decision::Allow);

    let large = ToolCall::new(
        "t2",
        "wire_transfer",
        json!({"amount": "1000.01", "to": "ACME"}),
    );
    let e = session.pre_tool_call(&large).await.unwrap();
    assert!(e.proceeds(), "approved: {:?}", e.verdict());
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(
        e.target(),
        Some(&large.args),
        "an approved allow keeps the arguments"
    );

    let bad = ToolCall::new("t3", "wire_transfer", json!({"amount": "lots"}));
    let e = session.pre_tool_call(&bad).await.unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "policy:invalid_amount");
    assert_eq!(
        e.record().resolved_by,
        None,
        "a plain deny is not offered to the resolver"
    );
    session.shutdown(ShutdownReason::Completed).await.unwrap();

    let requests = approver.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.interception_point, PreToolCall);
    assert_eq!(
        request.verdict.reason.as_deref(),
        Some("policy:approval_required")
    );
    let approval = Value::Object(request.verdict.approval.clone().unwrap());
    assert_exact(
        &approval,
        &json!({"approver_role": "finance", "limit": 1000}),
        "approval",
    );
    assert_eq!(request.context.target(), Some(&large.args));
    assert_eq!(records.session("approve").len(), 6);

    // Without a resolver the same escalation is enforced as a deny (§9).
    let (pass, _) = passthrough();
    let (b, _) = testkit::host();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("no-resolver").unwrap();
    session.start(["wire_transfer"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let e = session.pre_tool_call(&large).await.unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "policy:approval_required");
    assert!(
        e.verdict()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("1000"))
    );
    assert_eq!(
        e.verdict().approval.clone().map(Value::Object),
        Some(json!({"approver_role": "finance", "limit": 1000}))
    );
}

// ---------------------------------------------------------------------------
// The wire, exactly
// ---------------------------------------------------------------------------

/// Values no JSON round trip may change: the 64-bit extremes, the limits of
/// a double's exact integers, floats that must stay floats, nesting, unicode
/// (controls, surrogate pairs, U+2028), null, and a `__proto__` member.
fn fidelity_values() -> Value {
    json!({
        "ints": [0, -1, 9_007_199_254_740_991_i64, -9_007_199_254_740_991_i64,
                 9_007_199_254_740_993_u64, i64::MAX, i64::MIN, u64::MAX],
        "floats": [1.0, -0.0, -2.5, 0.1, 1e300, 5e-324, 1.7976931348623157e308],
        "nested": {"a": {"b": [[], {}, [null, true, false, [[[{"deep": 1}]]]]]}, "empty": ""},
        "unicode": "é ü 中文 😀 \u{0} \u{1f} \" \\ / \u{2028} \u{feff}",
        "null": null,
        "__proto__": {"polluted": true},
        "counter": 41,
    })
}

/// The service bound at every point (`--points all`): each context it
/// rebuilt is, member for member, the one the host sent (`target`
/// included); a transform echoing the arguments returns them bit for bit;
/// a transform computed from the context carries them inside a new value.
async fn contexts_and_values_round_trip_exactly(lang: Lang) {
    let service = Service::spawn(lang, &["--probes", "--points", "all"]);
    let (b, records) = testkit::host();
    let b = b
        .agent_name("Polyglot Agent ✓", "1.2.3")
        .identity_provider(IdentityProvider::Null);
    let (host, records, seen) = connect_with_passthrough(b, &service, records).await;
    for point in InterceptionPoint::ALL {
        assert_eq!(host.chain(point), ["passthrough", REMOTE]);
    }
    let v = fidelity_values();
    let mut members = Map::new();
    members.insert(
        "session".into(),
        json!({"started_at": "2026-06-19T14:03:11Z", "turn": 3, "x-note": v["floats"]}),
    );
    members.insert("trace".into(), json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7", "flags": 1}));
    members.insert("tenant".into(), json!({"id": "t-1", "name": "Zürich AG"}));
    members.insert(
        "actor".into(),
        json!({"id": "u-7", "kind": "human", "groups": ["ops"]}),
    );
    members.insert(
        "budgets".into(),
        json!({"tool_call_count": 3, "cost_usd": 3.0, "elapsed_seconds": 0.25}),
    );
    members.insert(
        "extensions".into(),
        json!({"acme": v.clone(), "zeta": null}),
    );
    let session = host.session_with("fidelity", members).unwrap();

    assert!(session.start(["echo"]).await.unwrap().proceeds());
    let e = session
        .input(
            json!({"text": "plain words", "values": v}),
            InputRole::External,
        )
        .await
        .unwrap();
    assert_eq!(e.verdict().decision, Decision::Allow);
    let mut model_members = Map::new();
    model_members.insert("model".into(), json!({"id": "m", "vendor": "acme", "params": {"temperature": 0.0, "top_k": 40}, "revision": 7}));
    model_members.insert("messages".into(), json!([{"role": "user", "content": v}]));
    model_members.insert("request_id".into(), json!("r-1"));
    model_members.insert(
        "tools".into(),
        json!([{"name": "echo", "schema": {"type": "object"}}]),
    );
    assert!(
        session
            .emit(PreModelCall, model_members)
            .await
            .unwrap()
            .proceeds()
    );
    let call = ToolCall::new("call-ü", "echo", v.clone());
    let response = ModelResponse {
        content: v["unicode"].clone(),
        tool_calls: vec![call.clone()],
        finish_reason: "tool_calls".into(),
    };
    assert!(
        session
            .post_model_call("m", &response)
            .await
            .unwrap()
            .proceeds()
    );

    // transform: the arguments echoed back unchanged are exactly the arguments.
    let pre = session.pre_tool_call(&call).await.unwrap();
    assert_eq!(pre.verdict().decision, Decision::Transform);
    assert_exact(pre.target().unwrap(), &v, "echoed arguments");

    // transform: a value computed from the context carries its parts exactly.
    let result = ToolResult {
        value: json!({"rows": v["ints"], "ratio": 0.5, "note": null}),
        is_error: false,
    };
    let post = session.post_tool_call(&call, &result).await.unwrap();
    assert_eq!(
        post.verdict().decision,
        Decision::Transform,
        "{:?}",
        post.verdict()
    );
    assert_exact(
        post.target().unwrap(),
        &json!({"args": v, "result": result.value, "next": 42}),
        "computed post_tool_call target",
    );
    assert!(
        session
            .output(json!({"text": v["unicode"], "n": u64::MAX}))
            .await
            .unwrap()
            .proceeds()
    );
    assert!(
        session
            .shutdown(ShutdownReason::Completed)
            .await
            .unwrap()
            .proceeds()
    );

    // Each context the service rebuilt is the one the host sent.
    let sent = seen.lock().unwrap().clone();
    let got = service.calls();
    assert_eq!(got.len(), 8);
    assert_eq!(sent.len(), 8);
    for (i, ((point, ctx), sent)) in got.iter().zip(&sent).enumerate() {
        assert_eq!(point, sent.point().as_str());
        assert_eq!(ctx["sequence"], json!(i));
        let rebuilt = AgentContext::from_json(ctx.clone())
            .unwrap_or_else(|e| panic!("{point}: the rebuilt context is not a valid context: {e}"));
        assert_exact(&rebuilt.to_json(), &sent.to_json(), point);
        assert_exact(
            &ctx["target"],
            sent.target().unwrap(),
            &format!("{point} target"),
        );
    }
    assert!(records.session("fidelity").iter().all(|r| r.proceeds()));
}

/// Integers a service computes itself: Python's are exact at any size;
/// Node writes them only up to 2^53 − 1 and fails the call closed beyond
/// (`host_error:interceptor_failed`), never sending a rounded integer.
async fn computed_integers(lang: Lang) {
    let service = Service::spawn(lang, &["--probes"]);
    let (host, _, _) = exact_host_with_passthrough(&service).await;
    let session = host.session("computed").unwrap();
    session.start(["echo"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let cases: [(Value, Value); 4] = [
        (
            json!(9_007_199_254_740_990_u64),
            json!(9_007_199_254_740_991_u64),
        ),
        (
            json!(9_007_199_254_740_991_u64),
            json!(9_007_199_254_740_992_u64),
        ),
        (json!(i64::MAX - 1), json!(i64::MAX)),
        (json!(u64::MAX - 1), json!(u64::MAX)),
    ];
    for (i, (counter, next)) in cases.into_iter().enumerate() {
        let call = ToolCall::new(format!("n{i}"), "echo", json!({"counter": counter}));
        let pre = session.pre_tool_call(&call).await.unwrap();
        assert_exact(pre.target().unwrap(), &call.args, "echoed counter");
        let result = ToolResult {
            value: json!("ok"),
            is_error: false,
        };
        let post = session.post_tool_call(&call, &result).await.unwrap();
        let exact_in_node = i == 0;
        if lang == Lang::Python || exact_in_node {
            assert!(post.proceeds(), "{counter}: {:?}", post.verdict());
            assert_exact(
                &post.target().unwrap()["next"],
                &next,
                "computed counter + 1",
            );
        } else {
            assert!(!post.proceeds(), "{counter}: node must refuse, not round");
            assert_eq!(reason(&post), "host_error:interceptor_failed");
        }
    }
}

// ---------------------------------------------------------------------------
// Describe, binding, failure handling, lifecycle
// ---------------------------------------------------------------------------

/// A service that declares `pre_tool_call` alone is bound there alone: it
/// receives nothing else, and a point left with no binding denies with
/// `host_error:no_interceptor` in enforce mode.
async fn describe_binds_the_declared_points_only(lang: Lang) {
    let service = Service::spawn(lang, &["--points", "pre_tool_call"]);

    let (host, records, _) = host_with_passthrough(&service).await;
    let manifests = host.describe_remotes(DESCRIBE_TIMEOUT).await;
    let manifest = manifests[0].1.as_ref().unwrap();
    assert_eq!(manifest.name, lang.service_name());
    assert_eq!(manifest.spec, "agent-hooks/0.1");
    assert_eq!(manifest.points, [PreToolCall]);
    for point in InterceptionPoint::ALL {
        let expected: &[&str] = if point == PreToolCall {
            &["passthrough", REMOTE]
        } else {
            &["passthrough"]
        };
        assert_eq!(host.chain(point), expected, "{point:?}");
    }
    let (model, _, tools, invoked) = scripted(vec![
        calls(&[
            ("c1", "bash", json!({"cmd": "ls"})),
            ("c2", "bash", json!({"cmd": "rm -rf /"})),
        ]),
        answer("done"),
    ]);
    let mut agent = Agent::new(host.session("subscribed").unwrap(), model, tools);
    let (turn, _) = agent
        .run_once(json!("hello"), InputRole::User)
        .await
        .unwrap();
    assert!(turn.is_completed());
    assert_eq!(
        invoked.lock().unwrap().len(),
        1,
        "rm -rf was denied by the service"
    );
    assert_eq!(
        records.session("subscribed").len(),
        2 + 1 + 2 * 2 + 2 + 1 + 1
    );
    let counts = service.calls_by_point();
    assert_eq!(counts, BTreeMap::from([("pre_tool_call".to_owned(), 2)]));

    // Only the service, bound by its manifest, plus a control at the session
    // boundaries: every other point has no interceptor and denies.
    let (b, _) = testkit::host();
    let boundaries = InterceptorBinding::local(
        "boundaries",
        interceptor_fn(|_ctx: AgentContext| async { Ok::<_, BoxError>(Verdict::allow()) }),
    )
    .at([AgentStartup, AgentShutdown]);
    let host = b
        .bind(boundaries)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("unbound").unwrap();
    assert!(session.start(["bash"]).await.unwrap().proceeds());
    let e = session
        .input(json!("hello"), InputRole::User)
        .await
        .unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "host_error:no_interceptor");
    // The denied input began no turn: the typed methods refuse what would
    // result from it (§3.1 rule 3); the raw path still reaches each point.
    let call = ToolCall::new("c3", "bash", json!({"cmd": "ls"}));
    let refused = session.pre_tool_call(&call).await.unwrap_err();
    assert!(
        matches!(refused, hookwire_client::Error::OutOfOrder { .. }),
        "{refused:?}"
    );
    let mut members = Map::new();
    members.insert("tool_call".into(), json!(call));
    let e = session
        .emit(InterceptionPoint::PreToolCall, members.clone())
        .await
        .unwrap();
    assert!(e.proceeds(), "pre_tool_call is bound: {:?}", e.verdict());
    members.insert(
        "tool_result".into(),
        json!({"value": "", "is_error": false}),
    );
    let e = session
        .emit(InterceptionPoint::PostToolCall, members)
        .await
        .unwrap();
    assert_eq!(reason(&e), "host_error:no_interceptor");
    let mut output = Map::new();
    output.insert("output".into(), json!({"content": "bye"}));
    let e = session
        .emit(InterceptionPoint::Output, output)
        .await
        .unwrap();
    assert_eq!(e.reason(), Some("host_error:no_interceptor"));
    assert!(
        session
            .shutdown(ShutdownReason::Completed)
            .await
            .unwrap()
            .proceeds()
    );
    assert_eq!(
        service.calls_by_point(),
        BTreeMap::from([("pre_tool_call".to_owned(), 3)])
    );

    // Without any binding at agent_startup the session never starts.
    let (b, _) = testkit::host();
    let host = b
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("no-start").unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(reason(&e), "host_error:no_interceptor");
}

/// What a service author's failures become: a raising handler is
/// `host_error:interceptor_failed`, a slow one `host_error:interceptor_timeout`
/// (the host's deadline, also sent as `grpc-timeout`), and the service keeps
/// serving afterwards.
async fn failures_fail_closed(lang: Lang) {
    let service = Service::spawn(lang, &["--probes"]);
    let (pass, _) = passthrough();
    let (b, _) = testkit::host();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()).timeout(Duration::from_millis(400)))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("failures").unwrap();
    session.start(["fail", "sleep"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();

    let e = session
        .pre_tool_call(&ToolCall::new("f", "fail", json!({})))
        .await
        .unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "host_error:interceptor_failed");
    assert!(
        !e.verdict()
            .message
            .clone()
            .unwrap_or_default()
            .contains("probe failure"),
        "no handler text leaks"
    );

    let started = Instant::now();
    let e = session
        .pre_tool_call(&ToolCall::new("s", "sleep", json!({"ms": 3000})))
        .await
        .unwrap();
    assert_eq!(
        reason(&e),
        "host_error:interceptor_timeout",
        "{:?}",
        e.verdict()
    );
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );

    let e = session
        .pre_tool_call(&ToolCall::new("s2", "sleep", json!({"ms": 0})))
        .await
        .unwrap();
    assert!(e.proceeds(), "still serving: {:?}", e.verdict());
}

/// SIGTERM stops the service gracefully: it exits 0, promptly.
async fn sigterm_stops_gracefully(lang: Lang) {
    let service = Service::spawn(lang, &[]);
    let (host, _, _) = host_with_passthrough(&service).await;
    let session = host.session("stop").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let e = session
        .pre_tool_call(&ToolCall::new("c", "bash", json!({"cmd": "ls"})))
        .await
        .unwrap();
    assert!(e.proceeds());
    let status = service.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
}

/// Per-call latency of each service seen from the host (sequential
/// `pre_tool_call` emissions over one channel). Informational:
/// `cargo test --release -p hookwire-tests --test integration -- --ignored --nocapture polyglot::latency`.
async fn latency(lang: Lang) {
    let service = Service::spawn(lang, &["--points", "pre_tool_call"]);
    let (b, _) = testkit::host();
    let host = b
        .bind(InterceptorBinding::remote(REMOTE, service.url()).at([
            AgentStartup,
            Input,
            PreToolCall,
        ]))
        .build()
        .unwrap();
    let session: Session = host.session("latency").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    // Each call its own id: a call's pre_tool_call comes once (§3.1 rule 5).
    let call = |i: usize| {
        ToolCall::new(
            format!("c{i}"),
            "bash",
            json!({"cmd": "ls -la /tmp", "timeout_s": 30}),
        )
    };
    for i in 0..50 {
        session.pre_tool_call(&call(i)).await.unwrap();
    }
    let mut samples: Vec<Duration> = Vec::new();
    for i in 50..550 {
        let call = call(i);
        let t = Instant::now();
        assert!(session.pre_tool_call(&call).await.unwrap().proceeds());
        samples.push(t.elapsed());
    }
    samples.sort();
    let pct = |p: usize| samples[samples.len() * p / 100];
    eprintln!(
        "{}: pre_tool_call round trip p50 {:?}, p90 {:?}, p99 {:?}",
        lang.label(),
        pct(50),
        pct(90),
        pct(99)
    );
}

macro_rules! per_language {
    ($($test:ident),* $(,)?) => {
        mod python {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(super::Lang::Python).await
                }
            )*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "informational; run with --ignored --nocapture"]
            async fn latency() {
                super::latency(super::Lang::Python).await
            }
        }
        mod node {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(super::Lang::Node).await
                }
            )*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "informational; run with --ignored --nocapture"]
            async fn latency() {
                super::latency(super::Lang::Node).await
            }
        }
    };
}

per_language!(
    policy_governs_a_full_turn,
    escalation_is_lifted_by_the_resolver,
    contexts_and_values_round_trip_exactly,
    computed_integers,
    describe_binds_the_declared_points_only,
    failures_fail_closed,
    sigterm_stops_gracefully,
);
