//! A session's start: the protocol version checked (only one the proxy
//! mediates is forwarded, and only one it mediates is accepted back), the
//! client's `initialize` sent upstream (without the capabilities the
//! proxy refuses), `notifications/initialized`, every
//! page of the upstream's `tools/list` (bounded), then `agent_startup`
//! with the tool names; any failure ends the session.

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError};

use hookwire_client::ShutdownReason;
use serde_json::{Value, json};

use super::state::McpSession;
use crate::core::{self, MAX_TOOL_PAGES, MAX_TOOLS};
use crate::jsonrpc::{self, Id, Message};
use crate::upstream::Failure;

impl McpSession {
    /// `initialize`: the upstream's, its tool list, then `agent_startup`.
    pub(super) async fn initialize(self: &Arc<Self>, id: &Id, params: &Value) -> Value {
        let fail = |f: &Failure| jsonrpc::error_response(Some(id), f.code(), f.to_string());
        // Nothing is sent upstream yet: the client may initialize again
        // with a version from the error's list.
        if let Err(error) = core::negotiate(params) {
            return json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error});
        }
        let answer = match self
            .link
            .request("initialize", core::forwarded_initialize(params))
            .await
        {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => {
                self.end(ShutdownReason::Error).await;
                return json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error});
            }
            Err(f) => {
                self.end(ShutdownReason::Error).await;
                return fail(&f);
            }
        };
        if let Err(why) = core::negotiated(&answer) {
            self.end(ShutdownReason::Error).await;
            return jsonrpc::error_response(Some(id), jsonrpc::UPSTREAM_FAILED, why);
        }
        let started = async {
            self.link
                .send(Message::Notification {
                    method: "notifications/initialized".into(),
                    params: Value::Null,
                })
                .await?;
            self.list_tools(None).await
        };
        let tools = match started.await {
            Ok(tools) => tools,
            Err(f) => {
                self.end(ShutdownReason::Error).await;
                return fail(&f);
            }
        };
        match self.hw.start(tools.iter().cloned()).await {
            Ok(e) if e.proceeds() => {
                *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = tools;
                self.state().initialized = true;
                jsonrpc::result_response(id, core::offered_initialize(&answer))
            }
            Ok(e) => {
                let reason = e.reason().unwrap_or("no reason given").to_owned();
                self.end(ShutdownReason::Error).await;
                jsonrpc::error_response(
                    Some(id),
                    jsonrpc::SESSION_DENIED,
                    format!("hookwire: agent_startup denied: {reason}"),
                )
            }
            Err(e) => {
                self.end(ShutdownReason::Error).await;
                jsonrpc::error_response(
                    Some(id),
                    jsonrpc::SESSION_DENIED,
                    format!("hookwire: agent_startup failed closed: {e}"),
                )
            }
        }
    }

    /// Every page of the upstream's `tools/list`, bounded; with the
    /// stateless envelope of `stateless` when it names a version.
    pub(super) async fn list_tools(
        &self,
        stateless: Option<&str>,
    ) -> Result<BTreeSet<String>, Failure> {
        let mut names = BTreeSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let mut params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            if let Some(v) = stateless {
                params["_meta"] = core::stateless::own_meta(v);
            }
            let result = match self.link.request("tools/list", params).await? {
                Ok(r) => r,
                Err(e) => {
                    return Err(Failure::Failed(format!(
                        "the upstream refused tools/list: {}",
                        e.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("no message")
                    )));
                }
            };
            let (page, next) = core::tool_page(&result).map_err(Failure::Failed)?;
            names.extend(page);
            if names.len() > MAX_TOOLS {
                return Err(Failure::Failed(format!(
                    "the upstream lists more than {MAX_TOOLS} tools"
                )));
            }
            match next {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(names),
            }
        }
        Err(Failure::Failed(format!(
            "the upstream's tools/list has more than {MAX_TOOL_PAGES} pages"
        )))
    }
}
