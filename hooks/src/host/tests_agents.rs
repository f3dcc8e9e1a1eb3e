//! The core's answers to what only some agents have or lack: the
//! quarantine after a deny the agent cannot enforce (Copilot's prompt
//! and tool result, Cursor's tool result), Gemini CLI's model events and
//! their streamed chunks, Codex without an ask.

use hookwire::{InterceptionPoint as P, Verdict};
use hookwire_client::RecordLog;
use serde_json::{Value, json};

use super::tests::{allow_all, at, blocked, call, hooks, post, pre, prompt, stop};
use super::{HooksConfig, Liftable};
use crate::agents::Agent;
use crate::event::{Event, HookCall, Outcome};

fn points(records: &RecordLog, session: &str) -> Vec<P> {
    records
        .session(session)
        .iter()
        .map(|r| r.interception_point)
        .collect()
}

fn before_model() -> HookCall {
    call(Event::PreModel {
        model: "gemini-2.5-pro".into(),
        messages: json!([{"role": "user", "content": "hi"}]),
    })
}

fn chunk(text: &str, finish: Option<&str>) -> HookCall {
    call(Event::PostModel {
        model: "gemini-2.5-pro".into(),
        text: text.into(),
        finish_reason: finish.map(str::to_owned),
    })
}

#[tokio::test]
async fn a_deny_copilot_cannot_enforce_quarantines_the_rest_of_the_turn() {
    // Denies the user's prompt by its content, not the synthetic input
    // that opens a turn for a tool event.
    let (h, records) = hooks(HooksConfig::default(), |ctx| {
        let content = ctx.to_json()["input"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if content.contains("delete") {
            Verdict::deny("injection")
        } else {
            Verdict::allow()
        }
    });
    let cop = Agent::Copilot;
    // The prompt cannot be stopped: blocked in the core's terms (Copilot
    // reads no answer), and the turn is quarantined.
    assert!(blocked(h.handle(cop, &prompt()).await).contains("denied at input: injection"));
    let reason = blocked(h.handle(cop, &pre("t1")).await);
    assert!(
        reason.contains("quarantined since Test: hookwire: denied at input"),
        "{reason}"
    );
    // The stop ends the turn and its quarantine.
    assert_eq!(h.handle(cop, &stop()).await, Outcome::Proceed);
    // The denied prompt opened no turn: the tool event's synthetic input
    // did, and the stop closed it.
    assert_eq!(
        points(&records, "copilot:s-1"),
        [P::AgentStartup, P::Input, P::Input, P::Output]
    );
    // The next turn is governed again (its prompt allowed by a fresh
    // host below); here a pre-tool event opens a synthetic turn.
    let (h, _) = allow_all();
    h.handle(cop, &prompt()).await;
    assert_eq!(h.handle(cop, &pre("t1")).await, Outcome::Proceed);
}

#[tokio::test]
async fn a_result_cursor_cannot_withhold_quarantines_until_the_next_prompt() {
    let (h, _) = hooks(
        HooksConfig::default(),
        at(P::PostToolCall, Verdict::deny("leak")),
    );
    let cur = Agent::Cursor;
    h.handle(cur, &prompt()).await;
    assert_eq!(h.handle(cur, &pre("t1")).await, Outcome::Proceed);
    assert!(blocked(h.handle(cur, &post("t1")).await).contains("leak"));
    assert!(blocked(h.handle(cur, &pre("t2")).await).contains("quarantined"));
    // A prompt opens a new turn: lifted.
    h.handle(cur, &prompt()).await;
    assert_eq!(h.handle(cur, &pre("t3")).await, Outcome::Proceed);
    // Claude Code withholds the result itself: no quarantine.
    let (h, _) = hooks(
        HooksConfig::default(),
        at(P::PostToolCall, Verdict::deny("leak")),
    );
    h.handle(Agent::ClaudeCode, &prompt()).await;
    h.handle(Agent::ClaudeCode, &pre("t1")).await;
    blocked(h.handle(Agent::ClaudeCode, &post("t1")).await);
    assert_eq!(
        h.handle(Agent::ClaudeCode, &pre("t2")).await,
        Outcome::Proceed
    );
}

#[tokio::test]
async fn copilot_applies_a_rewrite_and_asks_codex_does_not_ask() {
    let (h, _) = hooks(
        HooksConfig::default(),
        at(
            P::PreToolCall,
            Verdict::transform("$target.command", json!("ls")),
        ),
    );
    h.handle(Agent::Copilot, &prompt()).await;
    assert_eq!(
        h.handle(Agent::Copilot, &pre("t1")).await,
        Outcome::Rewrite(json!({"command": "ls"}))
    );
    let ask = HooksConfig {
        liftable: Liftable::Ask,
        ..HooksConfig::default()
    };
    let (h, _) = hooks(ask.clone(), at(P::PreToolCall, Verdict::escalate("review")));
    h.handle(Agent::Copilot, &prompt()).await;
    assert!(matches!(
        h.handle(Agent::Copilot, &pre("t1")).await,
        Outcome::Ask { .. }
    ));
    let (h, _) = hooks(ask, at(P::PreToolCall, Verdict::escalate("review")));
    h.handle(Agent::Codex, &prompt()).await;
    assert!(blocked(h.handle(Agent::Codex, &pre("t1")).await).contains("pending approval"));
}

#[tokio::test]
async fn model_events_pair_a_request_with_its_streamed_chunks() {
    let (h, records) = allow_all();
    let g = Agent::GeminiCli;
    h.handle(g, &prompt()).await;
    assert_eq!(h.handle(g, &before_model()).await, Outcome::Proceed);
    assert_eq!(h.handle(g, &chunk("Hel", None)).await, Outcome::Proceed);
    assert_eq!(
        h.handle(g, &chunk("lo", Some("STOP"))).await,
        Outcome::Proceed
    );
    // A chunk after the request closed is governed after a pre_model_call
    // emitted for it, both unpaired.
    assert_eq!(h.handle(g, &chunk("late", None)).await, Outcome::Proceed);
    let log = records.session("gemini-cli:s-1");
    let got: Vec<P> = log.iter().map(|r| r.interception_point).collect();
    assert_eq!(
        got,
        [
            P::AgentStartup,
            P::Input,
            P::PreModelCall,
            P::PostModelCall,
            P::PostModelCall,
            P::PreModelCall,
            P::PostModelCall
        ]
    );
}

#[tokio::test]
async fn model_verdicts_become_rewrites_and_blocks() {
    let g = Agent::GeminiCli;
    let messages = json!([{"role": "user", "content": "[redacted]"}]);
    let (h, _) = hooks(
        HooksConfig::default(),
        at(
            P::PreModelCall,
            Verdict::transform("$target", messages.clone()),
        ),
    );
    h.handle(g, &prompt()).await;
    assert_eq!(
        h.handle(g, &before_model()).await,
        Outcome::Rewrite(messages)
    );
    let (h, _) = hooks(
        HooksConfig::default(),
        at(
            P::PostModelCall,
            Verdict::transform("$target.content", json!("***")),
        ),
    );
    h.handle(g, &prompt()).await;
    h.handle(g, &before_model()).await;
    assert_eq!(
        h.handle(g, &chunk("AKIA…", None)).await,
        Outcome::Rewrite(json!("***"))
    );
    // A later chunk of the same request is governed too.
    assert_eq!(
        h.handle(g, &chunk("more", Some("STOP"))).await,
        Outcome::Rewrite(json!("***"))
    );
    let (h, _) = hooks(
        HooksConfig::default(),
        at(P::PostModelCall, Verdict::deny("pii")),
    );
    h.handle(g, &prompt()).await;
    h.handle(g, &before_model()).await;
    assert_eq!(
        blocked(h.handle(g, &chunk("x", None)).await),
        "hookwire: denied at post_model_call: pii"
    );
    // Claude Code has no model events to rewrite: a rewrite there blocks.
    let (h, _) = hooks(
        HooksConfig::default(),
        at(
            P::PreModelCall,
            Verdict::transform("$target", Value::Array(vec![])),
        ),
    );
    h.handle(Agent::ClaudeCode, &prompt()).await;
    assert!(blocked(h.handle(Agent::ClaudeCode, &before_model()).await).contains("cannot rewrite"));
}
