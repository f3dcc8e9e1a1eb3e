//! The proxy under test and the processes around it: `hookwire mcp`'s
//! command line over a declaration binding the watched policy (and, when
//! asked, the approval service), signed records, the upstream choices, the
//! SDK client run as a child process over stdio or Streamable HTTP, and the
//! Python upstream served over HTTP.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use hookwire_approvals::{
    Access, AccessConfig, ApprovalServer, ApproverConfig, PrincipalConfig, RunningApprovalServer,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

use super::{HIDDEN, MCP_SDK, Policy, WAIT, fixtures, ts_upstream};
use hookwire_testkit::python_venv;

/// The HTTP clients of the proxy: their names and tokens (the clients
/// file holds only the hashes).
pub(crate) const CLIENTS: [(&str, &str); 2] = [
    ("alice", "hwm_test_alice_0123456789abcdef0123456789abcdef"),
    ("bob", "hwm_test_bob_0123456789abcdef0123456789abcdef01"),
];

/// The proxy's token at the test approval service, where it is the host
/// `test-host` (only the hash reaches the service).
const HOST_TOKEN: &str = "hwa_test_host_0123456789abcdef0123456789abcdef";

/// An approval service knowing the proxy (`test-host`) and one approver,
/// `ann`, who decides on its queue in process ([`super::approval`]).
fn approval_service() -> ApprovalServer {
    let access = AccessConfig::default()
        .host(PrincipalConfig::token("test-host", HOST_TOKEN))
        .approver(ApproverConfig::token(
            "ann",
            "hwa_test_ann_0123456789abcdef0123456789abcdef",
        ));
    ApprovalServer::new(Access::new(&access).expect("the test access list"))
}

/// The token of HTTP client `name`.
pub(crate) fn token(name: &str) -> &'static str {
    CLIENTS.iter().find(|(n, _)| *n == name).unwrap().1
}

/// Where the proxy's tools come from.
#[derive(Debug, Clone)]
pub(crate) enum Upstream {
    /// tests/fixtures/mcp/upstream.py over stdio, spawned by the proxy.
    Python,
    /// tests/fixtures/mcp/ts/upstream.mjs over stdio, spawned by the proxy.
    TypeScript,
    /// tests/fixtures/mcp/ts/tasks.mjs (a server offering tasks) over
    /// stdio, spawned by the proxy.
    TypeScriptTasks,
    /// A Streamable HTTP endpoint.
    Http(String),
}

/// One proxy configuration: its policy, declaration, signing key, records
/// and the upstream's call log, in a temporary folder.
pub(crate) struct Proxy {
    dir: tempfile::TempDir,
    pub(crate) policy: Policy,
    pub(crate) records: PathBuf,
    pub(crate) calls: PathBuf,
    declaration: PathBuf,
    key: PathBuf,
    extra: Vec<OsString>,
    approvals: Option<RunningApprovalServer>,
}

impl Proxy {
    /// A proxy governed by the test policy.
    pub(crate) async fn new() -> Self {
        Self::build(None).await
    }

    /// A proxy whose escalations go to a real approval service (the test
    /// approver of [`approval_service`]), decided within `deadline_ms`.
    pub(crate) async fn with_approvals(deadline_ms: u64) -> Self {
        let service = approval_service()
            .spawn_local()
            .await
            .expect("an approval service on 127.0.0.1:0");
        Self::build(Some((service, deadline_ms))).await
    }

    async fn build(approvals: Option<(RunningApprovalServer, u64)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy::serve().await;
        let mut configuration = json!({
            "mode": "enforce",
            "identity_provider": "jcs-sha256",
            "timeouts": {"interceptor_ms": 10000},
        });
        let mut extra: Vec<OsString> = vec!["--hide-tool".into(), HIDDEN.into()];
        let approvals = approvals.map(|(service, deadline_ms)| {
            configuration["approval"] = json!({"resolver": "approval-stream"});
            configuration["timeouts"]["approval_resolver_ms"] = json!(deadline_ms);
            let token = dir.path().join("approval-token");
            std::fs::write(&token, HOST_TOKEN).unwrap();
            extra.extend([
                "--approval-endpoint".into(),
                service.endpoint().into(),
                "--approval-token-file".into(),
                token.into_os_string(),
            ]);
            service
        });
        let declaration = dir.path().join("declaration.json");
        let doc = json!({
            "declaration": "agent-hooks-declaration/1.0",
            "spec": "agent-hooks/0.1",
            "id": "hookwire-mcp-e2e",
            "host": {"name": "hookwire", "version": "0.1.0"},
            "configuration": configuration,
            "bindings": [{
                "id": "policy",
                "kind": "hookwire.grpc",
                "config": {"endpoint": policy.endpoint()},
                "timeout_ms": 10000,
            }],
        });
        std::fs::write(&declaration, doc.to_string()).unwrap();
        let key = dir.path().join("audit.key");
        run_hookwire(&[
            "audit".as_ref(),
            "keygen".as_ref(),
            "--out".as_ref(),
            key.as_os_str(),
        ]);
        Self {
            records: dir.path().join("records.jsonl"),
            calls: dir.path().join("calls.jsonl"),
            dir,
            policy,
            declaration,
            key,
            extra,
            approvals,
        }
    }

    /// Adds `args` to the proxy's command line.
    pub(crate) fn arg<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.extra.extend(args.into_iter().map(Into::into));
        self
    }

    /// The approval service, when the proxy has one.
    pub(crate) fn approvals(&self) -> &RunningApprovalServer {
        self.approvals
            .as_ref()
            .expect("a proxy built with_approvals")
    }

    /// `hookwire mcp ...` for `upstream`, downstream options in `downstream`.
    pub(crate) fn command(&self, downstream: &[OsString], upstream: &Upstream) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            hookwire_testkit::hookwire_bin().into_os_string(),
            "mcp".into(),
            "--declaration".into(),
            self.declaration.clone().into_os_string(),
            "--records".into(),
            self.records.clone().into_os_string(),
            "--signing-key".into(),
            self.key.clone().into_os_string(),
        ];
        args.extend(self.extra.iter().cloned());
        args.extend(downstream.iter().cloned());
        match upstream {
            Upstream::Python => args.extend([
                "--".into(),
                python_venv(MCP_SDK).into_os_string(),
                fixtures().join("upstream.py").into_os_string(),
                "--calls".into(),
                self.calls.clone().into_os_string(),
            ]),
            Upstream::TypeScript => args.extend([
                "--".into(),
                "node".into(),
                ts_upstream().into_os_string(),
                "--calls".into(),
                self.calls.clone().into_os_string(),
            ]),
            Upstream::TypeScriptTasks => args.extend([
                "--".into(),
                "node".into(),
                ts_upstream().with_file_name("tasks.mjs").into_os_string(),
                "--calls".into(),
                self.calls.clone().into_os_string(),
            ]),
            Upstream::Http(url) => args.extend(["--upstream".into(), url.into()]),
        }
        args
    }

    /// Runs `scenario` with the SDK client launching the proxy over stdio,
    /// as an MCP client configured with `hookwire mcp` in place of the
    /// server does.
    pub(crate) async fn stdio_client(&self, upstream: &Upstream, scenario: Value) -> Value {
        let mut args: Vec<OsString> = vec!["--stdio".into(), "--".into()];
        args.extend(self.command(&[], upstream));
        sdk_client(&scenario, &args).await
    }

    /// Starts the proxy on Streamable HTTP (127.0.0.1:0, the test clients
    /// in its clients file) in front of `upstream`.
    pub(crate) async fn listen(&self, upstream: &Upstream) -> Listening {
        let clients = self.dir.path().join("clients");
        let lines: String = CLIENTS
            .iter()
            .map(|(name, token)| format!("{name} {}\n", hex::encode(Sha256::digest(token))))
            .collect();
        std::fs::write(&clients, format!("# test clients\n{lines}")).unwrap();
        let downstream: Vec<OsString> = vec![
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--clients-file".into(),
            clients.into_os_string(),
        ];
        let argv = self.command(&downstream, upstream);
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn hookwire mcp");
        let stderr = child.stderr.take().unwrap();
        let (log, url) = announced(stderr, "hookwire mcp: listening on ").await;
        Listening {
            _child: child,
            url,
            log,
        }
    }

    /// Checks the signed record log with `hookwire audit verify`.
    pub(crate) fn verify_records(&self) {
        let public = self.dir.path().join("audit.key.pub");
        run_hookwire(&[
            "audit".as_ref(),
            "verify".as_ref(),
            self.records.as_os_str(),
            "--public-key".as_ref(),
            public.as_os_str(),
        ]);
    }
}

/// A proxy serving Streamable HTTP.
pub(crate) struct Listening {
    _child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Listening {
    /// The proxy's `/mcp` URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// What the proxy has logged on stderr so far.
    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Runs `scenario` with the SDK client over Streamable HTTP, presenting
    /// `token` (none: no `Authorization`).
    pub(crate) async fn client(&self, token: Option<&str>, scenario: Value) -> Value {
        let mut args: Vec<OsString> = vec!["--url".into(), self.url.clone().into()];
        if let Some(t) = token {
            args.extend(["--token".into(), t.into()]);
        }
        sdk_client(&scenario, &args).await
    }
}

/// tests/fixtures/mcp/upstream.py serving Streamable HTTP on 127.0.0.1:0.
pub(crate) struct HttpUpstream {
    _child: Child,
    url: String,
}

impl HttpUpstream {
    /// Starts it, its calls logged to `calls`.
    pub(crate) async fn start(calls: &Path) -> Self {
        Self::spawn(calls, false).await
    }

    /// Starts it with an event store: every SSE answer opens with a
    /// priming event (an event id, empty data).
    pub(crate) async fn priming(calls: &Path) -> Self {
        Self::spawn(calls, true).await
    }

    async fn spawn(calls: &Path, prime: bool) -> Self {
        let mut child = Command::new(python_venv(MCP_SDK))
            .arg(fixtures().join("upstream.py"))
            .args(["--transport", "http", "--calls"])
            .arg(calls)
            .args(prime.then_some("--prime"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the HTTP upstream");
        let stderr = child.stderr.take().unwrap();
        let (_, url) = announced(stderr, "upstream: listening on ").await;
        Self { _child: child, url }
    }

    /// The upstream as the proxy's `--upstream`.
    pub(crate) fn upstream(&self) -> Upstream {
        Upstream::Http(self.url.clone())
    }
}

/// Reads `stderr` until a line starting with `prefix` gives the URL after
/// it; keeps collecting the rest into the returned log.
async fn announced(
    stderr: impl AsyncRead + Unpin + Send + 'static,
    prefix: &'static str,
) -> (Arc<Mutex<String>>, String) {
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let collected = log.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut tx = Some(tx);
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.strip_prefix(prefix)
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(rest.trim().to_owned());
            }
            let mut log = collected.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let url = tokio::time::timeout(WAIT, rx)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no `{prefix}` line within {WAIT:?}: {}",
                log.lock().unwrap()
            )
        })
        .unwrap_or_else(|_| panic!("exited before `{prefix}`: {}", log.lock().unwrap()));
    (log, url)
}

/// Runs tests/fixtures/mcp/client.py with `scenario` and `args` and returns
/// the JSON line it printed.
async fn sdk_client(scenario: &Value, args: &[OsString]) -> Value {
    let mut cmd = Command::new(python_venv(MCP_SDK));
    cmd.arg(fixtures().join("client.py"))
        .arg("--scenario")
        .arg(scenario.to_string())
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(WAIT * 2, cmd.output())
        .await
        .expect("the SDK client finishes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client.py failed: {}\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout.lines().last().unwrap_or_default();
    let v: Value = serde_json::from_str(line)
        .unwrap_or_else(|_| panic!("client.py printed no JSON: {stdout}\n{stderr}"));
    assert_eq!(v["sdk_version"], "2.3.0", "the pinned SDK");
    if v.get("fatal").is_some() {
        eprintln!("client.py stderr:\n{stderr}");
    }
    v
}

/// Runs the `hookwire` binary with `args` to success.
fn run_hookwire(args: &[&std::ffi::OsStr]) {
    let out = std::process::Command::new(hookwire_testkit::hookwire_bin())
        .args(args)
        .output()
        .expect("run hookwire");
    assert!(
        out.status.success(),
        "hookwire {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
