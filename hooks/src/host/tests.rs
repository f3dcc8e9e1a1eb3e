//! The core over an in-process policy: every event's point, every verdict
//! kind's outcome, the out-of-order treatments, the bounds and the
//! idle-out, checked against the records.

use std::sync::Arc;
use std::time::Duration;

use hookwire::{AgentContext, BoxError, InterceptionPoint as P, Verdict};
use hookwire_client::{Host, RecordLog, interceptor_fn};
use serde_json::{Value, json};

use super::{HooksConfig, HooksHost, Liftable};
use crate::agents::Agent;
use crate::event::{Event, HookCall, Outcome};

type Decide = dyn Fn(&AgentContext) -> Verdict + Send + Sync;

pub(super) fn hooks(
    config: HooksConfig,
    decide: impl Fn(&AgentContext) -> Verdict + Send + Sync + 'static,
) -> (HooksHost, RecordLog) {
    let decide: Arc<Decide> = Arc::new(decide);
    let records = RecordLog::new();
    let host = Host::builder("agent-under-test", "hookwire")
        .interceptor(
            "policy",
            interceptor_fn(move |ctx: AgentContext| {
                let decide = decide.clone();
                async move { Ok::<_, BoxError>(decide(&ctx)) }
            }),
        )
        .record_sink(records.clone())
        .build()
        .unwrap();
    (HooksHost::new(host, config), records)
}

pub(super) fn allow_all() -> (HooksHost, RecordLog) {
    hooks(HooksConfig::default(), |_| Verdict::allow())
}

/// A policy deciding `verdict` at `point`, allowing everything else.
pub(super) fn at(
    point: P,
    verdict: Verdict,
) -> impl Fn(&AgentContext) -> Verdict + Send + Sync + 'static {
    move |ctx| {
        if ctx.point() == point {
            verdict.clone()
        } else {
            Verdict::allow()
        }
    }
}

pub(super) fn call(event: Event) -> HookCall {
    HookCall {
        session_id: "s-1".into(),
        event_name: "Test".into(),
        cwd: Some("/work".into()),
        event,
    }
}

pub(super) fn start() -> HookCall {
    call(Event::SessionStart {
        source: Some("startup".into()),
    })
}
pub(super) fn prompt() -> HookCall {
    call(Event::Prompt {
        prompt: "delete the logs".into(),
    })
}
pub(super) fn pre(id: &str) -> HookCall {
    call(Event::PreTool {
        id: id.into(),
        name: "Bash".into(),
        input: json!({"command": "rm -rf logs"}),
    })
}
pub(super) fn post(id: &str) -> HookCall {
    call(Event::PostTool {
        id: id.into(),
        name: "Bash".into(),
        input: json!({"command": "rm -rf logs"}),
        response: json!({"stdout": "", "stderr": ""}),
        is_error: false,
    })
}
pub(super) fn stop() -> HookCall {
    call(Event::Stop {
        message: json!("done"),
    })
}
pub(super) fn end() -> HookCall {
    call(Event::SessionEnd)
}

fn points(records: &RecordLog) -> Vec<P> {
    records
        .session("claude-code:s-1")
        .iter()
        .map(|r| r.interception_point)
        .collect()
}

const CC: Agent = Agent::ClaudeCode;

pub(super) fn blocked(outcome: Outcome) -> String {
    match outcome {
        Outcome::Block { reason } => reason,
        other => panic!("expected a block, got {other:?}"),
    }
}

#[tokio::test]
async fn a_whole_session_emits_the_points_in_order() {
    let (h, records) = allow_all();
    for c in [start(), prompt(), pre("t1"), post("t1"), stop(), end()] {
        assert_eq!(h.handle(CC, &c).await, Outcome::Proceed, "{c:?}");
    }
    assert_eq!(
        points(&records),
        [
            P::AgentStartup,
            P::Input,
            P::PreToolCall,
            P::PostToolCall,
            P::Output,
            P::AgentShutdown
        ]
    );
    assert_eq!(h.open_sessions(), 0);
}

#[tokio::test]
async fn a_pre_tool_deny_blocks_with_its_reason() {
    let (h, _) = hooks(
        HooksConfig::default(),
        at(P::PreToolCall, Verdict::deny("destructive")),
    );
    h.handle(CC, &prompt()).await;
    let reason = blocked(h.handle(CC, &pre("t1")).await);
    assert_eq!(reason, "hookwire: denied at pre_tool_call: destructive");
}

#[tokio::test]
async fn a_pre_tool_transform_is_the_rewritten_input() {
    let (h, _) = hooks(
        HooksConfig::default(),
        at(
            P::PreToolCall,
            Verdict::transform("$target.command", json!("ls logs")),
        ),
    );
    h.handle(CC, &prompt()).await;
    assert_eq!(
        h.handle(CC, &pre("t1")).await,
        Outcome::Rewrite(json!({"command": "ls logs"}))
    );
}

#[tokio::test]
async fn a_liftable_deny_asks_only_when_configured() {
    let ask = HooksConfig {
        liftable: Liftable::Ask,
        ..HooksConfig::default()
    };
    let (h, _) = hooks(
        ask.clone(),
        at(P::PreToolCall, Verdict::escalate("needs_review")),
    );
    h.handle(CC, &prompt()).await;
    assert_eq!(
        h.handle(CC, &pre("t1")).await,
        Outcome::Ask {
            reason: "hookwire: denied at pre_tool_call pending approval: needs_review".into()
        }
    );
    let (h, _) = hooks(
        HooksConfig::default(),
        at(P::PreToolCall, Verdict::escalate("needs_review")),
    );
    h.handle(CC, &prompt()).await;
    assert!(blocked(h.handle(CC, &pre("t1")).await).contains("pending approval"));
    // Elsewhere than a pre-tool event there is no ask: a block.
    let (h, _) = hooks(ask, at(P::Input, Verdict::escalate("needs_review")));
    assert!(blocked(h.handle(CC, &prompt()).await).contains("denied at input pending approval"));
}

#[tokio::test]
async fn post_tool_deny_and_transform_block() {
    let (h, _) = hooks(
        HooksConfig::default(),
        at(P::PostToolCall, Verdict::deny("leak")),
    );
    h.handle(CC, &prompt()).await;
    h.handle(CC, &pre("t1")).await;
    assert_eq!(
        blocked(h.handle(CC, &post("t1")).await),
        "hookwire: denied at post_tool_call: leak"
    );
    let (h, _) = hooks(
        HooksConfig::default(),
        at(
            P::PostToolCall,
            Verdict::transform("$target", json!("[redacted]")),
        ),
    );
    h.handle(CC, &prompt()).await;
    h.handle(CC, &pre("t1")).await;
    assert!(blocked(h.handle(CC, &post("t1")).await).contains("cannot rewrite from this hook"));
}

#[tokio::test]
async fn prompt_and_stop_deny_and_transform_block() {
    for (point, path) in [
        (P::Input, "$target.content"),
        (P::Output, "$target.content"),
    ] {
        let (h, _) = hooks(HooksConfig::default(), at(point, Verdict::deny("no")));
        let outcome = match point {
            P::Input => h.handle(CC, &prompt()).await,
            _ => {
                h.handle(CC, &prompt()).await;
                h.handle(CC, &stop()).await
            }
        };
        assert_eq!(
            blocked(outcome),
            format!("hookwire: denied at {}: no", point.as_str())
        );
        let (h, _) = hooks(
            HooksConfig::default(),
            at(point, Verdict::transform(path, json!("other"))),
        );
        let outcome = match point {
            P::Input => h.handle(CC, &prompt()).await,
            _ => {
                h.handle(CC, &prompt()).await;
                h.handle(CC, &stop()).await
            }
        };
        let reason = blocked(outcome);
        assert!(reason.contains("cannot rewrite from this hook"), "{reason}");
    }
}

#[tokio::test]
async fn a_tool_event_with_no_turn_opens_a_recorded_synthetic_one() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let (h, records) = hooks(HooksConfig::default(), move |ctx| {
        if ctx.point() == P::Input {
            log.lock().unwrap().push(ctx.get("extensions").cloned());
        }
        Verdict::allow()
    });
    assert_eq!(h.handle(CC, &pre("t1")).await, Outcome::Proceed);
    assert_eq!(
        points(&records),
        [P::AgentStartup, P::Input, P::PreToolCall]
    );
    let ext = seen.lock().unwrap()[0].clone().unwrap();
    assert_eq!(
        ext["agent_hooks"]["synthetic"],
        "Test arrived with no open turn"
    );
    assert_eq!(ext["agent_hooks"]["agent"], "claude-code");
    // A stop closes the turn; the next tool event opens another.
    h.handle(CC, &stop()).await;
    h.handle(CC, &pre("t2")).await;
    assert_eq!(
        points(&records),
        [
            P::AgentStartup,
            P::Input,
            P::PreToolCall,
            P::Output,
            P::Input,
            P::PreToolCall
        ]
    );
}

#[tokio::test]
async fn a_denied_synthetic_input_blocks_the_tool() {
    let (h, records) = hooks(
        HooksConfig::default(),
        at(P::Input, Verdict::deny("no_turn")),
    );
    let reason = blocked(h.handle(CC, &pre("t1")).await);
    assert!(
        reason.contains("synthetic input") && reason.contains("no_turn"),
        "{reason}"
    );
    assert_eq!(points(&records), [P::AgentStartup, P::Input]);
}

#[tokio::test]
async fn a_post_tool_without_its_pre_is_governed_after_its_pre_both_unpaired() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let (h, records) = hooks(HooksConfig::default(), move |ctx| {
        if matches!(ctx.point(), P::PreToolCall | P::PostToolCall) {
            log.lock()
                .unwrap()
                .push(ctx.get("extensions").cloned().unwrap());
        }
        Verdict::allow()
    });
    h.handle(CC, &prompt()).await;
    assert_eq!(h.handle(CC, &post("never-pre")).await, Outcome::Proceed);
    // The post follows its own pre (§3.1 rule 5), emitted for it now.
    assert_eq!(
        points(&records),
        [P::AgentStartup, P::Input, P::PreToolCall, P::PostToolCall]
    );
    for ext in seen.lock().unwrap().iter() {
        assert!(ext["agent_hooks"]["unpaired"].is_string(), "{ext}");
    }
}

#[tokio::test]
async fn a_denied_pre_for_an_unpaired_post_withholds_the_result() {
    let (h, records) = hooks(
        HooksConfig::default(),
        at(P::PreToolCall, Verdict::deny("no_tools")),
    );
    h.handle(CC, &prompt()).await;
    assert!(blocked(h.handle(CC, &post("never-pre")).await).contains("no_tools"));
    assert_eq!(
        points(&records),
        [P::AgentStartup, P::Input, P::PreToolCall]
    );
}

#[tokio::test]
async fn a_denied_start_stops_the_agent_and_blocks_what_follows() {
    let (h, records) = hooks(
        HooksConfig::default(),
        at(P::AgentStartup, Verdict::deny("off_hours")),
    );
    assert_eq!(
        h.handle(CC, &start()).await,
        Outcome::Stop {
            reason: "off_hours".into()
        }
    );
    assert_eq!(
        h.handle(CC, &start()).await,
        Outcome::Stop {
            reason: "hookwire: agent_startup denied: off_hours".into()
        }
    );
    assert!(blocked(h.handle(CC, &prompt()).await).contains("agent_startup denied"));
    h.handle(CC, &end()).await;
    assert_eq!(points(&records), [P::AgentStartup, P::AgentShutdown]);
}

#[tokio::test]
async fn a_resumed_session_is_not_started_twice() {
    let (h, records) = allow_all();
    h.handle(CC, &start()).await;
    let resume = call(Event::SessionStart {
        source: Some("resume".into()),
    });
    assert_eq!(h.handle(CC, &resume).await, Outcome::Proceed);
    assert_eq!(points(&records), [P::AgentStartup]);
}

#[tokio::test]
async fn a_session_end_of_an_unknown_session_emits_nothing() {
    let (h, records) = allow_all();
    assert_eq!(h.handle(CC, &end()).await, Outcome::Proceed);
    assert!(records.records().is_empty());
}

#[tokio::test]
async fn a_full_table_fails_closed() {
    let (h, _) = hooks(
        HooksConfig {
            max_sessions: 1,
            ..HooksConfig::default()
        },
        |_| Verdict::allow(),
    );
    h.handle(CC, &start()).await;
    let mut other = start();
    other.session_id = "s-2".into();
    assert_eq!(
        blocked(h.handle(CC, &other).await),
        "hookwire: 1 agent sessions are open: no room for another"
    );
    // The same id of another agent is another session.
    let codex = h.handle(Agent::Codex, &start()).await;
    assert!(matches!(codex, Outcome::Block { .. }));
}

#[tokio::test]
async fn bad_session_ids_fail_closed() {
    let (h, records) = allow_all();
    for id in [
        String::new(),
        "x".repeat(super::MAX_SESSION_ID_BYTES + 1),
        "a\nb".into(),
    ] {
        let mut c = prompt();
        c.session_id = id;
        assert!(blocked(h.handle(CC, &c).await).contains("`session_id`"));
    }
    assert!(records.records().is_empty());
}

#[tokio::test]
async fn idle_sessions_are_shut_down() {
    let (h, records) = hooks(
        HooksConfig {
            idle_timeout: Duration::from_millis(1),
            ..HooksConfig::default()
        },
        |_| Verdict::allow(),
    );
    let h = Arc::new(h);
    h.handle(Agent::Codex, &start()).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(h.reap_idle().await, 1);
    assert_eq!(h.open_sessions(), 0);
    let points: Vec<P> = records
        .session("codex:s-1")
        .iter()
        .map(|r| r.interception_point)
        .collect();
    assert_eq!(points, [P::AgentStartup, P::AgentShutdown]);
    // The next event opens a fresh session, started synthetically.
    h.handle(Agent::Codex, &prompt()).await;
    assert_eq!(h.open_sessions(), 1);
    h.shutdown_all().await;
    assert_eq!(h.open_sessions(), 0);
    let last = records.records().last().map(|r| r.interception_point);
    assert_eq!(last, Some(P::AgentShutdown));
}

#[test]
fn session_keys_are_per_agent() {
    assert_eq!(HooksHost::session_key(Agent::Codex, "a"), "codex:a");
    assert_ne!(
        HooksHost::session_key(Agent::Codex, "a"),
        HooksHost::session_key(Agent::ClaudeCode, "a")
    );
    let _: Value = json!(null);
}

#[tokio::test]
async fn a_deny_tells_the_agent_its_message_on_one_bounded_line() {
    let message = format!("use git clean -n to see\nwhat would go{}", " x".repeat(600));
    let (h, _) = hooks(
        HooksConfig::default(),
        at(
            P::PreToolCall,
            Verdict::deny("policy:destructive_command").with_message(message),
        ),
    );
    h.handle(CC, &prompt()).await;
    let reason = blocked(h.handle(CC, &pre("t1")).await);
    assert!(
        reason.starts_with(
            "hookwire: denied at pre_tool_call: policy:destructive_command — use git clean -n to see what would go"
        ),
        "{reason}"
    );
    assert!(!reason.contains('\n'), "{reason}");
    let prefix = "hookwire: denied at pre_tool_call: policy:destructive_command — ";
    assert!(
        reason.len() <= prefix.len() + hookwire::NOTICE_MESSAGE_MAX_BYTES,
        "{}",
        reason.len()
    );
}
