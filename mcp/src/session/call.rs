//! `tools/call`: `pre_tool_call` (a transform rewrites the arguments sent
//! upstream; a deny answers without calling), the upstream call within
//! the call timeout, `post_tool_call` (a transform rewrites the content
//! the client receives; a deny discards the result). An upstream JSON-RPC
//! error is a result too: its message and data pass `post_tool_call` as
//! content blocks, and what the client receives is what the verdict
//! released (`core::settle_post_error`). While an emission
//! waits (an approval, a slow interceptor) the client gets progress
//! notifications when it asked for them; a cancellation drops the
//! pending emission (the host records it) or, at the upstream, is relayed
//! and closes the pair with an error `post_tool_call`.

use std::future::Future;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use hookwire_client::{Emission, ToolCall, ToolResult};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::state::McpSession;
use crate::core::{self, CallParams, CallResult, Pre, Verdicted};
use crate::jsonrpc::{self, Id};
use crate::metrics::CallOutcome;

/// How often a waiting emission reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// What ended the wait for an emission.
enum Waited<T> {
    Done(T),
    Cancelled,
}

impl McpSession {
    /// Governs one `tools/call`; `None` when it was cancelled.
    pub(super) async fn tools_call(
        self: &Arc<Self>,
        id: &Id,
        params: Value,
        mut cancel: watch::Receiver<bool>,
    ) -> Option<Value> {
        let started = Instant::now();
        let p = match core::call_params(&params) {
            Ok(p) => p,
            Err(e) => {
                self.count("request", "malformed");
                self.finish("", CallOutcome::Refused, started);
                return Some(jsonrpc::error_response(
                    Some(id),
                    jsonrpc::INVALID_PARAMS,
                    e,
                ));
            }
        };
        self.count("request", "governed");
        let (answer, outcome) = self.governed_call(id, &params, &p, &mut cancel).await;
        self.finish(&p.name, outcome, started);
        answer.map(|a| match a {
            Ok(result) => jsonrpc::result_response(id, result),
            Err(error) => json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error}),
        })
    }

    fn finish(&self, tool: &str, outcome: CallOutcome, started: Instant) {
        if let Some(m) = &self.config.metrics {
            let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
            m.tool_call(tool, &tools, outcome, started.elapsed());
        }
        tracing::info!(target: "hookwire_mcp::access", session = %self.key, tool = %tool, outcome = outcome.as_str(), "mcp tool call");
    }

    /// The tool result the client receives (`None`: cancelled), and how
    /// the call ended.
    async fn governed_call(
        self: &Arc<Self>,
        id: &Id,
        params: &Value,
        p: &CallParams,
        cancel: &mut watch::Receiver<bool>,
    ) -> (Option<Result<Value, Value>>, CallOutcome) {
        let call = ToolCall::new(id.as_call_id(), p.name.clone(), p.arguments.clone());
        let pre = self
            .hw
            .pre_tool_call_with(&call, self.extensions(Map::new()));
        let pre = match self.waited(pre, p, "pre_tool_call", cancel).await {
            Waited::Cancelled => return (None, CallOutcome::Cancelled),
            Waited::Done(Ok(e)) => e,
            Waited::Done(Err(e)) => return (Some(Ok(refused(&e))), CallOutcome::Refused),
        };
        let hidden = self
            .config
            .hidden
            .contains(&p.name)
            .then_some(p.name.as_str());
        let args = match core::settle_pre(&verdicted(&pre), &p.arguments, hidden) {
            Pre::Answer(result) => {
                let outcome = if hidden.is_some() {
                    CallOutcome::Hidden
                } else {
                    CallOutcome::DeniedPre
                };
                return (Some(Ok(result)), outcome);
            }
            Pre::Call(args) => args,
        };
        let sent = ToolCall::new(call.id.clone(), call.name.clone(), args.clone());
        let upstream = self.upstream_call(id, params, &args, cancel).await;
        let (result, mut outcome) = match upstream {
            Upstream::Result(r) => (Ok(r), CallOutcome::Allowed),
            Upstream::Error(error) => (Err(error), CallOutcome::Allowed),
            // No result exists: the post_tool_call is the host's
            // `host_error:context_invalid`, naming the failure.
            Upstream::Failed(text) => {
                let _ = self.hw.post_tool_call_unavailable(&sent, &text).await;
                return (
                    Some(Ok(core::error_result(&text))),
                    CallOutcome::UpstreamFailed,
                );
            }
            Upstream::Cancelled => {
                let problem = "the client cancelled the call while the upstream ran it";
                let _ = self.hw.post_tool_call_unavailable(&sent, problem).await;
                return (None, CallOutcome::Cancelled);
            }
        };
        let mut extra = Map::new();
        let (value, is_error) = match &result {
            Ok(r) => {
                if let Some(s) = &r.structured {
                    extra.insert("structured_content".into(), s.clone());
                }
                (r.content.clone(), r.is_error)
            }
            // A JSON-RPC error is a result the model may see too: its
            // message and data are governed as content blocks, its code
            // named beside them.
            Err(error) => {
                let code = error.get("code").cloned().unwrap_or(Value::Null);
                extra.insert("jsonrpc_error".into(), json!({"code": code}));
                (core::error_content(error), true)
            }
        };
        let sent_result = ToolResult { value, is_error };
        let post = self
            .hw
            .post_tool_call_with(&sent, &sent_result, self.extensions(extra));
        let post = match self.waited(post, p, "post_tool_call", cancel).await {
            Waited::Cancelled => return (None, CallOutcome::Cancelled),
            Waited::Done(Ok(e)) => e,
            Waited::Done(Err(e)) => return (Some(Ok(refused(&e))), CallOutcome::Refused),
        };
        let v = verdicted(&post);
        if !v.proceeds {
            outcome = CallOutcome::DeniedPost;
        }
        let answer = match result {
            Ok(r) => core::settle_post(&v, &r),
            // The upstream's JSON-RPC error, relayed as it came only when
            // the verdict permitted it unchanged.
            Err(error) => match core::settle_post_error(&v, &error) {
                Err(error) => return (Some(Err(error)), outcome),
                Ok(result) => result,
            },
        };
        (Some(Ok(answer)), outcome)
    }

    /// Calls the upstream with the governed arguments.
    async fn upstream_call(
        &self,
        id: &Id,
        params: &Value,
        args: &Value,
        cancel: &mut watch::Receiver<bool>,
    ) -> Upstream {
        let pending = match self
            .link
            .start("tools/call", core::forwarded_call(params, args))
            .await
        {
            Ok(p) => p,
            Err(f) => return Upstream::Failed(format!("hookwire: {f}")),
        };
        if let Some(f) = self.state().in_flight.get_mut(id) {
            f.upstream = Some(pending.id);
        }
        if *cancel.borrow() {
            return Upstream::Cancelled;
        }
        tokio::select! {
            answer = pending.answer() => match answer {
                Ok(Ok(result)) if core::stateless::incomplete_kind(&result).is_some() => {
                    let kind = core::stateless::incomplete_kind(&result).unwrap_or_default();
                    Upstream::Failed(core::stateless::input_refused_text(kind))
                }
                Ok(Ok(result)) => match core::call_result(&result) {
                    Ok(r) => Upstream::Result(r),
                    Err(e) => Upstream::Failed(format!("hookwire: the upstream failed: {e}")),
                },
                Ok(Err(error)) => Upstream::Error(error),
                Err(f) => Upstream::Failed(format!("hookwire: {f}")),
            },
            _ = cancel.wait_for(|c| *c) => Upstream::Cancelled,
        }
    }

    /// The extra members of a tool call's emissions: this proxy's
    /// `extensions.mcp`, the session and method beside `mcp`'s own.
    fn extensions(&self, mut mcp: Map<String, Value>) -> Map<String, Value> {
        mcp.insert("session".into(), self.key.clone().into());
        mcp.insert("method".into(), "tools/call".into());
        let mut members = Map::new();
        members.insert("extensions".into(), json!({"mcp": mcp}));
        members
    }

    /// Waits for an emission, reporting progress when the client asked
    /// for it; a cancellation drops the emission.
    async fn waited<T>(
        &self,
        emission: impl Future<Output = T>,
        p: &CallParams,
        point: &str,
        cancel: &mut watch::Receiver<bool>,
    ) -> Waited<T> {
        tokio::pin!(emission);
        let notify = p.progress_token.as_ref().and_then(|t| {
            let st = self.state();
            st.in_flight
                .values()
                .find_map(|f| {
                    f.progress
                        .as_ref()
                        .filter(|(tok, _)| tok == t)
                        .map(|(_, n)| n.clone())
                })
                .map(|n| (t.clone(), n))
        });
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let mut count = 0u64;
        loop {
            tokio::select! {
                // The emission is polled first, so that even a call
                // cancelled before it began has its emission, and the
                // host's cancellation record.
                biased;
                done = &mut emission => return Waited::Done(done),
                _ = cancel.wait_for(|c| *c) => return Waited::Cancelled,
                _ = tick.tick(), if notify.is_some() => {
                    count += 1;
                    if let Some((token, tx)) = &notify {
                        let _ = tx.try_send(core::progress(token, count, point));
                    }
                }
            }
        }
    }
}

/// What the upstream call came to.
enum Upstream {
    Result(CallResult),
    Error(Value),
    Failed(String),
    Cancelled,
}

/// The verdict of an emission, as the core reads it.
fn verdicted(e: &Emission) -> Verdicted {
    Verdicted {
        proceeds: e.proceeds(),
        target: e.target().cloned(),
        reason: e.reason().map(str::to_owned),
        message: e.verdict().message.clone(),
        liftable: e.verdict().is_liftable(),
    }
}

/// The tool result of an emission the host refused.
fn refused(e: &hookwire_client::Error) -> Value {
    core::error_result(&format!("hookwire: the host failed closed: {e}"))
}
