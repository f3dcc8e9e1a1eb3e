//! Shared support for hookwire's tests: scriptable interceptor services
//! served for real on 127.0.0.1:0, a host builder shortcut, and where the
//! workspace keeps what `scripts/setup.sh` installs.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire_client::{Host, HostBuilder, InterceptorBinding, RecordLog};
use hookwire_server::prelude::*;
use hookwire_server::{RunningServer, spawn_local};
use serde_json::{Value, json};

/// Decides with a closure, records every context it receives, and can be
/// slowed down.
#[derive(Clone)]
pub struct Scripted {
    name: String,
    respond: Arc<dyn Fn(&AgentContext) -> Verdict + Send + Sync>,
    /// Every context the service received, in arrival order.
    pub seen: Arc<Mutex<Vec<AgentContext>>>,
    delay: Option<Duration>,
}

impl Scripted {
    /// A service named `name` answering every point with `respond`.
    pub fn new(
        name: &str,
        respond: impl Fn(&AgentContext) -> Verdict + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            respond: Arc::new(respond),
            seen: Arc::default(),
            delay: None,
        }
    }

    /// Escalates every tool call (a liftable deny with `reason` and
    /// `message`) and allows everything else.
    pub fn escalating_tool_calls(name: &str, reason: &'static str, message: &'static str) -> Self {
        Self::new(name, move |ctx| match ctx.point() {
            hookwire::InterceptionPoint::PreToolCall => {
                Verdict::escalate(reason).with_message(message)
            }
            _ => Verdict::allow(),
        })
    }

    /// A service that allows everything.
    pub fn allow_all(name: &str) -> Self {
        Self::new(name, |_| Verdict::allow())
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
}

#[async_trait]
impl InterceptorService for Scripted {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest(self.name.clone(), "0.0.0")
    }

    async fn intercept(&self, ctx: &AgentContext) -> Verdict {
        self.seen.lock().unwrap().push(ctx.clone());
        if let Some(d) = self.delay {
            tokio::time::sleep(d).await;
        }
        (self.respond)(ctx)
    }
}

/// A host builder with a record log, for the agent `test-agent`.
pub fn host() -> (HostBuilder, RecordLog) {
    let records = RecordLog::new();
    (
        Host::builder("test-agent", "hookwire").record_sink(records.clone()),
        records,
    )
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

/// The workspace's root folder: where `scripts/setup.sh` leaves `.cache/`
/// and where the committed reports (`CONFORMANCE.md`) live.
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}
