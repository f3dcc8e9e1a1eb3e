//! The session's behaviour through its public API: the lifecycle, the
//! §3.1 order, the output gate, sequences, cancellation and `Drop`.

use hookwire::{Composition, InterceptionPoint, Mode, Profile, Verdict};
use serde_json::{Map, json};

use crate::{
    BoxError, Error, Host, InputRole, ModelResponse, ShutdownReason, ToolCall, ToolResult,
    interceptor_fn,
};

fn host() -> Host {
    let allow = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::allow()) });
    Host::builder("agent", "hookwire")
        .interceptor("allow", allow)
        .build()
        .unwrap()
}

#[tokio::test]
async fn emit_refuses_the_lifecycle_points_with_their_own_error() {
    let session = host().session("s").unwrap();
    session.start(["bash"]).await.unwrap();
    for point in [
        InterceptionPoint::AgentStartup,
        InterceptionPoint::AgentShutdown,
    ] {
        let err = session.emit(point, Map::new()).await.unwrap_err();
        assert!(
            matches!(&err, Error::LifecyclePoint { session, point: p } if session == "s" && *p == point),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("Session::start or Session::shutdown"),
            "{text}"
        );
    }
    // Refusing them changed nothing: the session still runs and closes.
    let e = session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert_eq!(e.record().sequence, 1, "the refused emits took no sequence");
}

fn deny_tools() -> Host {
    let policy = interceptor_fn(|ctx: hookwire::AgentContext| {
        let deny = ctx.point() == InterceptionPoint::PreToolCall
            && ctx.get("tool_call").and_then(|c| c.get("name")) == Some(&json!("rm"));
        async move {
            Ok::<_, BoxError>(if deny {
                Verdict::deny("test:rm")
            } else {
                Verdict::allow()
            })
        }
    });
    Host::builder("agent", "hookwire")
        .interceptor("policy", policy)
        .build()
        .unwrap()
}

fn out_of_order(err: &Error, want: InterceptionPoint) -> String {
    match err {
        Error::OutOfOrder { point, reason, .. } if *point == want => reason.clone(),
        other => panic!("expected OutOfOrder at {want}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_post_tool_call_needs_its_own_permitted_pre_tool_call() {
    let session = deny_tools().session("s").unwrap();
    session.start(["ls", "rm"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let ls = ToolCall::new("c1", "ls", json!({}));
    let ok = ToolResult {
        value: json!("out"),
        is_error: false,
    };
    // No pre at all.
    let err = session.post_tool_call(&ls, &ok).await.unwrap_err();
    let reason = out_of_order(&err, InterceptionPoint::PostToolCall);
    assert!(reason.contains("no permitted pre_tool_call"), "{reason}");
    assert!(err.to_string().contains("out of order"), "{err}");
    // A blocked pre leaves nothing to post (§6.2).
    let rm = ToolCall::new("c2", "rm", json!({}));
    assert!(!session.pre_tool_call(&rm).await.unwrap().proceeds());
    let err = session.post_tool_call(&rm, &ok).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PostToolCall);
    // A permitted pre opens exactly one post; a second pre with the id
    // still open is refused.
    assert!(session.pre_tool_call(&ls).await.unwrap().proceeds());
    let err = session.pre_tool_call(&ls).await.unwrap_err();
    assert!(out_of_order(&err, InterceptionPoint::PreToolCall).contains("distinct id"));
    assert!(session.post_tool_call(&ls, &ok).await.unwrap().proceeds());
    let err = session.post_tool_call(&ls, &ok).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PostToolCall);
    // Refusals took no sequence: startup 0, input 1, pre c2 2, pre c1
    // 3, post 4.
    let e = session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert_eq!(e.record().sequence, 5);
}

#[tokio::test]
async fn a_post_model_call_pairs_with_a_permitted_pre_model_call() {
    let session = host().session("m").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let response = ModelResponse {
        content: json!("hi"),
        tool_calls: Vec::new(),
        finish_reason: "stop".into(),
    };
    let err = session.post_model_call("m", &response).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PostModelCall);
    session.pre_model_call("m", json!([])).await.unwrap();
    assert!(session.post_model_call("m", &response).await.is_ok());
    let err = session.post_model_call("m", &response).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PostModelCall);
}

#[tokio::test]
async fn rule_3_needs_a_permitting_input_and_the_output_closes_the_turn() {
    let session = deny_inputs_saying("no").session("t").unwrap();
    session.start(["ls"]).await.unwrap();
    let ls = ToolCall::new("c1", "ls", json!({}));
    // Before any input: every point that results from one is refused.
    let err = session.pre_model_call("m", json!([])).await.unwrap_err();
    let reason = out_of_order(&err, InterceptionPoint::PreModelCall);
    assert!(reason.contains("rule 3"), "{reason}");
    let err = session.pre_tool_call(&ls).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PreToolCall);
    let err = session.output(json!("x")).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::Output);
    // A denied input begins no turn.
    let denied = session.input(json!("no"), InputRole::User).await.unwrap();
    assert!(!denied.proceeds());
    let err = session.pre_model_call("m", json!([])).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PreModelCall);
    // A permitting input opens one; the output closes it.
    session.input(json!("hi"), InputRole::User).await.unwrap();
    assert!(session.pre_model_call("m", json!([])).await.is_ok());
    assert!(session.pre_tool_call(&ls).await.unwrap().proceeds());
    assert!(session.output(json!("done")).await.unwrap().proceeds());
    let err = session.pre_model_call("m", json!([])).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PreModelCall);
    let err = session.output(json!("again")).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::Output);
    // The next turn needs the next input; end_turn closes a turn that
    // stopped without an output.
    session.input(json!("more"), InputRole::User).await.unwrap();
    assert!(session.pre_model_call("m", json!([])).await.is_ok());
    session.end_turn();
    let err = session.pre_model_call("m", json!([])).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::PreModelCall);
    // Concurrent turns each hold their own until their output.
    session.input(json!("a"), InputRole::User).await.unwrap();
    session.input(json!("b"), InputRole::User).await.unwrap();
    assert!(session.output(json!("a done")).await.is_ok());
    assert!(session.pre_model_call("m", json!([])).await.is_ok());
    assert!(session.output(json!("b done")).await.is_ok());
    let err = session.output(json!("c")).await.unwrap_err();
    out_of_order(&err, InterceptionPoint::Output);
}

fn deny_inputs_saying(word: &'static str) -> Host {
    let policy = interceptor_fn(move |ctx: hookwire::AgentContext| {
        let deny = ctx.point() == InterceptionPoint::Input
            && ctx.get("input").and_then(|i| i.get("content")) == Some(&json!(word));
        async move {
            Ok::<_, BoxError>(if deny {
                Verdict::deny("test:input")
            } else {
                Verdict::allow()
            })
        }
    });
    Host::builder("agent", "hookwire")
        .interceptor("policy", policy)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_raw_emit_path_books_pairs_without_refusing() {
    let session = host().session("raw").unwrap();
    session.start(["bash"]).await.unwrap();
    let mut m = Map::new();
    m.insert(
        "tool_call".into(),
        json!({"id": "c", "name": "bash", "args": {}}),
    );
    m.insert("tool_result".into(), json!({"value": 1, "is_error": false}));
    assert!(
        session
            .emit(InterceptionPoint::PostToolCall, m)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn output_content_is_reachable_only_through_a_permitting_verdict() {
    let deny_output = interceptor_fn(|ctx: hookwire::AgentContext| {
        let deny = ctx.point() == InterceptionPoint::Output;
        async move {
            Ok::<_, BoxError>(if deny {
                Verdict::deny("test:no")
            } else {
                Verdict::allow()
            })
        }
    });
    let denying = Host::builder("agent", "hookwire")
        .interceptor("p", deny_output)
        .build()
        .unwrap();
    let session = denying.session("o").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let decision = session.output(json!("secret answer")).await.unwrap();
    assert!(!decision.proceeds());
    let withheld = decision.release().unwrap_err();
    assert_eq!(withheld.verdict().reason.as_deref(), Some("test:no"));

    let session = host().session("o2").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let released = session.output(json!("fine")).await.unwrap().release();
    assert_eq!(released.unwrap(), json!("fine"));
}

#[tokio::test]
async fn a_session_overrides_mode_and_composition_per_point() {
    let deny_all = interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::deny("test:no")) });
    let denying = Host::builder("agent", "hookwire")
        .interceptor("p", deny_all)
        .build()
        .unwrap();
    let strictest = Composition::new(Profile::ParallelStrictest);
    let session = denying
        .session_builder("ov")
        .mode_at(InterceptionPoint::Input, Mode::EvaluateOnly)
        .composition_at(InterceptionPoint::Input, strictest)
        .open()
        .unwrap();
    assert_eq!(
        session.mode_at(InterceptionPoint::Input),
        Mode::EvaluateOnly
    );
    assert_eq!(session.mode_at(InterceptionPoint::Output), Mode::Enforce);
    let e = session.start(["bash"]).await.unwrap();
    assert_eq!(
        e.record().mode,
        Mode::Enforce,
        "startup keeps the host's mode"
    );
    assert!(!e.proceeds());
    let host2 = Host::builder("agent", "hookwire")
        .interceptor(
            "p",
            interceptor_fn(|_| async { Ok::<_, BoxError>(Verdict::deny("test:no")) }),
        )
        .build()
        .unwrap();
    let session = host2
        .session_builder("ov2")
        .mode(Mode::EvaluateOnly)
        .composition_at(InterceptionPoint::Input, strictest)
        .open()
        .unwrap();
    let e = session.start(["bash"]).await.unwrap();
    assert!(e.proceeds(), "evaluate_only for the whole session");
    let e = session.input(json!("hi"), InputRole::User).await.unwrap();
    assert_eq!(e.record().mode, Mode::EvaluateOnly);
    assert_eq!(e.record().composition.profile, Profile::ParallelStrictest);
    assert_eq!(
        e.verdict().decision,
        hookwire::Decision::Deny,
        "recorded, not enforced"
    );
    assert!(e.proceeds());
    let e = session.output(json!("x")).await.unwrap();
    assert_eq!(e.record().composition.profile, host2.composition().profile);
}

#[tokio::test]
async fn a_cancelled_emission_leaves_a_record_not_a_sequence_gap() {
    let slow_input = interceptor_fn(|ctx: hookwire::AgentContext| async move {
        if ctx.point() == InterceptionPoint::Input {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        }
        Ok::<_, BoxError>(Verdict::allow())
    });
    let records = crate::RecordLog::new();
    let host = Host::builder("agent", "hookwire")
        .interceptor("slow", slow_input)
        .record_sink(records.clone())
        .build()
        .unwrap();
    let session = host.session("c").unwrap();
    session.start(["bash"]).await.unwrap();
    let cancelled = tokio::time::timeout(
        std::time::Duration::from_millis(50),
        session.input(json!("hi"), InputRole::User),
    )
    .await;
    assert!(cancelled.is_err(), "the caller gave up");
    let e = session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert_eq!(e.record().sequence, 2);
    let trail = records.session("c");
    let sequences: Vec<i64> = trail.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, vec![0, 1, 2], "no gap");
    let r = &trail[1];
    assert_eq!(r.interception_point, InterceptionPoint::Input);
    // Not `interceptor_timeout`: no interceptor ran past the host's bound
    // (§11); the reference Python emitter's reason for a cancellation.
    assert_eq!(
        r.verdict.reason.as_deref(),
        Some("host_error:interceptor_failed")
    );
    assert!(
        r.verdict
            .message
            .as_deref()
            .is_some_and(|m| m.contains("cancelled by its caller")),
        "{:?}",
        r.verdict.message
    );
    assert!(!r.proceeds());
    assert_eq!(r.extensions["hookwire"]["cancelled"], json!(true));
    assert_eq!(r.input_identity, None);
}

#[tokio::test]
async fn emit_refuses_a_lifecycle_point_before_startup_too() {
    let session = host().session("fresh").unwrap();
    let err = session
        .emit(InterceptionPoint::AgentShutdown, Map::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LifecyclePoint { .. }), "{err:?}");
}

/// Waits (bounded) until `records` holds `n` records of session `id`.
async fn trail_of(
    records: &crate::RecordLog,
    id: &str,
    n: usize,
) -> Vec<hookwire::InterceptionRecord> {
    for _ in 0..200 {
        let trail = records.session(id);
        if trail.len() >= n {
            return trail;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    records.session(id)
}

fn recorded_host(records: &crate::RecordLog, deny_startup: bool) -> Host {
    let policy = interceptor_fn(move |ctx: hookwire::AgentContext| async move {
        Ok::<_, BoxError>(
            if deny_startup && ctx.point() == InterceptionPoint::AgentStartup {
                Verdict::deny("test:closed")
            } else {
                Verdict::allow()
            },
        )
    });
    Host::builder("agent", "hookwire")
        .interceptor("policy", policy)
        .record_sink(records.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_started_session_dropped_without_shutdown_still_emits_agent_shutdown() {
    let records = crate::RecordLog::new();
    let host = recorded_host(&records, false);
    let session = host.session("d").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("hi"), InputRole::User).await.unwrap();
    drop(session);
    let trail = trail_of(&records, "d", 3).await;
    let points: Vec<_> = trail
        .iter()
        .map(|r| (r.sequence, r.interception_point))
        .collect();
    assert_eq!(
        points,
        vec![
            (0, InterceptionPoint::AgentStartup),
            (1, InterceptionPoint::Input),
            (2, InterceptionPoint::AgentShutdown),
        ]
    );
    assert_eq!(trail[2].verdict.decision, hookwire::Decision::Allow);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(records.session("d").len(), 3, "exactly one agent_shutdown");
}

#[tokio::test]
async fn a_dropped_session_whose_startup_was_denied_shuts_down_with_reason_error() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let summaries = seen.clone();
    let watcher = interceptor_fn(move |ctx: hookwire::AgentContext| {
        let summaries = summaries.clone();
        async move {
            if ctx.point() == InterceptionPoint::AgentShutdown {
                summaries.lock().unwrap().push(ctx.get("summary").cloned());
            }
            Ok::<_, BoxError>(if ctx.point() == InterceptionPoint::AgentStartup {
                Verdict::deny("test:closed")
            } else {
                Verdict::allow()
            })
        }
    });
    let records = crate::RecordLog::new();
    let host = Host::builder("agent", "hookwire")
        .interceptor("watcher", watcher)
        .record_sink(records.clone())
        .build()
        .unwrap();
    let session = host.session("denied").unwrap();
    assert!(!session.start(["bash"]).await.unwrap().proceeds());
    drop(session);
    let trail = trail_of(&records, "denied", 2).await;
    assert_eq!(trail.len(), 2);
    assert_eq!(
        trail[1].interception_point,
        InterceptionPoint::AgentShutdown
    );
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![Some(json!({"reason": "error"}))]
    );
}

#[tokio::test]
async fn a_session_never_started_or_already_shut_down_emits_nothing_when_dropped() {
    let records = crate::RecordLog::new();
    let host = recorded_host(&records, false);
    drop(host.session("fresh").unwrap());
    let closed = host.session("closed").unwrap();
    closed.start(["bash"]).await.unwrap();
    closed.shutdown(ShutdownReason::Completed).await.unwrap();
    drop(closed);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(records.session("fresh").is_empty());
    assert_eq!(records.session("closed").len(), 2);
}

#[test]
fn a_session_dropped_outside_a_runtime_emits_nothing_and_does_not_panic() {
    let records = crate::RecordLog::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = recorded_host(&records, false);
    let session = runtime.block_on(async {
        let session = host.session("outside").unwrap();
        session.start(["bash"]).await.unwrap();
        session
    });
    drop(session);
    assert_eq!(records.session("outside").len(), 1, "only agent_startup");
}

mod queries;
