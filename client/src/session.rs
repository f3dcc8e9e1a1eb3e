//! Sessions: one run or conversation of the agent (§4.1 `session.id`).
//!
//! A session assigns each emission a `sequence` that starts at 0 on
//! `agent_startup` and strictly increases, atomically, however many
//! emissions run at once (§12.2). Emission takes `&self`, so parallel tool
//! calls and concurrent turns share one session. The lifecycle of §3.1 and
//! §6.1a is enforced: startup first, shutdown last (it waits for in-flight
//! emissions), nothing but shutdown after a denied startup.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hookwire::{AgentContext, InterceptionPoint, SPEC_VERSION};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::macros::format_description;
use tokio::sync::RwLock;

use crate::emission::Emission;
use crate::error::Error;
use crate::host_state::HostState;
use crate::payload::{InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult};
use crate::pipeline;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Fresh,
    Running,
    StartupDenied,
    Closed,
}

/// One session of the agent. Emissions take `&self` and may run
/// concurrently; share the session behind an `Arc` across tasks.
pub struct Session {
    host: Arc<HostState>,
    id: String,
    session: Value,
    members: Map<String, Value>,
    next_sequence: AtomicU64,
    lifecycle: RwLock<Lifecycle>,
    /// Keeps the host's open-sessions gauge up while the session lives.
    _open: Option<crate::metrics::OpenSession>,
}

impl Session {
    pub(crate) fn new(host: Arc<HostState>, id: String, mut members: Map<String, Value>) -> Self {
        let mut session = match members.remove("session") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        session.insert("id".into(), Value::String(id.clone()));
        Self {
            _open: host.metrics.as_ref().map(|m| m.session_opened()),
            host,
            id,
            session: Value::Object(session),
            members,
            next_sequence: AtomicU64::new(0),
            lifecycle: RwLock::new(Lifecycle::Fresh),
        }
    }

    /// `session.id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `agent_startup` (§3): must come first. A denied startup closes the
    /// session to everything but [`Session::shutdown`].
    pub async fn start<S: Into<String>>(
        &self,
        tools_registered: impl IntoIterator<Item = S>,
    ) -> Result<Emission, Error> {
        let mut state = self.lifecycle.write().await;
        if *state != Lifecycle::Fresh {
            return Err(Error::AlreadyStarted(self.id.clone()));
        }
        let tools: Vec<String> = tools_registered.into_iter().map(Into::into).collect();
        let e = self
            .run(
                InterceptionPoint::AgentStartup,
                one("agent_init", json!({"tools_registered": tools})),
            )
            .await;
        *state = if e.proceeds() {
            Lifecycle::Running
        } else {
            Lifecycle::StartupDenied
        };
        Ok(e)
    }

    /// `input`: an external request entering the session.
    pub async fn input(&self, content: Value, role: InputRole) -> Result<Emission, Error> {
        self.emit(
            InterceptionPoint::Input,
            one("input", json!({"content": content, "role": role})),
        )
        .await
    }

    /// `pre_model_call`: before a model request with `messages`.
    pub async fn pre_model_call(&self, model_id: &str, messages: Value) -> Result<Emission, Error> {
        let mut m = one("model", json!({"id": model_id}));
        m.insert("messages".into(), messages);
        self.emit(InterceptionPoint::PreModelCall, m).await
    }

    /// `post_model_call`: after the model answered.
    pub async fn post_model_call(
        &self,
        model_id: &str,
        response: &ModelResponse,
    ) -> Result<Emission, Error> {
        let mut m = one("model", json!({"id": model_id}));
        m.insert("response".into(), response.to_json());
        self.emit(InterceptionPoint::PostModelCall, m).await
    }

    /// `pre_tool_call`: before invoking a tool. Invoke it with
    /// [`Emission::target`] as the arguments (transforms applied).
    pub async fn pre_tool_call(&self, call: &ToolCall) -> Result<Emission, Error> {
        self.emit(
            InterceptionPoint::PreToolCall,
            one("tool_call", call.to_json()),
        )
        .await
    }

    /// `post_tool_call`: after the tool returned. `call.args` must be the
    /// arguments the tool actually received (§4.2).
    pub async fn post_tool_call(
        &self,
        call: &ToolCall,
        result: &ToolResult,
    ) -> Result<Emission, Error> {
        let mut m = one("tool_call", call.to_json());
        m.insert(
            "tool_result".into(),
            json!({"value": result.value, "is_error": result.is_error}),
        );
        self.emit(InterceptionPoint::PostToolCall, m).await
    }

    /// `output`: before the final response reaches the caller.
    pub async fn output(&self, content: Value) -> Result<Emission, Error> {
        self.emit(
            InterceptionPoint::Output,
            one("output", json!({"content": content})),
        )
        .await
    }

    /// `agent_shutdown` (§3): waits for in-flight emissions, emits last, and
    /// closes the session. After a denied startup the reason is `error`
    /// whatever was asked (§6.1a).
    pub async fn shutdown(&self, reason: ShutdownReason) -> Result<Emission, Error> {
        let mut state = self.lifecycle.write().await;
        let reason = match *state {
            Lifecycle::Fresh => return Err(Error::NotStarted(self.id.clone())),
            Lifecycle::Closed => return Err(Error::Closed(self.id.clone())),
            Lifecycle::StartupDenied => ShutdownReason::Error,
            Lifecycle::Running => reason,
        };
        let e = self
            .run(
                InterceptionPoint::AgentShutdown,
                one("summary", json!({"reason": reason.as_str()})),
            )
            .await;
        *state = Lifecycle::Closed;
        Ok(e)
    }

    /// Emits any point between startup and shutdown with the given
    /// conditional and optional members (e.g. `request_id`, `usage`).
    /// `agent_startup` and `agent_shutdown` carry the lifecycle and are
    /// refused here ([`Error::LifecyclePoint`]): use [`Session::start`] and
    /// [`Session::shutdown`].
    pub async fn emit(
        &self,
        point: InterceptionPoint,
        members: Map<String, Value>,
    ) -> Result<Emission, Error> {
        if matches!(
            point,
            InterceptionPoint::AgentStartup | InterceptionPoint::AgentShutdown
        ) {
            return Err(Error::LifecyclePoint {
                session: self.id.clone(),
                point,
            });
        }
        let state = self.lifecycle.read().await;
        match *state {
            Lifecycle::Running => Ok(self.run(point, members).await),
            Lifecycle::Fresh => Err(Error::NotStarted(self.id.clone())),
            Lifecycle::StartupDenied => Err(Error::StartupDenied(self.id.clone())),
            Lifecycle::Closed => Err(Error::Closed(self.id.clone())),
        }
    }

    /// Builds the context (sequence assigned here, atomically) and runs it.
    async fn run(&self, point: InterceptionPoint, conditional: Map<String, Value>) -> Emission {
        let sequence = self.next_sequence.fetch_add(1, Ordering::SeqCst);
        let mut m = Map::with_capacity(8 + self.members.len() + conditional.len());
        m.insert("spec".into(), Value::from(SPEC_VERSION));
        m.insert("interception_point".into(), Value::from(point.as_str()));
        m.insert("timestamp".into(), Value::String(now_rfc3339()));
        m.insert("sequence".into(), Value::from(sequence));
        m.insert("agent".into(), Value::Object(self.host.agent.clone()));
        m.insert("session".into(), self.session.clone());
        for (k, v) in &self.members {
            m.insert(k.clone(), v.clone());
        }
        m.extend(conditional);
        pipeline::run(&self.host, AgentContext::from_members_unchecked(point, m)).await
    }
}

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.into(), value);
    m
}

/// RFC 3339 UTC with millisecond precision, e.g. `2026-06-19T14:03:11.123Z`.
fn now_rfc3339() -> String {
    let fmt =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".into())
}

#[cfg(test)]
mod tests {
    use hookwire::{InterceptionPoint, Verdict};
    use serde_json::Map;

    use crate::{BoxError, Error, Host, ShutdownReason, interceptor_fn};

    fn host() -> Host {
        let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
        Host::builder("agent", "hookwire")
            .interceptor("allow", allow)
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn emit_refuses_the_lifecycle_points_with_their_own_error() {
        let session = host().session("s").unwrap();
        session.start(["bash"]).await.unwrap();
        for point in [
            InterceptionPoint::AgentStartup,
            InterceptionPoint::AgentShutdown,
        ] {
            let err = session.emit(point, Map::new()).await.unwrap_err();
            assert!(
                matches!(&err, Error::LifecyclePoint { session, point: p } if session == "s" && *p == point),
                "{err:?}"
            );
            let text = err.to_string();
            assert!(
                text.contains("Session::start or Session::shutdown"),
                "{text}"
            );
        }
        // Refusing them changed nothing: the session still runs and closes.
        let e = session.shutdown(ShutdownReason::Completed).await.unwrap();
        assert_eq!(e.record().sequence, 1, "the refused emits took no sequence");
    }

    #[tokio::test]
    async fn emit_refuses_a_lifecycle_point_before_startup_too() {
        let session = host().session("fresh").unwrap();
        let err = session
            .emit(InterceptionPoint::AgentShutdown, Map::new())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::LifecyclePoint { .. }), "{err:?}");
    }
}
