//! A stateless (2026-07-28) `tools/call` that outlasts the hold: the
//! governed call runs on in the proxy, and the client is answered the
//! revision's `input_required` with only a `requestState`, a random name
//! for the parked call. The client sends the same call back with that
//! state (the SDKs do, with a backoff) and gets the answer once it
//! exists: an approval can take minutes without a connection held open.
//!
//! A state is bound to its session (one per client credential, so
//! another client cannot collect it) and to the call's tool and
//! arguments (so an approved call cannot be swapped for another); an
//! unknown, foreign or expired state is refused, never forwarded. Parked
//! calls are bounded like requests in flight, expire after the idle
//! timeout, and are cancelled (their pending emission dropped and
//! recorded) when the session ends.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::state::{McpSession, Outcome, Parked};
use crate::core::stateless as sl;
use crate::core::{self};
use crate::jsonrpc::{self, Id};

impl McpSession {
    /// Governs a stateless `tools/call`: a new one starts and is held for
    /// the hold; a retry carrying a `requestState` collects its parked
    /// call. Either is answered with the outcome or, while there is none,
    /// with `input_required` naming the parked call.
    pub(super) async fn parked_call(self: &Arc<Self>, id: &Id, params: Value) -> Option<Value> {
        let invalid = |m: &str| {
            Some(jsonrpc::error_response(
                Some(id),
                jsonrpc::INVALID_PARAMS,
                m,
            ))
        };
        let p = match core::call_params(&params) {
            Ok(p) => p,
            Err(e) => {
                self.count("request", "malformed");
                return invalid(&e);
            }
        };
        let digest = sl::call_digest(&p.name, &p.arguments);
        let (state, mut outcome) = match sl::request_state(&params) {
            Some(state) => {
                let Some(state) = state.as_str() else {
                    return invalid("requestState is not a string");
                };
                let mut st = self.state();
                match st.parked.get_mut(state) {
                    None => {
                        return invalid(
                            "unknown or expired requestState: call the tool again without it",
                        );
                    }
                    Some(parked) if parked.digest != digest => {
                        drop(st);
                        tracing::warn!(target: "hookwire_mcp::access", session = %self.key, "mcp call refused: a requestState presented with another call");
                        return invalid("this requestState belongs to another call");
                    }
                    Some(parked) => {
                        parked.since = Instant::now();
                        (state.to_owned(), parked.outcome.clone())
                    }
                }
            }
            None => match self.park(id, params, digest) {
                Ok(parked) => parked,
                Err(refusal) => return Some(refusal),
            },
        };
        let hold = self.config.input_required_after;
        match tokio::time::timeout(hold, outcome.wait_for(Option::is_some)).await {
            Ok(done) => {
                let o = done.ok().and_then(|o| o.clone()).flatten();
                self.state().parked.remove(&state);
                Some(match o {
                    Some(Ok(result)) => jsonrpc::result_response(id, sl::complete(result)),
                    Some(Err(error)) => {
                        json!({"jsonrpc": "2.0", "id": id.to_value(), "error": error})
                    }
                    None => jsonrpc::error_response(
                        Some(id),
                        jsonrpc::UPSTREAM_FAILED,
                        "the call was cancelled (the session is ending)",
                    ),
                })
            }
            Err(_) => Some(jsonrpc::result_response(id, sl::parked_answer(&state))),
        }
    }

    /// Starts a new call on its own task and parks it under a new state.
    fn park(
        self: &Arc<Self>,
        id: &Id,
        params: Value,
        digest: String,
    ) -> Result<(String, watch::Receiver<Option<Outcome>>), Value> {
        let state = crate::ids::random_id().map_err(|e| {
            jsonrpc::error_response(Some(id), jsonrpc::UPSTREAM_FAILED, e.to_string())
        })?;
        let (cancel, cancelled) = watch::channel(false);
        let (done, outcome) = watch::channel(None);
        {
            let mut st = self.state();
            let idle = self.config.idle_timeout;
            st.parked.retain(|_, p| {
                let keep = p.since.elapsed() < idle;
                if !keep {
                    p.cancel();
                }
                keep
            });
            if st.parked.len() >= self.config.max_in_flight {
                drop(st);
                self.count("request", "refused");
                return Err(jsonrpc::error_response(
                    Some(id),
                    jsonrpc::OVERLOADED,
                    format!(
                        "{} calls are parked in this session: collect them first",
                        self.config.max_in_flight
                    ),
                ));
            }
            st.parked.insert(
                state.clone(),
                Parked {
                    digest,
                    outcome: outcome.clone(),
                    cancel,
                    since: Instant::now(),
                },
            );
        }
        let s = self.clone();
        let id = id.clone();
        tokio::spawn(async move {
            let answer = s.tools_call(&id, params, cancelled).await;
            let o = answer.map(|mut a| match a.get_mut("error") {
                Some(e) => Err(e.take()),
                None => Ok(a.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
            });
            done.send_replace(Some(o));
        });
        Ok((state, outcome))
    }
}
