//! run_all, strictest and unanimous, evaluate-only, and the points where
//! the resolver is never consulted.

use super::*;

#[test]
fn run_all_runs_everything_and_takes_the_severity_max() {
    let r = run(
        run_all(),
        vec![
            Verdict::allow().with_label("l0"),
            Verdict::escalate("lift"),
            Verdict::deny("plain"),
            Verdict::deny("plain-later"),
        ],
        vec![lifted(Verdict::allow())],
    );
    assert_eq!(r.dispatched, [0, 1, 2, 3]);
    assert_eq!(reason(&r), "plain");
    assert_eq!(r.combined.decided_by, Some(2));
    assert!(
        r.consulted.is_empty(),
        "a plain deny makes lifting pointless"
    );
    assert_eq!(r.combined.fold_truncated, Some(false));
    assert_eq!(r.combined.summaries.len(), 4);
    assert!(r.combined.verdict.result_labels.is_empty());
}

#[test]
fn run_all_consults_once_when_every_deny_is_liftable() {
    let r = run(
        run_all(),
        vec![
            t("$target.url", json!("f")),
            Verdict::escalate("a"),
            Verdict::escalate("b"),
        ],
        vec![lifted(t("$target.n", json!(9)))],
    );
    assert_eq!(r.consulted.len(), 1);
    assert_eq!(r.consulted[0].0, Some(1));
    assert_eq!(r.combined.verdict.decision, Decision::Transform);
    assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(
        r.target,
        json!({"url": "f", "n": 9}),
        "resolution applied on top of the fold"
    );
}

#[test]
fn strictest_isolates_and_picks_the_lowest_index_deny() {
    let r = run(
        strictest(),
        vec![
            t("$target.url", json!("x")),
            Verdict::escalate("lift"),
            Verdict::deny("d2"),
            Verdict::deny("d3"),
        ],
        vec![],
    );
    assert_eq!(reason(&r), "d2");
    assert_eq!(r.combined.decided_by, Some(2));
    assert_eq!(r.combined.fold_truncated, None);
    assert_eq!(r.target["url"], json!("a"), "losing transform not applied");
}

#[test]
fn strictest_applies_a_single_transform_and_conflicts_on_two() {
    let r = run(
        strictest(),
        vec![Verdict::allow(), t("$target.url", json!("x"))],
        vec![],
    );
    assert_eq!(r.combined.verdict.decision, Decision::Transform);
    assert_eq!(r.combined.decided_by, Some(1));
    assert_eq!(r.target["url"], json!("x"));

    let two = vec![t("$target.url", json!("x")), t("$target.url", json!("y"))];
    let r = run(strictest(), two.clone(), vec![]);
    assert_eq!(reason(&r), "host_error:transform_conflict");
    assert_eq!(r.combined.decided_by, None);
    assert_eq!(r.target["url"], json!("a"));

    let r = run(
        Composition::strictest(Synthesis::Approval),
        two,
        vec![lifted(t("$target.url", json!("arbiter")))],
    );
    assert_eq!(r.consulted[0].0, None);
    assert_eq!(
        r.consulted[0].1.reason.as_deref(),
        Some("host_error:transform_conflict")
    );
    assert!(r.consulted[0].1.is_liftable());
    assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(r.combined.decided_by, None);
    assert_eq!(r.target["url"], json!("arbiter"));
}

#[test]
fn unanimous_requires_every_allow() {
    let r = run(
        unanimous(),
        vec![Verdict::allow(), Verdict::allow()],
        vec![],
    );
    assert_eq!(r.combined.verdict.decision, Decision::Allow);
    let r = run(
        unanimous(),
        vec![Verdict::allow(), t("$target.url", json!("x"))],
        vec![],
    );
    assert_eq!(reason(&r), "host_error:composition_disagreement");
    assert_eq!(r.target["url"], json!("a"));
    let r = run(
        Composition::unanimous(Synthesis::Approval),
        vec![Verdict::deny("no"), Verdict::allow()],
        vec![Resolved::Stands(Verdict::host_error(
            HostError::ApprovalUnresolved,
        ))],
    );
    assert_eq!(reason(&r), "host_error:approval_unresolved");
    assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Rejection));
}

#[test]
fn evaluate_only_checks_transforms_without_applying_and_never_consults() {
    let r = run_at(
        InterceptionPoint::PreToolCall,
        first_deny(),
        Mode::EvaluateOnly,
        vec![t("$target.url", json!("x")), Verdict::escalate("lift")],
        vec![lifted(Verdict::allow())],
    );
    assert!(r.consulted.is_empty());
    assert_eq!(r.target["url"], json!("a"));
    assert!(!r.combined.transformed);
    assert_eq!(reason(&r), "lift");
    let r = run_at(
        InterceptionPoint::PreToolCall,
        first_deny(),
        Mode::EvaluateOnly,
        vec![t("$target.nope", json!("x"))],
        vec![],
    );
    assert_eq!(reason(&r), "host_error:transform_invalid");
}

#[test]
fn never_consults_at_agent_shutdown() {
    let r = run_at(
        InterceptionPoint::AgentShutdown,
        first_deny(),
        Mode::Enforce,
        vec![Verdict::escalate("lift")],
        vec![lifted(Verdict::allow())],
    );
    assert!(r.consulted.is_empty());
    assert_eq!(r.combined.resolved_by, None);
}
