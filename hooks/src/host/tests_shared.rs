//! An agent session lent to the gateway: found by the header its agent
//! names it in, only while the hooks hold it open, with the decision each
//! hooked tool result got, bounded.

use axum::http::{HeaderMap, HeaderValue};
use hookwire::{InterceptionPoint as P, Verdict};

use super::tests::{allow_all, at, end, hooks, post, pre, prompt, start};
use super::{DecidedResult, HooksConfig, MAX_DECIDED_RESULTS};
use crate::agents::Agent;

fn named(header: &str, id: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        axum::http::HeaderName::from_bytes(header.as_bytes()).unwrap(),
        HeaderValue::from_str(id).unwrap(),
    );
    h
}

#[tokio::test]
async fn a_session_is_lent_by_its_agents_header_while_the_hooks_hold_it() {
    let (hooks, _records) = allow_all();
    let claude = named(super::CLAUDE_CODE_SESSION_HEADER, "s-1");
    assert!(hooks.shared_session(&claude).is_none(), "not open yet");
    hooks.handle(Agent::ClaudeCode, &start()).await;
    let lent = hooks.shared_session(&claude).expect("open");
    assert_eq!(lent.key(), "claude-code:s-1");
    assert!(hooks.holds_session("claude-code:s-1"));
    // Codex's header names Codex's sessions only.
    assert!(
        hooks
            .shared_session(&named(super::CODEX_SESSION_HEADER, "s-1"))
            .is_none()
    );
    hooks.handle(Agent::Codex, &start()).await;
    let codex = hooks
        .shared_session(&named(super::CODEX_SESSION_HEADER, "s-1"))
        .expect("open");
    assert_eq!(codex.key(), "codex:s-1");
    // The gateway's hold keeps the hooks' events waiting.
    let held = lent.hold().await;
    let prompt = prompt();
    let event = hooks.handle(Agent::ClaudeCode, &prompt);
    tokio::pin!(event);
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(50), &mut event)
            .await
            .is_err()
    );
    drop(held);
    event.await;
    hooks.handle(Agent::ClaudeCode, &end()).await;
    assert!(hooks.shared_session(&claude).is_none(), "ended");
    assert!(!hooks.holds_session("claude-code:s-1"));
}

#[tokio::test]
async fn each_hooked_result_keeps_its_decision_for_the_gateway() {
    let (hooks, _records) = hooks(
        HooksConfig::default(),
        at(
            P::PostToolCall,
            Verdict::deny("policy:secret_in_output").with_message("a password"),
        ),
    );
    let cc = Agent::ClaudeCode;
    hooks.handle(cc, &start()).await;
    hooks.handle(cc, &prompt()).await;
    hooks.handle(cc, &pre("t-1")).await;
    hooks.handle(cc, &post("t-1")).await;
    let lent = hooks
        .shared_session(&named(super::CLAUDE_CODE_SESSION_HEADER, "s-1"))
        .unwrap();
    assert_eq!(
        lent.decided_result("t-1"),
        Some(DecidedResult::Withheld {
            reason: "policy:secret_in_output".into(),
            message: Some("a password".into()),
        })
    );
    assert_eq!(lent.decided_result("t-2"), None);

    let (hooks, _records) = allow_all();
    hooks.handle(cc, &start()).await;
    hooks.handle(cc, &prompt()).await;
    for i in 0..=MAX_DECIDED_RESULTS {
        let id = format!("t-{i}");
        hooks.handle(cc, &pre(&id)).await;
        hooks.handle(cc, &post(&id)).await;
    }
    let lent = hooks
        .shared_session(&named(super::CLAUDE_CODE_SESSION_HEADER, "s-1"))
        .unwrap();
    assert_eq!(lent.decided_result("t-0"), None, "the oldest forgotten");
    assert_eq!(
        lent.decided_result(&format!("t-{MAX_DECIDED_RESULTS}")),
        Some(DecidedResult::Released)
    );
}
