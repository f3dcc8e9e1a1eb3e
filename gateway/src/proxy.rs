//! One governed Chat Completions request, end to end.
//!
//! 1. The body is read up to its bound and checked (`messages`, `model`,
//!    at most one choice). A request with a callback token skips 2–6.
//! 2. The conversation is found or opened (`agent_startup` on its first
//!    request, with the names of the request's `tools`).
//! 3. The messages the gateway has not seen yet are governed: each tool
//!    result through `post_tool_call` (a denied one is replaced by a
//!    blocked notice), each user message through `input` (a transform
//!    rewrites it; a deny refuses the request).
//! 4. `pre_model_call` over the messages; its verdict's target is what
//!    goes upstream, its interceptors' `hookwire` extensions the
//!    overrides and upstream mutations (module `extension`).
//! 5. The upstream request: overrides, `before_credentials`, the pooled
//!    credential, `after_credentials`, the depth header.
//! 6. The response: `post_model_call`, then `pre_tool_call` for each
//!    proposed call (denied calls removed, a notice in the content), then
//!    `output` for a final answer (a deny withholds it:
//!    `finish_reason: "content_filter"`). Streamed responses are
//!    assembled first and written back as events (§12.1, buffered).
//!
//! A deny or failure before step 5 forwards nothing upstream.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::http::header::{self, HeaderName};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use hookwire::InterceptionPoint;
use hookwire_client::{
    BoxError, ChunkStream, Emission, Host, InputRole, ModelResponse, StreamEnd, StreamEvent,
    ToolResult,
};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::OwnedMutexGuard;
use tokio::sync::mpsc::Sender;

use crate::applied::{Applied, AppliedLog};
use crate::callback::{CallbackTokens, Minted};
use crate::config::{
    CALLBACK_HEADER, DEPTH_HEADER, GatewayConfig, MAX_MESSAGES, MAX_SESSION_ID, SESSION_HEADER,
};
use crate::credentials::CredentialPool;
use crate::error::Error;
use crate::extension::{Asked, NAMESPACE, StageMutation};
use crate::openai::{self, Assembled, SseParser};
use crate::sessions::{ConvState, Conversation, Sessions, Startup};
use crate::upstream::{self, Upstream};
use std::collections::VecDeque;
use std::time::Duration;

/// How many permitted tool calls may wait for their results.
const MAX_PENDING_CALLS: usize = 1024;

/// Client headers never forwarded upstream.
const DROPPED_HEADERS: [&str; 12] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
    // The gateway reads the upstream's body; it asks for it uncompressed.
    "accept-encoding",
    "expect",
];

/// The state every request shares.
pub(crate) struct Inner {
    pub(crate) host: Host,
    pub(crate) config: GatewayConfig,
    pub(crate) upstream: Upstream,
    pub(crate) pool: CredentialPool,
    pub(crate) tokens: CallbackTokens,
    pub(crate) sessions: Sessions,
    pub(crate) applied: AppliedLog,
    pub(crate) callback_base: std::sync::OnceLock<String>,
    pub(crate) next_request: AtomicU64,
}

/// Revokes a request's callback token when the request ends, however it
/// ends.
struct Revoke<'a> {
    tokens: &'a CallbackTokens,
    minted: Option<Minted>,
}

impl Drop for Revoke<'_> {
    fn drop(&mut self) {
        if let Some(m) = &self.minted {
            self.tokens.revoke(m);
        }
    }
}

/// How a governed request continues once the upstream answered.
enum Outcome {
    /// The response is ready.
    Done(Response),
    /// A streamed answer to mediate incrementally (§12.1's exception).
    Mediate(Mediation),
}

/// What incremental mediation takes over.
struct Mediation {
    body: Incoming,
    model: String,
    client_count: usize,
}

/// What one governed request carries through its emissions.
struct Governed<'a> {
    conv: &'a Conversation,
    request_id: String,
    /// The `extensions` member of the request's contexts.
    extensions: Option<Value>,
    applied: Applied,
}

impl Inner {
    /// `POST /v1/chat/completions`.
    pub(crate) async fn chat(self: Arc<Self>, headers: HeaderMap, body: Body) -> Response {
        match Self::chat_checked(&self, &headers, body).await {
            Ok(r) => r,
            Err(e) => e.into_response(),
        }
    }

    /// `GET /v1/models`: passed through with the credential.
    pub(crate) async fn models(self: Arc<Self>, headers: HeaderMap) -> Response {
        let depth = match depth_of(&headers, self.config.max_depth) {
            Ok(d) => d,
            Err(e) => return e.into_response(),
        };
        let mut applied = Applied {
            depth,
            request_id: self.request_id(),
            ..Applied::default()
        };
        let result = self
            .relay(Method::GET, "/models", &headers, Bytes::new(), &mut applied)
            .await;
        applied.outcome = outcome_of(&result);
        self.applied.push(applied);
        result.unwrap_or_else(IntoResponse::into_response)
    }

    /// `DELETE /v1/hookwire/sessions/{id}`: ends a conversation
    /// (`agent_shutdown`, `completed`). Only the client credential that
    /// opened it may end it.
    pub(crate) async fn end_session(self: Arc<Self>, headers: HeaderMap, id: String) -> Response {
        match self.sessions.remove(&id, owner_of(&headers)) {
            Some(conv) => {
                conv.close(hookwire_client::ShutdownReason::Completed).await;
                StatusCode::NO_CONTENT.into_response()
            }
            None => (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"error": {"message": "no such session", "type": "invalid_request_error", "param": null, "code": "session_not_found"}})),
            )
                .into_response(),
        }
    }

    fn request_id(&self) -> String {
        format!("gw-{}", self.next_request.fetch_add(1, Ordering::Relaxed))
    }

    async fn chat_checked(
        self: &Arc<Self>,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Response, Error> {
        let bytes = read_body(body, self.config.max_body_bytes).await?;
        let depth = depth_of(headers, self.config.max_depth)?;
        if let Some(token) = headers.get(CALLBACK_HEADER) {
            return self.callback(headers, token, bytes).await;
        }
        let mut req: Map<String, Value> = serde_json::from_slice(&bytes)
            .map_err(|_| Error::BadRequest("the body is not a JSON object".into()))?;
        check_request(&req)?;
        let key = session_key(headers, &req)?;
        let conv = self
            .sessions
            .get_or_open(&self.host, &key, owner_of(headers))?;
        let mut state = conv.state.clone().lock_owned().await;
        if state.closed {
            self.sessions.forget(&key, &conv);
            return Err(Error::BadRequest(
                "the session was ended; retry to open a new one".into(),
            ));
        }
        let request_id = self.request_id();
        let minted = if depth < self.config.max_depth {
            self.tokens.mint(&key, depth + 1)
        } else {
            None
        };
        let extensions = minted.as_ref().map(|m| {
            json!({NAMESPACE: {"callback": {
                "token": m.token,
                "base_url": self.callback_base.get().cloned().unwrap_or_default(),
                "header": CALLBACK_HEADER,
                "depth": m.depth,
                "expires_in_ms": self.tokens.ttl().as_millis() as u64,
            }}})
        });
        let mut revoke = Revoke {
            tokens: &self.tokens,
            minted,
        };
        let mut g = Governed {
            conv: &conv,
            request_id: request_id.clone(),
            extensions,
            applied: Applied {
                session: key.clone(),
                request_id,
                depth,
                ..Applied::default()
            },
        };
        let result = match self.govern(&mut g, &mut state, headers, &mut req).await {
            Ok(Outcome::Done(r)) => Ok(r),
            Ok(Outcome::Mediate(job)) => {
                // Streamed as released: the session, its state and the
                // callback token go with the stream.
                let (request_id, extensions, applied) = (g.request_id, g.extensions, g.applied);
                let minted = revoke.minted.take();
                return Ok(self.spawn_mediation(
                    conv.clone(),
                    state,
                    job,
                    (request_id, extensions, applied),
                    minted,
                ));
            }
            Err(e) => Err(e),
        };
        if result.is_err() && state.turn_open {
            // The turn stops here without an output (§3.1 rule 3).
            conv.session.end_turn();
            state.turn_open = false;
        }
        self.sessions.touch(&conv);
        g.applied.outcome = match &result {
            Ok(_) if g.applied.outcome.is_empty() => "forwarded".into(),
            Ok(_) => g.applied.outcome.clone(),
            Err(Error::Denied { point, .. }) => format!("denied:{point}"),
            Err(e) => format!("failed:{}", e.status().as_u16()),
        };
        self.applied.push(g.applied);
        result
    }

    /// Steps 2–6 of the module docs.
    async fn govern(
        &self,
        g: &mut Governed<'_>,
        state: &mut ConvState,
        headers: &HeaderMap,
        req: &mut Map<String, Value>,
    ) -> Result<Outcome, Error> {
        let session = &g.conv.session;
        match &state.startup {
            Startup::Running => {}
            Startup::Denied(reason) => {
                return Err(Error::Denied {
                    point: InterceptionPoint::AgentStartup,
                    reason: reason.clone(),
                });
            }
            Startup::Fresh => {
                let e = session.start(tool_names(req)).await?;
                if !e.proceeds() {
                    let reason = reason_of(&e);
                    state.startup = Startup::Denied(reason.clone());
                    return Err(Error::Denied {
                        point: InterceptionPoint::AgentStartup,
                        reason,
                    });
                }
                state.startup = Startup::Running;
            }
        }
        let model = req
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(Value::Array(mut messages)) = req.remove("messages") else {
            return Err(Error::BadRequest("messages must be an array".into()));
        };
        let client_count = messages.len();
        self.govern_new_messages(g, state, &mut messages).await?;

        // pre_model_call over the messages.
        let mut members = Map::new();
        members.insert("model".into(), json!({"id": model}));
        members.insert("messages".into(), Value::Array(messages));
        let pre = self
            .emit(g, InterceptionPoint::PreModelCall, members)
            .await?;
        if !pre.proceeds() {
            return Err(denied(&pre));
        }
        // Only what the host released: enforce mode, a permitting own
        // verdict, inside the binding's effect grant.
        let asked = Asked::from_extensions(pre.response_extensions())?;
        let Some(Value::Array(messages)) = pre.context().get("messages").cloned() else {
            return Err(Error::UpstreamResponse(
                "a transform left the messages unusable".into(),
            ));
        };
        req.insert("messages".into(), Value::Array(messages));
        let stream = req.get("stream") == Some(&Value::Bool(true));
        let (up_headers, up_body) = self.upstream_request(g, headers, req, &asked, stream)?;

        // The upstream.
        let resp = self
            .upstream
            .send(Method::POST, "/chat/completions", up_headers, up_body)
            .await?;
        let status = resp.status();
        g.applied.upstream_status = Some(status.as_u16());
        let content_type = resp.headers().get(header::CONTENT_TYPE).cloned();
        if !status.is_success() {
            // The upstream's errors pass through as they are.
            let body = self.collect(resp.into_body()).await?;
            if state.turn_open {
                session.end_turn();
                state.turn_open = false;
            }
            g.applied.outcome = format!("upstream_error:{}", status.as_u16());
            return Ok(Outcome::Done(passthrough(status, content_type, body)));
        }
        if stream && self.config.incremental_output {
            return Ok(Outcome::Mediate(Mediation {
                body: resp.into_body(),
                model,
                client_count,
            }));
        }
        let (message, finish_reason, mut upstream_json, assembled) = if stream {
            let a = self.assemble(resp.into_body()).await?;
            let finish = a.finish_reason.clone().ok_or_else(|| {
                Error::Upstream("the stream ended before its finish reason".into())
            })?;
            (a.message(), finish, Value::Null, Some(a))
        } else {
            let body = self.collect(resp.into_body()).await?;
            let v: Value = serde_json::from_slice(&body)
                .map_err(|_| Error::UpstreamResponse("the response is not JSON".into()))?;
            let choice = v
                .get("choices")
                .and_then(|c| c.get(0))
                .ok_or_else(|| Error::UpstreamResponse("the response has no choice".into()))?;
            let message = choice.get("message").cloned().unwrap_or(json!({}));
            let finish = choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .unwrap_or("stop")
                .to_owned();
            (message, finish, v, None)
        };
        let response = self.post_model(g, &model, &message, finish_reason).await?;
        let (content, tool_calls, finish_reason) = self.settle(g, state, response).await?;
        state.seen = client_count + 1;
        if let Some(a) = assembled {
            let text = openai::text_of(&content);
            let events = openai::sse_events(&a, Some(&text), &tool_calls, &finish_reason);
            let body = Body::from_stream(futures::stream::iter(
                events.into_iter().map(Ok::<_, std::convert::Infallible>),
            ));
            return Ok(Outcome::Done(event_stream(body)));
        }
        let choice = &mut upstream_json["choices"][0];
        let mut message = message;
        message["content"] = content;
        match message.as_object_mut() {
            Some(m) if tool_calls.is_empty() => {
                m.remove("tool_calls");
            }
            Some(m) => {
                m.insert("tool_calls".into(), Value::Array(tool_calls));
            }
            None => {}
        }
        choice["message"] = message;
        choice["finish_reason"] = Value::from(finish_reason);
        Ok(Outcome::Done(axum::Json(upstream_json).into_response()))
    }

    /// Step 3: the tool results and user messages the gateway has not
    /// governed yet, and an `input` when no turn is open.
    async fn govern_new_messages(
        &self,
        g: &mut Governed<'_>,
        state: &mut ConvState,
        messages: &mut [Value],
    ) -> Result<(), Error> {
        let session = &g.conv.session;
        let last_user = messages
            .iter()
            .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"));
        let mut start = if state.seen > 0 && state.seen <= messages.len() {
            state.seen
        } else {
            last_user.unwrap_or(0)
        };
        // The history the client replays: what a verdict rewrote goes
        // upstream rewritten again; a message the client changed since it
        // was governed is governed anew.
        for (i, message) in messages.iter_mut().enumerate().take(start) {
            if let Some((digest, replacement)) = state.rewrites.get(&i) {
                if content_digest(message) == *digest {
                    message["content"] = replacement.clone();
                } else {
                    start = i;
                    break;
                }
            }
        }
        state.rewrites.retain(|i, _| *i < start);
        for (i, message) in messages.iter_mut().enumerate().skip(start) {
            let original = content_digest(message);
            let before = message.get("content").cloned();
            match message.get("role").and_then(Value::as_str) {
                Some("tool") => {
                    let id = message
                        .get("tool_call_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let content = message.get("content").cloned().unwrap_or(Value::Null);
                    let Some(call) = state.pending.remove(id) else {
                        message["content"] = Value::from(openai::blocked_result(
                            "post_tool_call",
                            Some("hookwire:unpaired_tool_result"),
                        ));
                        continue;
                    };
                    let result = ToolResult {
                        value: content,
                        is_error: false,
                    };
                    let e = session.post_tool_call(&call, &result).await?;
                    message["content"] = if e.proceeds() {
                        match e.target() {
                            Some(Value::String(s)) => Value::from(s.clone()),
                            Some(other) => Value::from(other.to_string()),
                            None => Value::from(""),
                        }
                    } else {
                        Value::from(openai::blocked_result("post_tool_call", e.reason()))
                    };
                }
                Some("user") => {
                    if state.turn_open {
                        // A new user message begins a new turn; the one
                        // before ended without an output.
                        session.end_turn();
                        state.turn_open = false;
                    }
                    let content = message.get("content").cloned().unwrap_or(Value::Null);
                    self.input(g, state, content, InputRole::User, Some(message))
                        .await?;
                }
                _ => {}
            }
            if message.get("content") != before.as_ref() {
                let now = message.get("content").cloned().unwrap_or(Value::Null);
                state.rewrites.insert(i, (original, now));
            }
        }
        if !state.turn_open {
            // A retry (or a request with nothing new): the turn the last
            // user message began is emitted again.
            let Some(i) = last_user else {
                return Err(Error::BadRequest(
                    "the request carries no user message to begin a turn".into(),
                ));
            };
            let content = messages[i].get("content").cloned().unwrap_or(Value::Null);
            self.input(g, state, content, InputRole::User, Some(&mut messages[i]))
                .await?;
        }
        Ok(())
    }

    /// One `input`; a permitting verdict opens the turn and its target
    /// replaces the message's content.
    async fn input(
        &self,
        g: &mut Governed<'_>,
        state: &mut ConvState,
        content: Value,
        role: InputRole,
        message: Option<&mut Value>,
    ) -> Result<(), Error> {
        let mut members = Map::new();
        members.insert("input".into(), json!({"content": content, "role": role}));
        let e = self.emit(g, InterceptionPoint::Input, members).await?;
        if !e.proceeds() {
            return Err(denied(&e));
        }
        state.turn_open = true;
        if let (Some(message), Some(target)) = (message, e.target()) {
            message["content"] = target.get("content").cloned().unwrap_or(Value::Null);
        }
        Ok(())
    }

    /// An emission carrying the request's `request_id` and callback
    /// extension. The gateway keeps §3.1's order itself (a turn is open
    /// before every model point; a post follows its permitted pre), so
    /// these go through the session's raw path.
    async fn emit(
        &self,
        g: &Governed<'_>,
        point: InterceptionPoint,
        mut members: Map<String, Value>,
    ) -> Result<Emission, Error> {
        if matches!(
            point,
            InterceptionPoint::PreModelCall | InterceptionPoint::PostModelCall
        ) {
            members.insert("request_id".into(), Value::from(g.request_id.clone()));
        }
        if let Some(ext) = &g.extensions {
            members.insert("extensions".into(), ext.clone());
        }
        Ok(g.conv.session.emit(point, members).await?)
    }

    /// Step 6, first half: `post_model_call` over the whole answer; the
    /// verdicted response.
    async fn post_model(
        &self,
        g: &Governed<'_>,
        model: &str,
        message: &Value,
        finish_reason: String,
    ) -> Result<ModelResponse, Error> {
        let calls = openai::tool_calls_of(message).map_err(Error::UpstreamResponse)?;
        let response = json!({
            "content": message.get("content").cloned().unwrap_or(Value::Null),
            "tool_calls": calls.iter().map(|c| json!({"id": c.id, "name": c.name, "args": c.args})).collect::<Vec<_>>(),
            "finish_reason": finish_reason,
        });
        let mut members = Map::new();
        members.insert("model".into(), json!({"id": model}));
        members.insert("response".into(), response);
        let post = self
            .emit(g, InterceptionPoint::PostModelCall, members)
            .await?;
        if !post.proceeds() {
            return Err(denied(&post));
        }
        post.target()
            .and_then(ModelResponse::from_target)
            .ok_or_else(|| {
                Error::UpstreamResponse("a transform left the response unreadable".into())
            })
    }

    /// Step 6, second half: `pre_tool_call` per proposed call, then
    /// `output` for a final answer. Returns the content, the permitted tool
    /// calls (OpenAI shape) and the finish reason the client receives.
    async fn settle(
        &self,
        g: &Governed<'_>,
        state: &mut ConvState,
        response: ModelResponse,
    ) -> Result<(Value, Vec<Value>, String), Error> {
        let session = &g.conv.session;
        let mut kept = Vec::new();
        let mut notices = Vec::new();
        for call in &response.tool_calls {
            if state.pending.len() >= MAX_PENDING_CALLS {
                return Err(Error::BadRequest(format!(
                    "more than {MAX_PENDING_CALLS} tool calls wait for their results"
                )));
            }
            let e = session.pre_tool_call(call).await?;
            if e.proceeds() {
                let mut permitted = call.clone();
                if let Some(args) = e.target() {
                    permitted.args = args.clone();
                }
                kept.push(openai::openai_tool_call(&permitted));
                state.pending.insert(permitted.id.clone(), permitted);
            } else {
                notices.push(openai::blocked_call_notice(call, e.reason()));
            }
        }
        let mut content = response.content.clone();
        if !notices.is_empty() {
            let text = openai::text_of(&content);
            let joined = notices.join("\n");
            content = Value::from(if text.is_empty() {
                joined
            } else {
                format!("{text}\n{joined}")
            });
        }
        if !kept.is_empty() {
            // The turn goes on with the tool results.
            return Ok((content, kept, "tool_calls".into()));
        }
        let finish = if response.finish_reason == "tool_calls" {
            "stop".to_owned()
        } else {
            response.finish_reason.clone()
        };
        let decision = session.output(content).await?;
        state.turn_open = false;
        match decision.release() {
            Ok(released) => Ok((released, Vec::new(), finish)),
            Err(withheld) => Ok((
                Value::from(openai::withheld_notice(
                    withheld.verdict().reason.as_deref(),
                )),
                Vec::new(),
                "content_filter".into(),
            )),
        }
    }

    /// Starts incremental mediation in its own task and returns the event
    /// stream the task writes to.
    fn spawn_mediation(
        self: &Arc<Self>,
        conv: Arc<Conversation>,
        mut state: OwnedMutexGuard<ConvState>,
        job: Mediation,
        (request_id, extensions, applied): (String, Option<Value>, Applied),
        minted: Option<Minted>,
    ) -> Response {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(32);
        let inner = self.clone();
        tokio::spawn(async move {
            let _revoke = Revoke {
                tokens: &inner.tokens,
                minted,
            };
            let mut g = Governed {
                conv: &conv,
                request_id,
                extensions,
                applied,
            };
            let result = inner.mediate(&g, &mut state, job, &tx).await;
            if state.turn_open && result.is_err() {
                conv.session.end_turn();
                state.turn_open = false;
            }
            g.applied.outcome = match &result {
                Ok(outcome) => outcome.clone(),
                Err(e) => {
                    // The status is sent; the SDKs raise on an error event.
                    let _ = tx.send(openai::sse_data(&e.to_openai_json())).await;
                    format!("failed:{}", e.status().as_u16())
                }
            };
            inner.sessions.touch(&conv);
            inner.applied.push(g.applied);
        });
        let events = futures::stream::poll_fn(move |cx| {
            rx.poll_recv(cx)
                .map(|b| b.map(Ok::<_, std::convert::Infallible>))
        });
        event_stream(Body::from_stream(events))
    }

    /// Incremental mediation (§12.1's exception): each segment the chain
    /// permits is written to the client as it is released; a deny (or a
    /// broken stream) withholds the rest and ends the answer with
    /// `finish_reason: "content_filter"`. A completed answer then goes
    /// through `pre_tool_call` and `output` like a buffered one; text
    /// already released cannot be recalled, so an `output` deny or rewrite
    /// ends it with `content_filter` and a notice. Returns the outcome
    /// recorded.
    async fn mediate(
        &self,
        g: &Governed<'_>,
        state: &mut ConvState,
        job: Mediation,
        tx: &Sender<Bytes>,
    ) -> Result<String, Error> {
        let shared = Arc::new(std::sync::Mutex::new(Assembled::default()));
        let meta = || {
            shared
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        };
        let chunks = upstream_chunks(
            job.body,
            shared.clone(),
            self.config.max_upstream_bytes,
            self.config.upstream_timeout,
        );
        let mut members = Map::new();
        members.insert("request_id".into(), Value::from(g.request_id.clone()));
        if let Some(ext) = &g.extensions {
            members.insert("extensions".into(), ext.clone());
        }
        let send = |b: Bytes| async move { tx.send(b).await.is_ok() };
        let mut mediated = g
            .conv
            .session
            .mediate_stream(job.model.clone(), chunks)
            .with_members(members);
        let mut started = false;
        loop {
            let next = mediated.next().await?;
            if !started {
                let role = json!({"role": "assistant", "content": ""});
                send(openai::sse_data(&openai::chunk_event(
                    &meta(),
                    role,
                    Value::Null,
                )))
                .await;
                started = true;
            }
            let Some(released) = next else { break };
            let delta = json!({"content": released.as_str()});
            if !send(openai::sse_data(&openai::chunk_event(
                &meta(),
                delta,
                Value::Null,
            )))
            .await
            {
                // The client went away: stop reading the upstream.
                break;
            }
        }
        let a = meta();
        let text_event = |text: String| {
            openai::sse_data(&openai::chunk_event(
                &a,
                json!({"content": text}),
                Value::Null,
            ))
        };
        let outcome = match mediated.into_end() {
            Some(StreamEnd::Completed { response, .. }) => {
                let released = openai::text_of(&response.content);
                let (content, kept, mut finish) = self.settle(g, state, response).await?;
                let text = openai::text_of(&content);
                if finish == "content_filter" {
                    send(text_event(format!("\n{text}"))).await;
                } else if let Some(extra) = text.strip_prefix(released.as_str()) {
                    if !extra.is_empty() {
                        send(text_event(extra.to_owned())).await;
                    }
                } else {
                    send(text_event(
                        "\n[hookwire] the response was rewritten after it was released".into(),
                    ))
                    .await;
                    finish = "content_filter".into();
                }
                for event in openai::closing_events(&a, &kept, &finish) {
                    send(event).await;
                }
                "streamed".to_owned()
            }
            Some(end) => {
                let reason = end.record().verdict.reason.clone();
                send(text_event(format!(
                    "\n{}",
                    openai::withheld_notice(reason.as_deref())
                )))
                .await;
                for event in openai::closing_events(&a, &[], "content_filter") {
                    send(event).await;
                }
                if state.turn_open {
                    g.conv.session.end_turn();
                    state.turn_open = false;
                }
                format!("withheld:{}", end.record().interception_point)
            }
            None => return Err(Error::Upstream("the client left mid-stream".into())),
        };
        state.seen = job.client_count + 1;
        Ok(outcome)
    }

    /// Step 5: the upstream request's headers and body.
    fn upstream_request(
        &self,
        g: &mut Governed<'_>,
        client: &HeaderMap,
        req: &mut Map<String, Value>,
        asked: &Asked,
        stream: bool,
    ) -> Result<(HeaderMap, Bytes), Error> {
        asked.model.apply(req);
        g.applied.overrides = asked.model.clone();
        let mut headers = forwarded_headers(client, !self.pool.is_empty());
        apply_stage(&mut headers, &asked.before);
        g.applied.headers_set_before.extend(
            asked
                .before
                .set_headers
                .iter()
                .map(|(k, v)| (k.clone(), v.by.clone())),
        );
        let mut body = req.clone();
        for stage in [&asked.before, &asked.after] {
            g.applied
                .headers_cleared
                .extend(stage.clear_headers.iter().cloned());
            if let Some(replacement) = &stage.body {
                body = replacement.value.clone();
                // The client asked for one shape of answer; a replacement
                // body does not change it.
                body.insert("stream".into(), Value::Bool(stream));
                g.applied.body_replaced_by = Some(replacement.by.clone());
            }
        }
        let wanted = asked.credential.as_ref().map(|c| c.value.as_str());
        let chosen = self
            .pool
            .choose(wanted)
            .map_err(|reason| Error::InvalidExtension {
                binding: asked
                    .credential
                    .as_ref()
                    .map(|c| c.by.clone())
                    .unwrap_or_default(),
                reason,
            })?;
        if let Some(c) = chosen {
            headers.insert(header::AUTHORIZATION, c.header);
            g.applied.credential = Some(c.label);
        }
        apply_stage(&mut headers, &asked.after);
        g.applied.headers_set_after.extend(
            asked
                .after
                .set_headers
                .iter()
                .map(|(k, v)| (k.clone(), v.by.clone())),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            HeaderName::from_static(DEPTH_HEADER),
            HeaderValue::from(g.applied.depth),
        );
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| Error::BadRequest(format!("the request cannot be encoded: {e}")))?;
        Ok((headers, Bytes::from(bytes)))
    }

    /// A request with a callback token: redeemed, then relayed without
    /// interception.
    async fn callback(
        &self,
        headers: &HeaderMap,
        token: &HeaderValue,
        body: Bytes,
    ) -> Result<Response, Error> {
        let mut applied = Applied {
            callback: true,
            request_id: self.request_id(),
            ..Applied::default()
        };
        let grant = token
            .to_str()
            .map_err(|_| "not a token this gateway issued")
            .and_then(|t| self.tokens.redeem(t));
        let result = match grant {
            Err(why) => Err(Error::CallbackRefused(why)),
            Ok(grant) if grant.depth > self.config.max_depth => Err(Error::TooDeep {
                depth: grant.depth,
                max: self.config.max_depth,
            }),
            Ok(grant) => {
                applied.session = grant.session;
                applied.depth = grant.depth;
                self.relay(
                    Method::POST,
                    "/chat/completions",
                    headers,
                    body,
                    &mut applied,
                )
                .await
            }
        };
        applied.outcome = outcome_of(&result);
        self.applied.push(applied);
        result
    }

    /// Forwards a request as it is (credential and depth header set) and
    /// streams the upstream's answer back, bounded.
    async fn relay(
        &self,
        method: Method,
        path: &str,
        client: &HeaderMap,
        body: Bytes,
        applied: &mut Applied,
    ) -> Result<Response, Error> {
        let mut headers = forwarded_headers(client, !self.pool.is_empty());
        if let Some(c) = self.pool.choose(None).map_err(Error::Config)? {
            headers.insert(header::AUTHORIZATION, c.header);
            applied.credential = Some(c.label);
        }
        headers.insert(
            HeaderName::from_static(DEPTH_HEADER),
            HeaderValue::from(applied.depth),
        );
        let resp = self.upstream.send(method, path, headers, body).await?;
        applied.upstream_status = Some(resp.status().as_u16());
        let (parts, incoming) = resp.into_parts();
        let mut out = Response::builder().status(parts.status);
        for name in [header::CONTENT_TYPE, header::CACHE_CONTROL] {
            if let Some(v) = parts.headers.get(&name) {
                out = out.header(name, v);
            }
        }
        let body = Body::new(Limited::new(incoming, self.config.max_upstream_bytes));
        out.body(body)
            .map_err(|e| Error::UpstreamResponse(e.to_string()))
    }

    async fn collect(&self, body: hyper::body::Incoming) -> Result<Bytes, Error> {
        upstream::collect(
            body,
            self.config.max_upstream_bytes,
            self.config.upstream_timeout,
        )
        .await
    }

    /// Reads an upstream event stream to its end (bounded in bytes and
    /// time) and assembles it.
    async fn assemble(&self, body: hyper::body::Incoming) -> Result<Assembled, Error> {
        let read = async {
            let mut body = body;
            let mut parser = SseParser::default();
            let mut assembled = Assembled::default();
            let mut total = 0usize;
            while let Some(frame) = body.frame().await {
                let frame =
                    frame.map_err(|e| Error::Upstream(format!("the stream broke off: {e}")))?;
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                total += data.len();
                if total > self.config.max_upstream_bytes {
                    return Err(Error::UpstreamResponse(format!(
                        "the stream exceeds {} bytes",
                        self.config.max_upstream_bytes
                    )));
                }
                for event in parser.feed(&data).map_err(Error::UpstreamResponse)? {
                    if event.trim() == "[DONE]" {
                        return Ok(assembled);
                    }
                    let chunk: Value = serde_json::from_str(&event)
                        .map_err(|_| Error::UpstreamResponse("an event is not JSON".into()))?;
                    assembled.add(&chunk).map_err(Error::UpstreamResponse)?;
                }
            }
            Ok(assembled)
        };
        tokio::time::timeout(self.config.upstream_timeout, read)
            .await
            .map_err(|_| Error::Upstream("the stream did not complete in time".into()))?
    }
}

fn outcome_of(result: &Result<Response, Error>) -> String {
    match result {
        Ok(r) => format!("relayed:{}", r.status().as_u16()),
        Err(e) => format!("failed:{}", e.status().as_u16()),
    }
}

fn passthrough(status: StatusCode, content_type: Option<HeaderValue>, body: Bytes) -> Response {
    let mut r = Response::builder().status(status);
    if let Some(ct) = content_type {
        r = r.header(header::CONTENT_TYPE, ct);
    }
    r.body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

fn denied(e: &Emission) -> Error {
    Error::Denied {
        point: e.record().interception_point,
        reason: reason_of(e),
    }
}

fn reason_of(e: &Emission) -> String {
    e.reason().unwrap_or("denied").to_owned()
}

/// The client headers that go upstream: all but the connection's, the
/// gateway's own, and (when the pool supplies one) the client's
/// `Authorization`.
fn forwarded_headers(client: &HeaderMap, pool_supplies_key: bool) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in client {
        let n = name.as_str();
        if DROPPED_HEADERS.contains(&n)
            || n.starts_with("x-hookwire-")
            || (pool_supplies_key && name == header::AUTHORIZATION)
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Clears, then sets (§ the extension's semantics).
fn apply_stage(headers: &mut HeaderMap, stage: &StageMutation) {
    for name in &stage.clear_headers {
        headers.remove(name.as_str());
    }
    for (name, v) in &stage.set_headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&v.value),
        ) {
            headers.insert(n, v);
        }
    }
}

async fn read_body(body: Body, limit: usize) -> Result<Bytes, Error> {
    match Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Error::BodyTooLarge { limit }),
        Err(_) => Err(Error::BadRequest(
            "the request body could not be read".into(),
        )),
    }
}

fn depth_of(headers: &HeaderMap, max: u32) -> Result<u32, Error> {
    let Some(v) = headers.get(DEPTH_HEADER) else {
        return Ok(0);
    };
    let depth = v
        .to_str()
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| Error::BadRequest(format!("{DEPTH_HEADER} must be an integer")))?;
    if depth > max {
        return Err(Error::TooDeep { depth, max });
    }
    Ok(depth)
}

fn check_request(req: &Map<String, Value>) -> Result<(), Error> {
    let bad = |m: &str| Err(Error::BadRequest(m.into()));
    match req.get("messages") {
        Some(Value::Array(m)) if m.is_empty() => return bad("messages must not be empty"),
        Some(Value::Array(m)) if m.len() > MAX_MESSAGES => {
            return bad("too many messages");
        }
        Some(Value::Array(m))
            if m.iter()
                .all(|m| m.get("role").is_some_and(Value::is_string)) => {}
        _ => return bad("messages must be an array of messages with a role"),
    }
    if !req.get("model").is_some_and(Value::is_string) {
        return bad("model must be a string");
    }
    if req.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
        return bad("n must be 1: the gateway governs exactly one choice");
    }
    Ok(())
}

/// The session id: the `x-hookwire-session` header, or derived from the
/// client credential, the model and the conversation's first message, so
/// that every request of one conversation (which replays its history)
/// maps to the same session.
fn session_key(headers: &HeaderMap, req: &Map<String, Value>) -> Result<String, Error> {
    if let Some(v) = headers.get(SESSION_HEADER) {
        let id = v.to_str().unwrap_or_default();
        let ok = !id.is_empty()
            && id.len() <= MAX_SESSION_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
        if !ok {
            return Err(Error::BadRequest(format!(
                "{SESSION_HEADER} must be 1-{MAX_SESSION_ID} characters of [A-Za-z0-9._:-]"
            )));
        }
        return Ok(id.to_owned());
    }
    let mut h = Sha256::new();
    h.update(owner_of(headers));
    if let Some(first) = req
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.first())
    {
        h.update(first.to_string().as_bytes());
    }
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("derived-{hex}"))
}

/// SHA-256 of a message's content as the client sent it.
fn content_digest(message: &Value) -> [u8; 32] {
    let content = message.get("content").unwrap_or(&Value::Null);
    Sha256::digest(content.to_string().as_bytes()).into()
}

/// SHA-256 of the client's `Authorization` header.
fn owner_of(headers: &HeaderMap) -> [u8; 32] {
    let auth = headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    Sha256::digest(auth).into()
}

/// The names of the request's function tools, for `agent_startup`.
fn tool_names(req: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<String> = req
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("function")?.get("name")?.as_str())
        .take(openai::MAX_TOOL_CALLS)
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A `text/event-stream` response.
fn event_stream(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The upstream's event stream as the chunk stream incremental mediation
/// takes: each content delta a chunk, the finish reason and tool calls
/// once the upstream says `[DONE]` (or ends after its finish reason);
/// bounded in bytes per event and in all, and in time per read. What it
/// reads is also assembled into `shared` (ids, usage, tool calls).
fn upstream_chunks(
    body: Incoming,
    shared: Arc<std::sync::Mutex<Assembled>>,
    limit: usize,
    timeout: Duration,
) -> ChunkStream<'static> {
    struct Reading {
        body: Incoming,
        parser: SseParser,
        queue: VecDeque<Result<StreamEvent, BoxError>>,
        done: bool,
        total: usize,
    }
    fn finished(a: &Assembled) -> Option<StreamEvent> {
        let finish_reason = a.finish_reason.clone()?;
        let tool_calls = openai::tool_calls_of(&a.message()).ok()?;
        Some(StreamEvent::Finished {
            finish_reason,
            tool_calls,
        })
    }
    let start = Reading {
        body,
        parser: SseParser::default(),
        queue: VecDeque::new(),
        done: false,
        total: 0,
    };
    let stream = futures::stream::unfold(start, move |mut st| {
        let shared = shared.clone();
        async move {
            let lock = || {
                shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            };
            loop {
                if let Some(event) = st.queue.pop_front() {
                    return Some((event, st));
                }
                if st.done {
                    return None;
                }
                let frame = match tokio::time::timeout(timeout, st.body.frame()).await {
                    Ok(f) => f,
                    Err(_) => {
                        st.queue
                            .push_back(Err("the upstream stream stalled".into()));
                        st.done = true;
                        continue;
                    }
                };
                let data = match frame {
                    None => {
                        st.done = true;
                        st.queue.extend(finished(&lock()).map(Ok));
                        continue;
                    }
                    Some(Err(e)) => {
                        st.queue.push_back(Err(Box::new(e)));
                        st.done = true;
                        continue;
                    }
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => data,
                        Err(_) => continue,
                    },
                };
                st.total += data.len();
                if st.total > limit {
                    st.queue
                        .push_back(Err("the upstream stream exceeds its bound".into()));
                    st.done = true;
                    continue;
                }
                let events = match st.parser.feed(&data) {
                    Ok(events) => events,
                    Err(e) => {
                        st.queue.push_back(Err(e.into()));
                        st.done = true;
                        continue;
                    }
                };
                for event in events {
                    if event.trim() == "[DONE]" {
                        st.queue.extend(finished(&lock()).map(Ok));
                        st.done = true;
                        break;
                    }
                    let Ok(chunk) = serde_json::from_str::<Value>(&event) else {
                        st.queue
                            .push_back(Err("an upstream event is not JSON".into()));
                        st.done = true;
                        break;
                    };
                    let text = chunk["choices"][0]["delta"]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    if let Err(e) = lock().add(&chunk) {
                        st.queue.push_back(Err(e.into()));
                        st.done = true;
                        break;
                    }
                    if !text.is_empty() {
                        st.queue.push_back(Ok(StreamEvent::Chunk(text)));
                    }
                }
            }
        }
    });
    Box::pin(stream)
}
