//! The provider-neutral core: one governed request of any [`Api`], end to
//! end. An adapter only translates; everything below is the same for
//! every API.
//!
//! 0. The body is read up to its bound (module `body`, which also shapes
//!    the gateway's own answers), and the request runs as a
//!    flight, in its own task, that a retry of it joins (module `flight`).
//! 1. The body is decoded by the adapter
//!    (`Api::decode_request`, which checks it). A request with a callback
//!    token skips 2–6 and is relayed as it is (module `callback`).
//! 2. The conversation is found or opened (module `session_key`,
//!    `conversation`; an agent session the hooks of this process hold
//!    open is shared instead, `crate::hooks`); its session's
//!    `agent_startup` runs on its first request, with the names of the
//!    request's tools. A continued answer
//!    this instance never served is read back from the upstream and its
//!    history put ahead of the request's entries (module `stored`).
//! 3. Every entry, in order (module `transcript`): one the conversation's
//!    memo proves governed gets what was decided for it (module `memo`);
//!    any other is governed now, each tool result through
//!    `post_tool_call` (after `pre_tool_call` for a call the session never
//!    permitted), each user entry through `input`.
//! 4. `pre_model_call` over the neutral rendering of the entries (module
//!    `render`) and the request's tool declarations (module
//!    `tool_decls`), whose text transforms are written back by index; its
//!    interceptors' released `hookwire` extensions are the overrides and
//!    upstream mutations (module `extension`).
//! 5. The upstream request (module `upstream_request`).
//! 6. The answer: whole, or a stream assembled or mediated (module
//!    `stream`); `post_model_call`, `pre_tool_call` per proposed call and
//!    `output` for a final answer (module `settle`); the adapter writes
//!    what was released in its API's shape.
//!
//! What the steps share about an emission (its deny as the request's
//! error, the `extensions.hookwire` members it carries) is module
//! `emitted`; what a request carries through them, module `governed`; the
//! state every request shares, module `state`.
//!
//! A deny or failure before step 5 forwards nothing upstream. Errors reach
//! the client in the API's own shape (`Api::error_body`). Every request
//! leaves an [`Applied`] entry.

mod body;
mod conversation;
mod emitted;
mod flight;
mod governed;
mod memo;
mod relay;
mod render;
mod session_key;
mod settle;
mod state;
mod stored;
mod stream;
mod tool_decls;
mod transcript;
mod upstream_request;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::header;
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use hookwire::InterceptionPoint;
use serde_json::{Value, json};
use tokio::sync::OwnedMutexGuard;

pub(crate) use body::{error_response, read_body};
use body::{event_stream, passthrough};
pub use conversation::MAX_RESPONSE_IDS;
pub(crate) use conversation::Sessions;
use conversation::{ConvState, Conversation};
use emitted::{denied, hookwire_member};
pub(crate) use flight::Flights;
pub use flight::{MAX_FLIGHTS, MAX_FLIGHTS_PER_CLIENT};
pub(crate) use governed::Governed;
pub(crate) use state::Inner;
use stream::Mediation;
use upstream_request::depth_of;

use crate::api::{Api, ApiRequest, ApiResponse, Entry, EventAssembler, EventWriter};
use crate::applied::Applied;
use crate::callback::{CallbackTokens, Minted};
use crate::error::Error;
use crate::extension::{Asked, NAMESPACE};
use crate::headers::CALLBACK_HEADER;
use crate::principal::Principal;
use crate::upstream;

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

/// What a run answers: in memory, or streamed as it is released.
enum Ran {
    /// The whole response.
    Whole(Response),
    /// A response streamed by the mediation task.
    Live(Response),
}

/// How a governed request continues once the upstream answered.
enum Outcome {
    /// The response is ready.
    Done(Response),
    /// A streamed answer to mediate incrementally.
    Mediate(Mediation),
}

/// The route handler of API `A`: the body is read, and the request runs
/// as a flight a retry of it joins (module `flight`); a callback request
/// (an interceptor's own) runs as it is.
pub(crate) async fn serve<A: Api>(
    State(inner): State<Arc<Inner>>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let bytes = match read_body(body, inner.config.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => return error_response::<A>(&e),
    };
    if headers.contains_key(CALLBACK_HEADER) {
        return match inner.request::<A>(&headers, principal.owner, bytes).await {
            Ok(Ran::Whole(r) | Ran::Live(r)) => r,
            Err(e) => error_response::<A>(&e),
        };
    }
    let key = flight::FlightKey::of(A::NAME, &principal.owner, &bytes);
    let presented = flight::Presented::of(&headers);
    let waiter = match inner.flights.enter(key, principal.owner, presented) {
        Ok(flight::Entered::Joined(w)) => {
            if let Some(m) = &inner.config.metrics {
                m.retry_joined(A::NAME);
            }
            w
        }
        Ok(flight::Entered::Run(f, w)) => {
            let run = inner.clone();
            let job = async move {
                let _release = flight::Release::new(&run.flights, &f);
                let settled = match run.request::<A>(&headers, principal.owner, bytes).await {
                    Ok(Ran::Whole(r)) => flight::Settled::whole(r).await,
                    Ok(Ran::Live(r)) => flight::Settled::live(r),
                    Err(e) => flight::Settled::whole(error_response::<A>(&e)).await,
                };
                run.flights.finish(&f, settled);
            };
            // Its own task: a client that goes away leaves the run (and
            // an approval it waits on) in place for the retry. The run
            // reports to the access line of the request that started it.
            match crate::applied::CURRENT_REQUEST.try_with(Arc::clone) {
                Ok(facts) => tokio::spawn(crate::applied::CURRENT_REQUEST.scope(facts, job)),
                Err(_) => tokio::spawn(job),
            };
            w
        }
        Err(e) => return error_response::<A>(&e),
    };
    match waiter.answer(&inner.flights).await {
        Ok(r) => r,
        Err(e) => error_response::<A>(&e),
    }
}

impl Inner {
    fn request_id(&self) -> String {
        format!("gw-{}", self.next_request.fetch_add(1, Ordering::Relaxed))
    }

    async fn request<A: Api>(
        self: &Arc<Self>,
        headers: &HeaderMap,
        owner: conversation::Owner,
        bytes: Bytes,
    ) -> Result<Ran, Error> {
        let depth = depth_of(headers, self.config.max_depth)?;
        if let Some(token) = headers.get(CALLBACK_HEADER) {
            return self
                .callback::<A>(headers, token, bytes)
                .await
                .map(Ran::Live);
        }
        let mut req = A::decode_request(&bytes)?;
        if let Some(table) = crate::api::mediation_table(A::NAME) {
            crate::api::mediation::check_request(table, &bytes, &self.config.inert_members)?;
        }
        let tools = tool_decls::of(&bytes);
        // The answer a request continues is checked before any session
        // it names is used: only the principal it was returned to may. One
        // this instance never served is read back from the upstream and
        // governed with the request (module `stored`).
        let continued = match req.view().continues.clone() {
            Some(id) => match self.sessions.continued(&id, &owner)? {
                Some(known) if self.sessions.holds(&known) => Some(known),
                // Never served here, or its conversation idled out.
                remembered => {
                    if let Some(items) = self.stored_history::<A>(headers, &owner, &id).await? {
                        req.with_stored(&items.history)?;
                        req.answer_withheld_calls(&stored::unanswered(&items, req.view()))?;
                    }
                    remembered
                }
            },
            None => None,
        };
        if !self.pool.is_empty() {
            req.tag_owner(stored::OWNER_TAG, &stored::owner_tag(&owner))?;
        }
        // An agent session the hooks of this process hold open is shared
        // (`crate::hooks`); any other request is a conversation of its own.
        // Only its owner may join it (`SharedHooks::join`).
        let shared = match &self.config.hooks {
            Some(h) => h.join(headers, &owner, self.config.clients.is_some())?,
            None => None,
        };
        let key = match &shared {
            Some(s) => s.key().to_owned(),
            None => {
                let key = session_key::key(headers, &owner, req.view(), continued)?;
                if let Some(h) = &self.config.hooks
                    && h.host.holds_session(&key)
                {
                    // One session id, one trail: not a second session.
                    return Err(Error::BadRequest(format!(
                        "{key} is an agent session its hooks hold; its model requests name it in the agent's own header"
                    )));
                }
                key
            }
        };
        let conversation::Entered {
            conv,
            opened,
            mut state,
        } = self
            .sessions
            .get_or_open(&self.host, &key, owner, shared)
            .await?;
        // The hooks' events of a shared session wait for this request.
        let held = match &conv.shared {
            Some(s) => Some(s.hold().await),
            None => None,
        };
        if conv.session.is_closed() || !self.sessions.is_current(&key, &conv) {
            self.sessions.forget(&key, &conv);
            return Err(Error::BadRequest(
                "the session was ended; retry to open a new one".into(),
            ));
        }
        let request_id = self.request_id();
        let minted = if depth < self.config.max_depth {
            self.tokens.mint(&key, depth + 1, &self.callback_bindings)
        } else {
            None
        };
        let extensions = minted.as_ref().map(|m| {
            json!({NAMESPACE: {"callback": {
                "token": m.token,
                "base_url": self.callback_base.get().cloned().unwrap_or_default(),
                "header": CALLBACK_HEADER,
                "depth": m.depth,
                "expires_in_ms": u64::try_from(self.tokens.ttl().as_millis()).unwrap_or(u64::MAX),
            }}})
        });
        let mut revoke = Revoke {
            tokens: &self.tokens,
            minted,
        };
        let mut g = Governed {
            inner: self,
            conv: &conv,
            key: key.clone(),
            request_id: request_id.clone(),
            extensions,
            applied: Applied {
                session: key.clone(),
                request_id,
                depth,
                ..Applied::default()
            },
        };
        let result = match self
            .govern::<A>(&mut g, &mut state, headers, req, tools)
            .await
        {
            Ok(Outcome::Done(r)) => Ok(Ran::Whole(r)),
            Ok(Outcome::Mediate(job)) => {
                // Streamed as released: the session, its state and the
                // callback token go with the stream.
                let carried = (g.key, g.request_id, g.extensions, g.applied);
                let minted = revoke.minted.take();
                return Ok(Ran::Live(self.spawn_mediation::<A>(
                    conv.clone(),
                    (state, held),
                    job,
                    carried,
                    minted,
                )));
            }
            Err(e) => Err(e),
        };
        if result.is_err() && conv.session.is_turn_open() {
            // The turn stops here without an output (§3.1 rule 3).
            conv.session.end_turn();
        }
        self.sessions.touch(&conv);
        g.applied.outcome = match &result {
            Ok(_) if g.applied.outcome.is_empty() => "forwarded".into(),
            Ok(_) => g.applied.outcome.clone(),
            Err(Error::Denied { point, .. }) => format!("denied:{point}"),
            Err(e) => format!("failed:{}", e.status().as_u16()),
        };
        let failed = result.is_err() || g.applied.outcome.starts_with("upstream_error:");
        self.applied.push(g.applied);
        drop(held);
        if opened && failed {
            // A failing request (refused, denied, or one the upstream
            // would not serve, e.g. an unknown key) holds no slot.
            drop(state);
            if self.sessions.forget(&key, &conv) {
                conv.close(hookwire_client::ShutdownReason::Error).await;
            }
        }
        result
    }

    /// `agent_startup` on a conversation's first request; a denied one
    /// refuses every request of the conversation.
    async fn startup(&self, g: &Governed<'_>, tools: &[String]) -> Result<(), Error> {
        let session = &g.conv.session;
        if !session.is_started() {
            let e = session.start(tools.iter().cloned()).await?;
            if !e.proceeds() {
                return Err(denied(&e));
            }
        }
        match session.startup_denial() {
            Some(reason) => Err(Error::Denied {
                point: InterceptionPoint::AgentStartup,
                reason,
                message: None,
            }),
            None => Ok(()),
        }
    }

    /// Steps 2–6 of the module docs.
    async fn govern<A: Api>(
        &self,
        g: &mut Governed<'_>,
        state: &mut ConvState,
        headers: &HeaderMap,
        mut req: A::Request,
        tools: Vec<Value>,
    ) -> Result<Outcome, Error> {
        self.startup(g, &req.view().tools).await?;
        if let Some(previous) = req.view().continues.clone() {
            // The upstream stores the answer it gave, calls the chain
            // removed included: each gets its blocked result.
            req.answer_withheld_calls(&self.sessions.removed_calls(&previous))?;
        }
        let model = req.view().model.clone();
        let mut entries: Vec<Entry> = req.view().entries.clone();
        transcript::govern::<A>(g, state, &mut req, &mut entries).await?;

        // pre_model_call over the neutral rendering.
        let rendered = render::render(&entries);
        let mut extra = g.extra(&state.labels, InterceptionPoint::PreModelCall);
        if let Some(parts) = &rendered.content_parts {
            hookwire_member(&mut extra, "content_parts", parts.clone());
        }
        let tools = Value::Array(tools);
        if tools.as_array().is_some_and(|t| !t.is_empty()) {
            extra.insert("tools".into(), tools.clone());
        }
        let pre = g
            .conv
            .session
            .pre_model_call_with(&model, rendered.messages.clone(), extra)
            .await?;
        if !pre.proceeds() {
            return Err(denied(&pre));
        }
        // Only what the host released: enforce mode, a permitting own
        // verdict, inside the binding's effect grant.
        let asked = Asked::from_extensions(pre.response_extensions())?;
        if pre.context().get("tools").is_some_and(|t| t != &tools) {
            return Err(Error::Transform(
                "a transform changed pre_model_call's tools, which the gateway cannot write back"
                    .into(),
            ));
        }
        match pre.context().get("messages") {
            Some(after) if after == &rendered.messages => {}
            Some(after) => {
                for (i, rewrite) in render::write_back(&rendered, after, &entries)? {
                    req.rewrite(i, rewrite)?;
                }
            }
            None => {
                return Err(Error::Transform(
                    "a transform removed pre_model_call's messages".into(),
                ));
            }
        }
        let stream = req.view().stream;
        let (up_headers, up_body) =
            upstream_request::build::<A>(g, &self.pool, headers, req, &asked)?;

        // The upstream.
        let resp = self
            .upstream
            .send(Method::POST, A::UPSTREAM_PATH, up_headers, up_body)
            .await?;
        let status = resp.status();
        g.applied.upstream_status = Some(status.as_u16());
        let content_type = resp.headers().get(header::CONTENT_TYPE).cloned();
        if !status.is_success() {
            // The upstream's errors pass through as they are.
            let body = self.collect(resp.into_body()).await?;
            if g.conv.session.is_turn_open() {
                g.conv.session.end_turn();
            }
            g.applied.outcome = format!("upstream_error:{}", status.as_u16());
            return Ok(Outcome::Done(passthrough(status, content_type, body)));
        }
        if stream && self.config.incremental_output {
            return Ok(Outcome::Mediate(Mediation {
                body: resp.into_body(),
                model,
            }));
        }
        let (response, assembled) = if stream {
            let a = stream::read_all::<A>(
                resp.into_body(),
                self.config.max_upstream_bytes,
                self.config.upstream_timeout,
            )
            .await?;
            (stream::finished::<A>(&a)?, Some(a))
        } else {
            let body = self.collect(resp.into_body()).await?;
            (A::decode_response(&body)?, None)
        };
        let answer = (response.answer()?, response.other_outputs());
        let upstream_text = settle::text_of(&answer.0.content);
        let released = settle::post_model(g, state, &model, answer).await?;
        let settled = settle::settle(g, state, released, &upstream_text).await?;
        g.applied.removed = response.removed(&settled);
        if let Some(a) = &assembled {
            g.applied.removed.extend(a.dropped());
        }
        if let Some(id) = response.id() {
            let removed = std::mem::take(&mut state.removed_calls);
            self.sessions
                .remember_response(id, &g.key, g.conv.owner, removed);
        }
        if let Some(a) = assembled {
            let events = A::Writer::replay(&a, &settled);
            let body = Body::from_stream(futures::stream::iter(
                events.into_iter().map(Ok::<_, std::convert::Infallible>),
            ));
            return Ok(Outcome::Done(event_stream(body)));
        }
        let mut answer = response.settle(&settled);
        if let Some(table) = crate::api::mediation_table(A::NAME) {
            let stripped =
                crate::api::mediation::strip_answer(table, &mut answer, &self.config.inert_members);
            g.applied.removed.extend(stripped);
        }
        Ok(Outcome::Done(axum::Json(answer).into_response()))
    }

    /// Starts incremental mediation in its own task and returns the event
    /// stream the task writes to.
    fn spawn_mediation<A: Api>(
        self: &Arc<Self>,
        conv: Arc<Conversation>,
        (mut state, held): (OwnedMutexGuard<ConvState>, Option<OwnedMutexGuard<()>>),
        job: Mediation,
        (key, request_id, extensions, applied): (String, String, Option<Value>, Applied),
        minted: Option<Minted>,
    ) -> Response {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(32);
        let inner = self.clone();
        tokio::spawn(async move {
            let _revoke = Revoke {
                tokens: &inner.tokens,
                minted,
            };
            let _held = held;
            let mut g = Governed {
                inner: &inner,
                conv: &conv,
                key,
                request_id,
                extensions,
                applied,
            };
            let result = stream::mediate::<A>(&g, &mut state, job, &tx).await;
            if result.is_err() && conv.session.is_turn_open() {
                conv.session.end_turn();
            }
            g.applied.outcome = match result {
                Ok(stream::Ended {
                    outcome,
                    id,
                    removed,
                }) => {
                    if let Some(id) = id {
                        let calls = std::mem::take(&mut state.removed_calls);
                        inner
                            .sessions
                            .remember_response(id, &g.key, g.conv.owner, calls);
                    }
                    g.applied.removed = removed;
                    outcome
                }
                Err(e) => format!("failed:{}", e.status().as_u16()),
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

    async fn collect(&self, body: hyper::body::Incoming) -> Result<Bytes, Error> {
        upstream::collect(
            body,
            self.config.max_upstream_bytes,
            self.config.upstream_timeout,
        )
        .await
    }
}
