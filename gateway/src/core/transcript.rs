//! The transcript a request carries, governed whole: nothing in it is
//! trusted from memory.
//!
//! A client sends its whole history with every request (Chat Completions,
//! Messages; Responses too unless it continues from an answer id), and any
//! entry of it may be one this gateway never governed: the conversation
//! idled out, the gateway restarted, another replica served the turn
//! before, or the client made the history up. So every entry is, in
//! order, either proven governed — the conversation's memo (module `memo`)
//! holds what its chain decided for this exact entry after this exact
//! history: released, rewritten (the rewrite goes upstream again) or
//! denied (the request is refused again) — or governed now:
//! - a user entry is an `input` (a deny refuses the request and is
//!   remembered; a transform rewrites the entry); a user entry while a
//!   turn is open ends that turn first;
//! - a tool result is a `post_tool_call` of the call the session holds
//!   open under its id; a call the session never permitted is taken from
//!   the history before the result and governed now, `pre_tool_call`
//!   then `post_tool_call`; a result whose call is nowhere, or that no
//!   permitted turn covers, becomes the blocked notice, never forwarded
//!   ungoverned;
//! - instructions and model turns are no point of their own: they reach
//!   the chain at `pre_model_call`, and a model turn's calls with the
//!   results that answer them.
//!
//! In an agent session shared with the hooks of the same process
//! (`crate::hooks`), a user entry is no `input` of the gateway's (the
//! agent's prompt event was), and a tool result a hook decided gets that
//! decision.
//!
//! With nothing that opens a turn (a retry), the last user entry's `input`
//! is emitted again. A request that continues from an answer id carries
//! new entries only; their addresses start from that id.

use hookwire_client::{InputRole, ToolCall, ToolResult};
use hookwire_hooks::DecidedResult;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::conversation::ConvState;
use super::emitted::{denied, hookwire_member};
use super::governed::Governed;
use super::memo::EntryDigest;
use super::memo::{self, Decided};
use super::settle::blocked_result;
use crate::api::{Api, ApiRequest, Entry, Rewrite, Text};
use crate::error::Error;
use hookwire::InterceptionPoint;
use hookwire::notice_message;

/// The digest of an entry: its kind and everything the client sent in it.
pub(crate) fn digest(entry: &Entry) -> EntryDigest {
    let mut h = Sha256::new();
    let text = |h: &mut Sha256, t: &Text| {
        h.update(t.text.len().to_le_bytes());
        h.update(t.text.as_bytes());
        for p in &t.other_parts {
            h.update(p.len().to_le_bytes());
            h.update(p.as_bytes());
        }
    };
    match entry {
        Entry::Instructions(t) => {
            h.update(b"i");
            text(&mut h, t);
        }
        Entry::User(t) => {
            h.update(b"u");
            text(&mut h, t);
        }
        Entry::Assistant {
            text: t,
            tool_calls,
        } => {
            h.update(b"a");
            text(&mut h, t);
            for c in tool_calls {
                h.update(c.id.as_bytes());
                h.update([0]);
                h.update(c.name.as_bytes());
                h.update([0]);
                h.update(c.args.to_string().as_bytes());
            }
        }
        Entry::ToolResult {
            call_id,
            result,
            is_error,
        } => {
            h.update(b"t");
            h.update(call_id.as_bytes());
            h.update([0, u8::from(*is_error)]);
            h.update(result.to_string().as_bytes());
        }
        Entry::Other(kind) => {
            h.update(b"o");
            h.update(kind.as_bytes());
        }
    }
    h.finalize().into()
}

/// Writes a rewrite into the core's own copy of an entry (what
/// `pre_model_call` then renders).
pub(crate) fn apply(entry: &mut Entry, rewrite: &Rewrite) {
    match (entry, rewrite) {
        (
            Entry::Instructions(t) | Entry::User(t) | Entry::Assistant { text: t, .. },
            Rewrite::Text(text),
        ) => t.text = text.clone(),
        (
            Entry::ToolResult {
                result, is_error, ..
            },
            Rewrite::ToolResult { text, is_error: e },
        ) => {
            *result = Value::from(text.clone());
            *is_error = *e;
        }
        _ => {}
    }
}

/// The index of the last user entry.
pub(crate) fn last_user(entries: &[Entry]) -> Option<usize> {
    entries.iter().rposition(|e| matches!(e, Entry::User(_)))
}

/// Governs every entry of `req` (see the module docs), keeping `entries`
/// (the core's copy) and the request in step: each entry the memo proves
/// governed gets what was decided for it, every other one is governed
/// now, in order.
pub(crate) async fn govern<A: Api>(
    g: &Governed<'_>,
    state: &mut ConvState,
    req: &mut A::Request,
    entries: &mut [Entry],
) -> Result<(), Error> {
    let session = &g.conv.session;
    let digests: Vec<EntryDigest> = entries.iter().map(digest).collect();
    let origin = req.view().continues.clone();
    let addresses = memo::addresses(origin.as_deref(), &digests);
    let user = last_user(entries);
    for i in 0..entries.len() {
        let at = addresses[i];
        match state.memo.get(&at).cloned() {
            Some(Decided::Released) => continue,
            Some(Decided::Rewritten(rewrite)) => {
                apply(&mut entries[i], &rewrite);
                req.rewrite(i, rewrite)?;
                continue;
            }
            Some(Decided::Denied {
                point,
                reason,
                message,
            }) => {
                return Err(Error::Denied {
                    point,
                    reason,
                    message,
                });
            }
            None => {}
        }
        let rewrite = match entries[i].clone() {
            Entry::ToolResult {
                call_id,
                result,
                is_error,
            } => match hooked_result(g, &call_id) {
                // A hook of the shared agent session decided it already.
                Some(decided) => decided,
                None => {
                    let sent = ToolResult {
                        value: result,
                        is_error,
                    };
                    tool_result(g, state, &entries[..i], &call_id, &sent).await?
                }
            },
            // In a shared agent session the agent's prompt event governed
            // the user's words (`crate::hooks`).
            Entry::User(_) if g.conv.shared.is_some() => continue,
            Entry::User(text) => {
                if session.is_turn_open() {
                    // A new user entry begins a new turn; the one before
                    // ended without an output.
                    session.end_turn();
                }
                input(g, state, &text, (at, digests[i])).await?
            }
            // Instructions and model turns are no point of their own: they
            // are rendered at `pre_model_call`, and a model turn's calls
            // are governed with the results that answer them.
            _ => continue,
        };
        decide::<A>(state, req, entries, (i, at), rewrite)?;
    }
    if !session.is_turn_open() {
        // A retry (or a request with nothing new): the turn the last
        // user entry began is emitted again, over what goes upstream.
        let Some(i) = user else {
            return Err(Error::BadRequest(
                "the request carries no user message to begin a turn".into(),
            ));
        };
        let Entry::User(text) = entries[i].clone() else {
            return Err(Error::BadRequest("the last user message moved".into()));
        };
        if let Some(rewrite) = input(g, state, &text, (addresses[i], digests[i])).await? {
            decide::<A>(state, req, entries, (i, addresses[i]), Some(rewrite))?;
        }
    }
    Ok(())
}

/// Remembers what the chain decided for entry `i` (at address `at`) and,
/// for a rewrite, writes it into the core's copy and the request.
fn decide<A: Api>(
    state: &mut ConvState,
    req: &mut A::Request,
    entries: &mut [Entry],
    (i, at): (usize, EntryDigest),
    rewrite: Option<Rewrite>,
) -> Result<(), Error> {
    let Some(rewrite) = rewrite else {
        state.memo.put(at, Decided::Released);
        return Ok(());
    };
    apply(&mut entries[i], &rewrite);
    req.rewrite(i, rewrite.clone())?;
    state.memo.put(at, Decided::Rewritten(rewrite));
    Ok(())
}

/// One `input` over a user entry's text; a permitting verdict opens the
/// turn, and a target that changed the text rewrites it. A deny is
/// remembered at the entry's address (`at`), unless the host failed
/// (a `host_error:*` is no decision about the entry).
async fn input(
    g: &Governed<'_>,
    state: &mut ConvState,
    text: &Text,
    (at, digest): (EntryDigest, EntryDigest),
) -> Result<Option<Rewrite>, Error> {
    let mut extra = g.extra(&state.labels, InterceptionPoint::Input);
    if !text.other_parts.is_empty() {
        hookwire_member(
            &mut extra,
            "content_parts",
            Value::from(text.other_parts.clone()),
        );
    }
    let e = g
        .conv
        .session
        .input_with(Value::from(text.text.clone()), InputRole::User, extra)
        .await?;
    if !e.proceeds() {
        let reason = e.reason().unwrap_or("denied");
        if !reason.starts_with("host_error:") {
            state.memo.put(
                at,
                Decided::Denied {
                    point: InterceptionPoint::Input,
                    reason: reason.to_owned(),
                    message: notice_message(e.verdict().message.as_deref()),
                },
            );
        }
        return Err(denied(&e));
    }
    let content = match e.target().map(|t| t.get("content")) {
        None | Some(None) => return Ok(None),
        Some(Some(Value::String(s))) => s.clone(),
        Some(Some(_)) => {
            return Err(Error::Transform(
                "an input transform left the content something other than text".into(),
            ));
        }
    };
    state
        .labels
        .persist(&e, &hex::encode(digest), &Value::from(content.clone()));
    Ok((content != text.text).then_some(Rewrite::Text(content)))
}

/// The blocked notice a tool result becomes.
fn blocked(
    point: InterceptionPoint,
    reason: Option<&str>,
    message: Option<&str>,
) -> Option<Rewrite> {
    Some(Rewrite::ToolResult {
        text: blocked_result(point, reason, message),
        is_error: true,
    })
}

/// What a hook of the shared agent session decided for the result of
/// call `call_id` (`crate::hooks`): `Some(None)` released as it is,
/// `Some(notice)` withheld; `None` when no hook decided it.
fn hooked_result(g: &Governed<'_>, call_id: &str) -> Option<Option<Rewrite>> {
    match g.conv.shared.as_ref()?.decided_result(call_id)? {
        DecidedResult::Released => Some(None),
        DecidedResult::Withheld { reason, message } => Some(blocked(
            InterceptionPoint::PostToolCall,
            Some(&reason),
            message.as_deref(),
        )),
    }
}

/// The call a tool result answers, as the history before it proposed it
/// (the latest model turn that did).
fn call_in_history(history: &[Entry], call_id: &str) -> Option<ToolCall> {
    history.iter().rev().find_map(|e| match e {
        Entry::Assistant { tool_calls, .. } => tool_calls.iter().find(|c| c.id == call_id).cloned(),
        _ => None,
    })
}

/// One tool result: a `post_tool_call` of the call the session holds
/// open under its id; a call this session never permitted (another
/// replica proposed it, the gateway restarted, or the history is made
/// up) is governed now, `pre_tool_call` over the call as `history`
/// carries it, then `post_tool_call`. What the model sees instead when
/// the chain changed or withheld it; the blocked notice when the call is
/// nowhere to be found, outside a turn, denied, or permitted only with
/// other arguments than the ones the tool ran with.
async fn tool_result(
    g: &Governed<'_>,
    state: &mut ConvState,
    history: &[Entry],
    call_id: &str,
    sent: &ToolResult,
) -> Result<Option<Rewrite>, Error> {
    use InterceptionPoint::{PostToolCall, PreToolCall};
    let session = &g.conv.session;
    let call = match session.open_tool_call(call_id) {
        Some(call) => call,
        None => {
            let Some(call) = call_in_history(history, call_id) else {
                return Ok(blocked(
                    PostToolCall,
                    Some("hookwire:unpaired_tool_result"),
                    None,
                ));
            };
            if !session.is_turn_open() {
                // No input governed a turn for it (a history that opens
                // with a tool result).
                return Ok(blocked(
                    PostToolCall,
                    Some("hookwire:unpaired_tool_result"),
                    None,
                ));
            }
            let extra = g.extra(&state.labels, PreToolCall);
            let pre = session.pre_tool_call_with(&call, extra).await?;
            if !pre.proceeds() {
                return Ok(blocked(
                    PreToolCall,
                    pre.reason(),
                    pre.verdict().message.as_deref(),
                ));
            }
            if pre.target().is_some_and(|args| args != &call.args) {
                // The tool ran with arguments the chain would not have
                // let through: its result is not incorporated.
                session
                    .post_tool_call_unavailable(
                        &call,
                        "the tool ran with other arguments than permitted",
                    )
                    .await?;
                return Ok(blocked(
                    PreToolCall,
                    Some("hookwire:tool_call_arguments_changed"),
                    None,
                ));
            }
            call
        }
    };
    let extra = g.extra(&state.labels, PostToolCall);
    let e = session.post_tool_call_with(&call, sent, extra).await?;
    if !e.proceeds() {
        return Ok(blocked(
            PostToolCall,
            e.reason(),
            e.verdict().message.as_deref(),
        ));
    }
    let target = e.target().cloned().unwrap_or(Value::Null);
    state.labels.persist(&e, call_id, &target);
    if target == sent.value {
        return Ok(None);
    }
    let text = match target {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    };
    Ok(Some(Rewrite::ToolResult {
        text,
        is_error: sent.is_error,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(t: &str) -> Entry {
        Entry::User(Text {
            text: t.into(),
            other_parts: Vec::new(),
        })
    }

    #[test]
    fn digests_tell_kinds_and_contents_apart() {
        let a = digest(&user("x"));
        assert_eq!(a, digest(&user("x")));
        assert_ne!(a, digest(&user("y")));
        assert_ne!(
            a,
            digest(&Entry::Instructions(Text {
                text: "x".into(),
                other_parts: Vec::new()
            }))
        );
        let with_image = Entry::User(Text {
            text: "x".into(),
            other_parts: vec!["image_url".into()],
        });
        assert_ne!(a, digest(&with_image));
        let result = |v: Value, e| Entry::ToolResult {
            call_id: "c".into(),
            result: v,
            is_error: e,
        };
        assert_ne!(
            digest(&result("ok".into(), false)),
            digest(&result("ok".into(), true))
        );
    }

    #[test]
    fn rewrites_apply_to_their_kind_only() {
        let mut e = user("a");
        apply(&mut e, &Rewrite::Text("b".into()));
        assert_eq!(e, user("b"));
        apply(
            &mut e,
            &Rewrite::ToolResult {
                text: "x".into(),
                is_error: true,
            },
        );
        assert_eq!(e, user("b"), "a user entry takes no tool result");
        let mut t = Entry::ToolResult {
            call_id: "c".into(),
            result: Value::from(1),
            is_error: false,
        };
        apply(
            &mut t,
            &Rewrite::ToolResult {
                text: "blocked".into(),
                is_error: true,
            },
        );
        assert_eq!(
            t,
            Entry::ToolResult {
                call_id: "c".into(),
                result: Value::from("blocked"),
                is_error: true
            }
        );
    }
}
