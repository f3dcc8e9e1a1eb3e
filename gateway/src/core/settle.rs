//! An answer settled: `post_model_call` over the whole answer, then
//! `pre_tool_call` for each proposed call (a denied call is removed and a
//! notice takes its place in the text), then `output` for a final answer
//! (a deny withholds it: [`Finish::Withheld`] with a notice). The result
//! is the neutral [`Settled`] each adapter turns into its API's answer.
//! Only what the host released counts: `Emission::proceeds` and
//! `Emission::target`, and `OutputDecision::release`.

use hookwire::{InterceptionPoint, notice_message};
use hookwire_client::{ModelResponse, ToolCall};
use serde_json::{Value, json};

use super::conversation::ConvState;
use super::emitted::{denied, hookwire_member};
use super::governed::Governed;
use crate::api::{Finish, Settled};
use crate::error::Error;

/// The tool-result content the model sees for a result a verdict withheld
/// (or that answers no permitted call): the point, the machine reason and
/// the verdict's bounded message ([`notice_message`]; absent when it gave
/// none), so that the model can correct itself.
pub(crate) fn blocked_result(
    point: InterceptionPoint,
    reason: Option<&str>,
    message: Option<&str>,
) -> String {
    let mut v =
        json!({"error": "blocked", "interception_point": point.to_string(), "reason": reason});
    if let Some(m) = notice_message(message) {
        v["message"] = Value::String(m);
    }
    v.to_string()
}

/// The reason of a notice, and the verdict's bounded message after it.
fn reason_text(reason: Option<&str>, message: Option<&str>) -> String {
    let reason = reason.unwrap_or("denied");
    match notice_message(message) {
        Some(m) => format!("{reason} \u{2014} {m}"),
        None => reason.to_owned(),
    }
}

/// The line an answer carries for a proposed tool call that
/// `pre_tool_call` denied (the call itself is removed): the reason, then
/// the verdict's message ([`notice_message`]).
pub(crate) fn blocked_call_notice(
    call: &ToolCall,
    reason: Option<&str>,
    message: Option<&str>,
) -> String {
    format!(
        "[hookwire] tool call {:?} ({}) was blocked: {}",
        call.name,
        call.id,
        reason_text(reason, message)
    )
}

/// The text an `output` deny leaves (with [`Finish::Withheld`]): the
/// reason, then the verdict's message ([`notice_message`]).
pub(crate) fn withheld_notice(reason: Option<&str>, message: Option<&str>) -> String {
    format!(
        "[hookwire] the response was withheld: {}",
        reason_text(reason, message)
    )
}

/// A model answer's content as text (`null` is empty; structured content
/// is its JSON text).
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => super::render::result_text(other),
    }
}

/// The neutral finish of an upstream's finish reason, for an answer that
/// ends without a permitted tool call.
pub(crate) fn finish_of(reason: &str) -> Finish {
    match reason {
        "stop" | "end_turn" | "completed" | "tool_calls" | "tool_use" => Finish::Stop,
        "length" | "max_tokens" | "max_output_tokens" => Finish::Length,
        other => Finish::Upstream(other.to_owned()),
    }
}

/// The answer's text with the notices of its blocked calls, one a line.
pub(crate) fn with_notices(text: &str, notices: &[String]) -> String {
    if notices.is_empty() {
        return text.to_owned();
    }
    let joined = notices.join("\n");
    if text.is_empty() {
        joined
    } else {
        format!("{text}\n{joined}")
    }
}

/// What `output` let through of a final answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Released {
    /// The answer as released.
    Text(String),
    /// Withheld, with the combined verdict's reason and message.
    Withheld(Option<String>, Option<String>),
}

/// A final answer settled by its `output`; `submitted` is the text
/// `output` was given (what a rewrite there is measured against).
pub(crate) fn final_answer(upstream_finish: &str, submitted: &str, output: Released) -> Settled {
    match output {
        Released::Text(text) => Settled {
            rewritten: text != submitted,
            text,
            tool_calls: Vec::new(),
            finish: finish_of(upstream_finish),
        },
        Released::Withheld(reason, message) => Settled {
            text: withheld_notice(reason.as_deref(), message.as_deref()),
            tool_calls: Vec::new(),
            finish: Finish::Withheld,
            rewritten: true,
        },
    }
}

/// `post_model_call` over an answer (`ApiResponse::answer`, and the
/// types of its `ApiResponse::other_outputs`); the answer as the chain
/// released it.
pub(crate) async fn post_model(
    g: &Governed<'_>,
    state: &mut ConvState,
    model: &str,
    (answer, hosted): (ModelResponse, Vec<String>),
) -> Result<ModelResponse, Error> {
    let mut extra = g.extra(&state.labels, InterceptionPoint::PostModelCall);
    if !hosted.is_empty() {
        // Hosted tools ran at the provider: this is the one point that
        // sees them.
        hookwire_member(&mut extra, "hosted_outputs", Value::from(hosted));
    }
    let post = g
        .conv
        .session
        .post_model_call_with(model, &answer, extra)
        .await?;
    if !post.proceeds() {
        return Err(denied(&post));
    }
    let released = post
        .target()
        .and_then(ModelResponse::from_target)
        .ok_or_else(|| Error::Transform("a transform left the response unreadable".into()))?;
    state.labels.persist(&post, model, &released.content);
    Ok(released)
}

/// `pre_tool_call` per proposed call, then `output` for a final answer;
/// in a shared agent session neither (the agent's hooks emit them).
/// `upstream_text` is the answer's text as the upstream wrote it: an
/// answer whose text a transform changed (at `post_model_call` or
/// `output`) is [`Settled::rewritten`]; a blocked call's notice adds to
/// the text without taking anything out of it.
pub(crate) async fn settle(
    g: &Governed<'_>,
    state: &mut ConvState,
    response: ModelResponse,
    upstream_text: &str,
) -> Result<Settled, Error> {
    let session = &g.conv.session;
    let mut kept = Vec::new();
    let mut notices = Vec::new();
    state.removed_calls.clear();
    if g.conv.shared.is_some() {
        return Ok(unjudged(response, upstream_text));
    }
    for call in &response.tool_calls {
        let extra = g.extra(&state.labels, InterceptionPoint::PreToolCall);
        let e = session.pre_tool_call_with(call, extra).await?;
        if e.proceeds() {
            let mut permitted = call.clone();
            if let Some(args) = e.target() {
                permitted.args = args.clone();
            }
            kept.push(permitted);
        } else {
            notices.push(blocked_call_notice(
                call,
                e.reason(),
                e.verdict().message.as_deref(),
            ));
            state.removed_calls.push((
                call.id.clone(),
                blocked_result(
                    InterceptionPoint::PreToolCall,
                    e.reason(),
                    e.verdict().message.as_deref(),
                ),
            ));
        }
    }
    let post_rewrote = text_of(&response.content) != upstream_text;
    let text = with_notices(&text_of(&response.content), &notices);
    if !kept.is_empty() {
        // The turn goes on with the tool results.
        return Ok(Settled {
            rewritten: post_rewrote,
            text,
            tool_calls: kept,
            finish: Finish::ToolCalls,
        });
    }
    let submitted = text.clone();
    let content = if response.content.is_null() && notices.is_empty() {
        Value::Null
    } else {
        Value::from(text)
    };
    let extra = g.extra(&state.labels, InterceptionPoint::Output);
    let decision = session.output_with(content, extra).await?;
    let labelled = decision.clone();
    let released = match decision.release() {
        Ok(released) => {
            state.labels.persist_output(&labelled, &released);
            Released::Text(text_of(&released))
        }
        Err(withheld) => Released::Withheld(
            withheld.verdict().reason.clone(),
            withheld.verdict().message.clone(),
        ),
    };
    let mut settled = final_answer(&response.finish_reason, &submitted, released);
    settled.rewritten |= post_rewrote;
    Ok(settled)
}

/// An answer of a shared agent session (`crate::hooks`), released as
/// `post_model_call` left it: the agent's hooks govern each proposed call
/// (`pre_tool_call`) and the final answer (`output`) when the agent
/// reaches them.
fn unjudged(response: ModelResponse, upstream_text: &str) -> Settled {
    let text = text_of(&response.content);
    let rewritten = text != upstream_text;
    if response.tool_calls.is_empty() {
        let mut settled =
            final_answer(&response.finish_reason, &text, Released::Text(text.clone()));
        settled.rewritten |= rewritten;
        return settled;
    }
    Settled {
        rewritten,
        text,
        tool_calls: response.tool_calls,
        finish: Finish::ToolCalls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_call_leaves_a_notice_line() {
        let call = ToolCall::new("c9", "rm", json!({}));
        let n = blocked_call_notice(&call, Some("policy:rm"), None);
        assert_eq!(n, "[hookwire] tool call \"rm\" (c9) was blocked: policy:rm");
        assert_eq!(with_notices("", std::slice::from_ref(&n)), n);
        assert_eq!(
            with_notices("ok", &[n.clone(), n.clone()]),
            format!("ok\n{n}\n{n}")
        );
        assert_eq!(with_notices("ok", &[]), "ok");
    }

    #[test]
    fn a_final_answer_keeps_the_upstreams_finish_unless_withheld() {
        let s = final_answer("stop", "hi", Released::Text("hi".into()));
        assert_eq!((s.text.as_str(), &s.finish), ("hi", &Finish::Stop));
        assert!(!s.rewritten && !s.drops_copies());
        let r = final_answer("stop", "my key", Released::Text("my [key]".into()));
        assert!(r.rewritten && r.drops_copies());
        // Every proposed call was blocked: the answer ends, not in calls.
        assert_eq!(
            final_answer("tool_calls", "", Released::Text(String::new())).finish,
            Finish::Stop
        );
        assert_eq!(
            final_answer("length", "x", Released::Text("x".into())).finish,
            Finish::Length
        );
        assert_eq!(
            final_answer("weird", "x", Released::Text("x".into())).finish,
            Finish::Upstream("weird".into())
        );
        let w = final_answer(
            "stop",
            "AKIA",
            Released::Withheld(Some("policy:secret".into()), None),
        );
        assert_eq!(w.finish, Finish::Withheld);
        assert_eq!(
            w.text,
            "[hookwire] the response was withheld: policy:secret"
        );
        assert!(w.tool_calls.is_empty() && w.drops_copies());
    }

    #[test]
    fn a_notice_carries_the_verdicts_message_bounded() {
        let w = withheld_notice(Some("policy:secret"), Some("Remove the key\nand retry."));
        assert_eq!(
            w,
            "[hookwire] the response was withheld: policy:secret \u{2014} Remove the key and retry."
        );
        let call = ToolCall::new("c1", "bash", json!({}));
        assert_eq!(
            blocked_call_notice(&call, Some("policy:rm"), Some("use trash instead")),
            "[hookwire] tool call \"bash\" (c1) was blocked: policy:rm \u{2014} use trash instead"
        );
        // Bounded by the one rule (`hookwire::notice_message`).
        let long = "x".repeat(2 * hookwire::NOTICE_MESSAGE_MAX_BYTES);
        let w = withheld_notice(Some("r"), Some(&long));
        assert!(
            w.len() < hookwire::NOTICE_MESSAGE_MAX_BYTES + 80,
            "{}",
            w.len()
        );
    }

    #[test]
    fn a_blocked_result_names_the_point_and_reason_only() {
        let b: Value =
            serde_json::from_str(&blocked_result(InterceptionPoint::PostToolCall, None, None))
                .unwrap();
        assert_eq!(
            b,
            json!({"error": "blocked", "interception_point": "post_tool_call", "reason": null})
        );
    }
}
