//! An agent session lent to the gateway: found by the header its agent
//! names it in, only while the hooks hold it open, with the decision each
//! hooked tool result got, bounded; and only to the principal the
//! session is bound to.

use axum::http::{HeaderMap, HeaderValue};
use hookwire::{InterceptionPoint as P, Verdict};

use super::tests::{allow_all, at, end, hooks, post, pre, prompt, start};
use super::{
    DecidedResult, HooksConfig, HooksHost, Join, Joined, MAX_DECIDED_RESULTS, Owner, SharedSession,
};
use crate::agents::Agent;
use crate::event::Outcome;

/// The session `h` names, as its owner (the token holder) joins it.
fn lend(hooks: &HooksHost, h: &HeaderMap) -> Option<SharedSession> {
    match hooks.join_session(h, Some(Owner::TOKEN_HOLDER), Join::Owner) {
        Joined::Shared(s) => Some(s),
        Joined::NotShared => None,
        Joined::Refused { key } => panic!("{key} refused to its owner"),
    }
}

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
    assert!(lend(&hooks, &claude).is_none(), "not open yet");
    hooks.handle(Agent::ClaudeCode, &start()).await;
    let lent = lend(&hooks, &claude).expect("open");
    assert_eq!(lent.key(), "claude-code:s-1");
    assert!(hooks.holds_session("claude-code:s-1"));
    // Codex's header names Codex's sessions only.
    assert!(lend(&hooks, &named(super::CODEX_SESSION_HEADER, "s-1")).is_none());
    hooks.handle(Agent::Codex, &start()).await;
    let codex = lend(&hooks, &named(super::CODEX_SESSION_HEADER, "s-1")).expect("open");
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
    assert!(lend(&hooks, &claude).is_none(), "ended");
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
    let lent = lend(&hooks, &named(super::CLAUDE_CODE_SESSION_HEADER, "s-1")).unwrap();
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
    let lent = lend(&hooks, &named(super::CLAUDE_CODE_SESSION_HEADER, "s-1")).unwrap();
    assert_eq!(lent.decided_result("t-0"), None, "the oldest forgotten");
    assert_eq!(
        lent.decided_result(&format!("t-{MAX_DECIDED_RESULTS}")),
        Some(DecidedResult::Released)
    );
}

fn owner(n: u8) -> Owner {
    Owner::new([n; 32])
}

fn refused(joined: Joined) -> bool {
    matches!(joined, Joined::Refused { key } if key == "claude-code:s-1")
}

#[tokio::test]
async fn a_session_is_lent_only_to_its_owner() {
    let (hooks, _records) = allow_all();
    let claude = named(super::CLAUDE_CODE_SESSION_HEADER, "s-1");
    hooks.handle_as(Agent::ClaudeCode, &start(), owner(1)).await;
    assert!(matches!(
        hooks.join_session(&claude, Some(owner(1)), Join::Owner),
        Joined::Shared(_)
    ));
    // Another owner's, or no credential: refused, by either rule.
    for rule in [Join::Owner, Join::FirstCredential] {
        assert!(refused(hooks.join_session(&claude, Some(owner(2)), rule)));
        assert!(refused(hooks.join_session(&claude, None, rule)));
        assert!(refused(hooks.join_session(
            &claude,
            Some(Owner::TOKEN_HOLDER),
            rule
        )));
    }
    // A session nobody holds is no one's to refuse.
    let other = named(super::CLAUDE_CODE_SESSION_HEADER, "s-2");
    assert!(matches!(
        hooks.join_session(&other, Some(owner(2)), Join::Owner),
        Joined::NotShared
    ));
}

#[tokio::test]
async fn a_token_holders_session_is_bound_to_its_first_credential_only_where_the_gateway_says() {
    let (hooks, _records) = allow_all();
    let claude = named(super::CLAUDE_CODE_SESSION_HEADER, "s-1");
    hooks.handle(Agent::ClaudeCode, &start()).await;
    // With clients, nobody's: the token holder has no model-route identity.
    assert!(refused(hooks.join_session(
        &claude,
        Some(owner(1)),
        Join::Owner
    )));
    // Without clients: the first credential, then only it.
    assert!(refused(hooks.join_session(
        &claude,
        None,
        Join::FirstCredential
    )));
    assert!(matches!(
        hooks.join_session(&claude, Some(owner(1)), Join::FirstCredential),
        Joined::Shared(_)
    ));
    assert!(matches!(
        hooks.join_session(&claude, Some(owner(1)), Join::FirstCredential),
        Joined::Shared(_)
    ));
    assert!(refused(hooks.join_session(
        &claude,
        Some(owner(2)),
        Join::FirstCredential
    )));
}

#[tokio::test]
async fn the_hooks_of_one_owner_cannot_touch_or_close_anothers_session() {
    let (hooks, records) = allow_all();
    let cc = Agent::ClaudeCode;
    hooks.handle_as(cc, &start(), owner(1)).await;
    let before = records.records().len();
    for call in [prompt(), pre("t-1"), post("t-1"), start()] {
        let outcome = hooks.handle_as(cc, &call, owner(2)).await;
        assert!(
            matches!(&outcome, Outcome::Block { reason } if reason.contains("another principal")),
            "{outcome:?}"
        );
    }
    // The session end of another owner neither closes nor removes it.
    let outcome = hooks.handle_as(cc, &end(), owner(2)).await;
    assert!(matches!(outcome, Outcome::Block { .. }), "{outcome:?}");
    assert!(hooks.holds_session("claude-code:s-1"));
    assert_eq!(records.records().len(), before, "nothing emitted in it");
    // The daemon's own token holder is another owner too.
    assert!(matches!(
        hooks.handle(cc, &end()).await,
        Outcome::Block { .. }
    ));
    assert!(hooks.holds_session("claude-code:s-1"));
    hooks.handle_as(cc, &end(), owner(1)).await;
    assert!(!hooks.holds_session("claude-code:s-1"));
}
