//! The transcript a request replays, governed once: which entries are
//! new, what earlier verdicts rewrote in the history (written into the
//! request again), and the `input` and `post_tool_call` of each new entry.
//!
//! A client sends its whole history with every request (Chat Completions,
//! Messages; Responses too unless it continues from an answer id). The
//! gateway remembers how many entries it governed (`seen`) and, for each
//! entry a verdict rewrote (a redacted input, a transformed or blocked
//! tool result), the digest of the entry as the client sent it and the
//! rewrite. On the next request:
//! - a rewritten history entry whose digest still matches goes upstream
//!   rewritten again; one the client changed is governed anew, and so is
//!   everything after it;
//! - each new tool result is a `post_tool_call` of the call the session
//!   holds open under its id (its `pre_tool_call` permitted it); a result
//!   with no open call is replaced by a blocked notice, never forwarded
//!   ungoverned;
//! - each new user entry is an `input` (a deny refuses the request; a
//!   transform rewrites the entry); a new user entry while a turn is open
//!   ends that turn first;
//! - with nothing new that opens a turn (a retry), the last user entry's
//!   `input` is emitted again.
//!
//! A request that continues from an answer id carries new entries only:
//! all of them are new, and the history it does not carry has nothing to
//! rewrite.

use std::collections::HashMap;

use hookwire_client::{InputRole, ToolResult};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::conversation::{ConvState, EntryDigest, Rewritten};
use super::settle::blocked_result;
use super::{Governed, denied, hookwire_member};
use crate::api::{Api, ApiRequest, Entry, Rewrite, Text};
use crate::error::Error;
use hookwire::InterceptionPoint;

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

/// Which entries of a request are new, and which history rewrites go
/// upstream again.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// The first entry governed now.
    pub(crate) start: usize,
    /// Rewrites of earlier entries to write into the request again.
    pub(crate) reapply: Vec<(usize, Rewrite)>,
}

/// The plan for a request whose entries have `digests` (see the module
/// docs): `seen` entries were governed before, `rewrites` are the history
/// rewrites kept, `last_user` the index of the last user entry.
pub(crate) fn plan(
    seen: usize,
    continues: bool,
    rewrites: &HashMap<usize, Rewritten>,
    digests: &[EntryDigest],
    last_user: Option<usize>,
) -> Plan {
    if continues {
        return Plan {
            start: 0,
            reapply: Vec::new(),
        };
    }
    let mut start = if seen > 0 && seen <= digests.len() {
        seen
    } else {
        last_user.unwrap_or(0)
    };
    let mut reapply = Vec::new();
    for (i, d) in digests.iter().enumerate().take(start) {
        if let Some((kept, rewrite)) = rewrites.get(&i) {
            if kept == d {
                reapply.push((i, rewrite.clone()));
            } else {
                start = i;
                break;
            }
        }
    }
    Plan { start, reapply }
}

/// The index of the last user entry.
pub(crate) fn last_user(entries: &[Entry]) -> Option<usize> {
    entries.iter().rposition(|e| matches!(e, Entry::User(_)))
}

/// Governs the new entries of `req` (see the module docs), keeping
/// `entries` (the core's copy) and the request in step.
pub(crate) async fn govern<A: Api>(
    g: &Governed<'_>,
    state: &mut ConvState,
    req: &mut A::Request,
    entries: &mut [Entry],
) -> Result<(), Error> {
    let session = &g.conv.session;
    let digests: Vec<EntryDigest> = entries.iter().map(digest).collect();
    let continues = req.view().continues.is_some();
    let user = last_user(entries);
    let plan = plan(state.seen, continues, &state.rewrites, &digests, user);
    for (i, rewrite) in plan.reapply {
        apply(&mut entries[i], &rewrite);
        req.rewrite(i, rewrite)?;
    }
    let start = plan.start;
    state.rewrites.retain(|i, _| !continues && *i < start);
    for i in start..entries.len() {
        let rewrite = match entries[i].clone() {
            Entry::ToolResult {
                call_id,
                result,
                is_error,
            } => tool_result(g, state, &call_id, &result, is_error).await?,
            Entry::User(text) => {
                if session.is_turn_open() {
                    // A new user entry begins a new turn; the one before
                    // ended without an output.
                    session.end_turn();
                }
                input(g, state, &text, &digests[i]).await?
            }
            _ => None,
        };
        if let Some(rewrite) = rewrite {
            write::<A>(state, req, entries, (i, digests[i]), rewrite)?;
        }
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
        if let Some(rewrite) = input(g, state, &text, &digests[i]).await? {
            write::<A>(state, req, entries, (i, digests[i]), rewrite)?;
        }
    }
    Ok(())
}

/// Writes a verdict's rewrite of entry `i` into the core's copy and the
/// request, and keeps it for the requests that replay the entry.
fn write<A: Api>(
    state: &mut ConvState,
    req: &mut A::Request,
    entries: &mut [Entry],
    (i, sent): (usize, EntryDigest),
    rewrite: Rewrite,
) -> Result<(), Error> {
    apply(&mut entries[i], &rewrite);
    req.rewrite(i, rewrite.clone())?;
    state.rewrites.insert(i, (sent, rewrite));
    Ok(())
}

/// One `input` over a user entry's text; a permitting verdict opens the
/// turn, and a target that changed the text rewrites it.
async fn input(
    g: &Governed<'_>,
    state: &mut ConvState,
    text: &Text,
    digest: &EntryDigest,
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

/// One `post_tool_call` over a tool result; what the model sees instead
/// when the chain changed or withheld it.
async fn tool_result(
    g: &Governed<'_>,
    state: &mut ConvState,
    call_id: &str,
    result: &Value,
    is_error: bool,
) -> Result<Option<Rewrite>, Error> {
    let session = &g.conv.session;
    let Some(call) = session.open_tool_call(call_id) else {
        return Ok(Some(Rewrite::ToolResult {
            text: blocked_result(
                InterceptionPoint::PostToolCall,
                Some("hookwire:unpaired_tool_result"),
            ),
            is_error: true,
        }));
    };
    let extra = g.extra(&state.labels, InterceptionPoint::PostToolCall);
    let sent = ToolResult {
        value: result.clone(),
        is_error,
    };
    let e = session.post_tool_call_with(&call, &sent, extra).await?;
    if !e.proceeds() {
        return Ok(Some(Rewrite::ToolResult {
            text: blocked_result(InterceptionPoint::PostToolCall, e.reason()),
            is_error: true,
        }));
    }
    let target = e.target().cloned().unwrap_or(Value::Null);
    state.labels.persist(&e, call_id, &target);
    if &target == result {
        return Ok(None);
    }
    let text = match target {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    };
    Ok(Some(Rewrite::ToolResult { text, is_error }))
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

    fn digests(entries: &[Entry]) -> Vec<EntryDigest> {
        entries.iter().map(digest).collect()
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
    fn a_first_request_governs_from_its_last_user_entry() {
        let entries = [user("sys"), user("a"), Entry::Other("x".into()), user("b")];
        let p = plan(0, false, &HashMap::new(), &digests(&entries), Some(3));
        assert_eq!(
            p,
            Plan {
                start: 3,
                reapply: Vec::new()
            }
        );
        let p = plan(0, false, &HashMap::new(), &digests(&entries[..1]), None);
        assert_eq!(p.start, 0);
    }

    #[test]
    fn unchanged_rewritten_history_is_rewritten_again_and_a_changed_entry_governed_anew() {
        let entries = [user("alice@x"), Entry::Other("a".into()), user("next")];
        let d = digests(&entries);
        let mut kept = HashMap::new();
        kept.insert(0, (d[0], Rewrite::Text("[email]".into())));
        let p = plan(2, false, &kept, &d, Some(2));
        assert_eq!(
            p,
            Plan {
                start: 2,
                reapply: vec![(0, Rewrite::Text("[email]".into()))]
            }
        );
        // The client changed entry 0 since it was governed.
        let changed = [user("bob@x"), Entry::Other("a".into()), user("next")];
        let p = plan(2, false, &kept, &digests(&changed), Some(2));
        assert_eq!(
            p,
            Plan {
                start: 0,
                reapply: Vec::new()
            }
        );
        // A transcript shorter than what was seen (a new branch) starts
        // from its last user entry.
        let p = plan(9, false, &kept, &d, Some(2));
        assert_eq!(p.start, 2);
        // A continued request: everything is new, nothing replayed.
        let p = plan(2, true, &kept, &d, Some(2));
        assert_eq!(
            p,
            Plan {
                start: 0,
                reapply: Vec::new()
            }
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
