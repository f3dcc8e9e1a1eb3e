//! A continued answer this instance never served — Responses
//! `previous_response_id` after a restart, an idle-out, or on another
//! replica — has its history at the upstream, not here. It is read back
//! from there (the answer, for its output and its owner; the items it was
//! made from, earlier turns included) and governed whole, ahead of the
//! request's own items, as a replayed history is (module `transcript`):
//! each user entry an `input`, each tool call its `pre_tool_call` and its
//! result a `post_tool_call`. So any replica serves any turn, and a tool
//! output answering a call another replica proposed is governed, not
//! refused as unpaired.
//!
//! Ownership: with a key pool every client spends the pool's key, so the
//! upstream cannot tell whose answer it is. Each answer made through the
//! pool therefore carries the owner's tag in its `metadata`
//! ([`OWNER_TAG`], a digest of the principal), and a continued answer is
//! read back only when its tag is the requester's. Without a pool the
//! client's own key reads it back, and the upstream scopes it to that key.

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use bytes::Bytes;
use serde_json::Value;

use super::settle::blocked_result;
use super::state::Inner;
use super::upstream_request;
use crate::api::{Api, Entry, TurnRequest};
use crate::bounds::MAX_MESSAGES;
use crate::error::Error;
use crate::principal::Owner;
use crate::upstream::collect;

/// The `metadata` key of the owner's tag on every answer made with a
/// pooled key.
pub(crate) const OWNER_TAG: &str = "hookwire_owner";

/// The most items one page of `input_items` holds (the API's maximum).
const PAGE: usize = 100;

/// The tag of `owner`'s answers: 32 hex digits of its digest.
pub(crate) fn owner_tag(owner: &Owner) -> String {
    hex::encode(&owner[..16])
}

/// The headers a client sends the upstream beside its key: they scope
/// the key (organisation, project) and so which answers it may read.
const SCOPE_HEADERS: [&str; 2] = ["openai-organization", "openai-project"];

/// A continued conversation as the upstream stores it.
pub(crate) struct Stored {
    /// Its items, oldest first: what the answer was made from, then the
    /// answer's output.
    pub(crate) history: Vec<Value>,
    /// The calls the answer proposed (`call_id`s).
    answer_calls: Vec<String>,
}

/// The calls of the continued answer the request gives no output for,
/// each answered with the blocked notice: the upstream wants an output
/// for every call, and a call the client was never given (the chain that
/// served the answer removed it) or did not run has none.
pub(crate) fn unanswered(stored: &Stored, view: &TurnRequest) -> Vec<(String, String)> {
    stored
        .answer_calls
        .iter()
        .filter(|id| {
            !view
                .entries
                .iter()
                .any(|e| matches!(e, Entry::ToolResult { call_id, .. } if call_id == *id))
        })
        .map(|id| {
            let text = blocked_result(
                hookwire::InterceptionPoint::PreToolCall,
                Some("hookwire:call_not_answered"),
                Some("the call was not run"),
            );
            (id.clone(), text)
        })
        .collect()
}

fn unknown(why: &str) -> Error {
    Error::Denied {
        point: hookwire::InterceptionPoint::AgentStartup,
        reason: "hookwire:previous_response_unknown".into(),
        message: Some(why.to_owned()),
    }
}

impl Inner {
    /// The items of the conversation answer `id` ended, oldest first:
    /// the items it was made from, then its output. Refused when (with a
    /// pool) the upstream does not know the answer or it is not `owner`'s,
    /// or when the history exceeds the gateway's bound. `None` when,
    /// with the client's own key, the upstream does not know it: the
    /// request then goes up as it is, for the upstream's own refusal
    /// (there is no stored history to govern; an output in it answers a
    /// call nowhere, and becomes the blocked notice).
    pub(super) async fn stored_history<A: Api>(
        &self,
        client: &HeaderMap,
        owner: &Owner,
        id: &str,
    ) -> Result<Option<Stored>, Error> {
        let Some((answer_path, items_path)) = A::stored_paths(id) else {
            return Err(unknown("this API keeps no answers to continue"));
        };
        if !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(unknown("not a response id"));
        }
        let answer = match self.fetch::<A>(client, &answer_path).await {
            Err(Error::UpstreamRefused { status, .. }) if status == StatusCode::NOT_FOUND => {
                return Ok(None);
            }
            other => other?,
        };
        if !self.pool.is_empty() {
            let tag = answer
                .get("metadata")
                .and_then(|m| m.get(OWNER_TAG))
                .and_then(Value::as_str);
            if tag != Some(owner_tag(owner).as_str()) {
                return Err(Error::Denied {
                    point: hookwire::InterceptionPoint::AgentStartup,
                    reason: "hookwire:response_owned_by_another_client".into(),
                    message: None,
                });
            }
        }
        let mut items: Vec<Value> = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut path = format!("{items_path}?order=asc&limit={PAGE}");
            if let Some(a) = &after {
                path.push_str("&after=");
                path.push_str(a);
            }
            let page = self.fetch::<A>(client, &path).await?;
            let data = page
                .get("data")
                .and_then(Value::as_array)
                .ok_or_else(|| Error::UpstreamResponse("input items without data".into()))?;
            items.extend(data.iter().cloned());
            if items.len() > MAX_MESSAGES {
                return Err(Error::BadRequest(format!(
                    "the continued conversation holds more than {MAX_MESSAGES} items; the \
                     gateway governs at most that many"
                )));
            }
            let more = page.get("has_more").and_then(Value::as_bool) == Some(true);
            let last = page.get("last_id").and_then(Value::as_str);
            match (more, last) {
                (true, Some(l)) if !data.is_empty() && after.as_deref() != Some(l) => {
                    after = Some(l.to_owned());
                }
                (true, _) => {
                    return Err(Error::UpstreamResponse(
                        "input items say there is more but give no cursor".into(),
                    ));
                }
                (false, _) => break,
            }
        }
        let output = answer
            .get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let answer_calls = output
            .iter()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call" | "custom_tool_call")
                )
            })
            .filter_map(|i| i["call_id"].as_str().map(str::to_owned))
            .collect();
        items.extend(output);
        Ok(Some(Stored {
            history: items,
            answer_calls,
        }))
    }

    /// `GET path` at the upstream with the credential this request would
    /// use; its JSON answer, bounded.
    async fn fetch<A: Api>(&self, client: &HeaderMap, path: &str) -> Result<Value, Error> {
        let mut headers = HeaderMap::new();
        for name in SCOPE_HEADERS {
            if let Some(v) = client.get(name) {
                headers.insert(HeaderName::from_static(name), v.clone());
            }
        }
        match self.pool.choose(None).map_err(Error::Config)? {
            Some(c) => upstream_request::attach::<A>(&mut headers, &c),
            None => {
                for name in ["authorization", "x-api-key"] {
                    if let Some(v) = client.get(name) {
                        headers.insert(HeaderName::from_static(name), v.clone());
                    }
                }
            }
        }
        headers.insert(
            axum::http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        let resp = self
            .upstream
            .send(Method::GET, path, headers, Bytes::new())
            .await?;
        let status = resp.status();
        let body = collect(
            resp.into_body(),
            self.config.max_upstream_bytes,
            self.config.upstream_timeout,
        )
        .await?;
        if !status.is_success() && self.pool.is_empty() {
            // The client's own key was refused, or the answer is unknown
            // to it: the upstream's own error, as on a forwarded request.
            if let Ok(body) = serde_json::from_slice::<Value>(&body) {
                return Err(Error::UpstreamRefused { status, body });
            }
        }
        if status == StatusCode::NOT_FOUND {
            return Err(unknown("the upstream does not know the answer continued"));
        }
        if !status.is_success() {
            return Err(Error::Upstream(format!(
                "reading the continued answer back: status {}",
                status.as_u16()
            )));
        }
        serde_json::from_slice(&body)
            .map_err(|_| Error::UpstreamResponse("a stored answer that is not JSON".into()))
    }
}
