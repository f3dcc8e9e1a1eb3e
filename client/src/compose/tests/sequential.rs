//! `sequential/first_deny`: folding transforms, stopping at the first
//! deny, consulting the resolver on a liftable one, and the bounds a fold
//! must respect.

use super::*;

#[test]
fn zero_interceptors_deny_in_every_profile() {
    for c in [first_deny(), run_all(), strictest(), unanimous()] {
        for mode in [Mode::Enforce, Mode::EvaluateOnly] {
            let r = run_at(InterceptionPoint::PreToolCall, c, mode, vec![], vec![]);
            assert_eq!(reason(&r), "host_error:no_interceptor");
            assert_eq!(r.combined.decided_by, None);
            assert!(r.dispatched.is_empty());
        }
    }
}

#[test]
fn first_deny_folds_transforms_and_stops_at_the_first_deny() {
    let r = run(
        first_deny(),
        vec![
            t("$target.url", json!("b")),
            Verdict::deny("no"),
            Verdict::allow(),
        ],
        vec![],
    );
    assert_eq!(r.dispatched, [0, 1]);
    assert_eq!(reason(&r), "no");
    assert_eq!(r.combined.decided_by, Some(1));
    assert_eq!(r.combined.fold_truncated, Some(true));
    assert_eq!(r.combined.resolved_by, None);
    assert!(r.combined.verdict.result_labels.is_empty());
}

#[test]
fn first_deny_last_transform_wins_and_later_interceptors_see_the_fold() {
    let r = run(
        first_deny(),
        vec![
            t("$target.url", json!("b")),
            Verdict::allow(),
            t("$target.n", json!(2)),
        ],
        vec![],
    );
    assert_eq!(r.combined.verdict.decision, Decision::Transform);
    assert_eq!(r.combined.decided_by, Some(2));
    assert_eq!(r.combined.fold_truncated, Some(false));
    assert_eq!(r.target, json!({"url": "b", "n": 2}));
    assert!(r.combined.transformed);
}

#[test]
fn pure_allow_has_no_decider() {
    let r = run(
        first_deny(),
        vec![Verdict::allow(), Verdict::allow()],
        vec![],
    );
    assert_eq!(r.combined.verdict, Verdict::allow());
    assert_eq!(r.combined.decided_by, None);
    assert!(!r.combined.transformed);
}

#[test]
fn liftable_deny_without_resolver_stands() {
    let r = run(first_deny(), vec![Verdict::escalate("human")], vec![]);
    assert_eq!(reason(&r), "human");
    assert!(r.combined.verdict.is_liftable());
    assert_eq!(r.combined.resolved_by, None);
    assert!(r.consulted.is_empty());
}

#[test]
fn on_approval_stop_ends_the_emission_truncated() {
    let r = run(
        first_deny(),
        vec![Verdict::escalate("human"), Verdict::deny("never-run")],
        vec![lifted(Verdict::allow())],
    );
    assert_eq!(r.dispatched, [0]);
    assert_eq!(r.combined.verdict.decision, Decision::Allow);
    assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(r.combined.fold_truncated, Some(true));
    assert_eq!(r.combined.decided_by, Some(0));
}

#[test]
fn on_approval_resume_consults_every_liftable_deny_in_turn() {
    let r = run(
        Composition::first_deny(OnApproval::Resume),
        vec![
            Verdict::escalate("a"),
            Verdict::escalate("b"),
            t("$target.url", json!("twice")),
        ],
        vec![lifted(Verdict::allow()), lifted(Verdict::allow())],
    );
    assert_eq!(
        r.consulted.iter().map(|c| c.0).collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    assert_eq!(r.combined.verdict.decision, Decision::Transform);
    assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(r.combined.fold_truncated, Some(false));
    assert_eq!(r.target["url"], json!("twice"));
}

#[test]
fn resume_with_a_later_plain_deny_is_truncated_only_if_skipped() {
    let r = run(
        Composition::first_deny(OnApproval::Resume),
        vec![Verdict::escalate("a"), Verdict::deny("b"), Verdict::allow()],
        vec![lifted(t("$target.url", json!("approved")))],
    );
    assert_eq!(reason(&r), "b");
    assert_eq!(r.combined.fold_truncated, Some(true));
    assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(r.target["url"], json!("approved"));
}

#[test]
fn rejection_leaves_the_resolvers_deny_standing() {
    let r = run(
        first_deny(),
        vec![Verdict::escalate("human")],
        vec![Resolved::Stands(Verdict::deny("rejected"))],
    );
    assert_eq!(reason(&r), "rejected");
    assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Rejection));
    assert_eq!(r.combined.decided_by, Some(0));
}

#[test]
fn a_transform_past_the_context_bounds_is_denied_and_never_applied() {
    let limits = ContextLimits::default();
    let big = json!("x".repeat(limits.max_bytes));
    let mut deep = json!(1);
    for _ in 0..limits.max_depth {
        deep = json!([deep]);
    }
    let untouched = json!({"url": "a", "n": 1});
    for (what, value) in [("size", big), ("depth", deep)] {
        for mode in [Mode::Enforce, Mode::EvaluateOnly] {
            for c in [first_deny(), run_all(), strictest()] {
                let verdicts = if c.profile == Profile::ParallelStrictest {
                    vec![t("$target.url", value.clone()), Verdict::allow()]
                } else {
                    vec![t("$target.url", value.clone()), t("$target.n", json!(2))]
                };
                let r = run_at(InterceptionPoint::PreToolCall, c, mode, verdicts, vec![]);
                let at = format!("{what} {mode:?} {:?}", c.profile);
                assert_eq!(reason(&r), "host_error:context_invalid", "{at}");
                let message = r.combined.verdict.message.as_deref().unwrap_or_default();
                assert!(message.contains("out of bounds"), "{at}: {message}");
                assert_eq!(r.combined.decided_by, None, "{at}");
                assert!(!r.combined.transformed, "{at}");
                assert_eq!(r.target, untouched, "{at}: never applied");
                if c.profile != Profile::ParallelStrictest {
                    assert_eq!(r.dispatched, [0], "{at}: the fold stops");
                }
            }
        }
    }
    // Within the bounds a large transform applies as any other (the
    // serialized context carries the target twice).
    let within = json!("x".repeat(limits.max_bytes / 3));
    let r = run(first_deny(), vec![t("$target.url", within.clone())], vec![]);
    assert_eq!(r.combined.verdict.decision, Decision::Transform);
    assert_eq!(r.target["url"], within);
}

#[test]
fn failed_fold_transform_short_circuits_both_sequential_profiles() {
    for c in [first_deny(), run_all()] {
        let r = run(
            c,
            vec![t("$target.missing", json!(1)), Verdict::allow()],
            vec![],
        );
        assert_eq!(reason(&r), "host_error:transform_invalid");
        assert_eq!(r.combined.decided_by, None);
        assert_eq!(r.combined.fold_truncated, Some(true));
        assert_eq!(r.dispatched, [0]);
        let r = run(c, vec![t("$context.x", json!(1))], vec![]);
        assert_eq!(reason(&r), "host_error:transform_target_forbidden");
        assert_eq!(r.combined.fold_truncated, Some(false));
    }
}

#[test]
fn transforms_are_forbidden_at_session_boundaries() {
    for point in [
        InterceptionPoint::AgentStartup,
        InterceptionPoint::AgentShutdown,
    ] {
        for c in [first_deny(), strictest()] {
            let r = run_at(
                point,
                c,
                Mode::Enforce,
                vec![t("$target", json!({}))],
                vec![],
            );
            assert_eq!(reason(&r), "host_error:transform_target_forbidden");
        }
    }
}
