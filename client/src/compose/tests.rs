//! Every profile × knob × verdict mix of §7, driven without a network.

use hookwire::approval::Resolved;
use hookwire::{
    AgentContext, Composition, ContextLimits, Decision, HostError, InterceptionPoint, Mode,
    OnApproval, Profile, ResolvedBy, Synthesis, Verdict, Warning,
};
use serde_json::{Value, json};

use super::{Combined, Composer, Plan, Step};

fn ctx(point: InterceptionPoint) -> AgentContext {
    let (member, body) = match point {
        InterceptionPoint::AgentStartup => ("agent_init", json!({"tools_registered": []})),
        InterceptionPoint::AgentShutdown => ("summary", json!({"reason": "completed"})),
        _ => (
            "tool_call",
            json!({"id": "c1", "name": "http_get", "args": {"url": "a", "n": 1}}),
        ),
    };
    let point = if member == "tool_call" {
        InterceptionPoint::PreToolCall
    } else {
        point
    };
    AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1", "interception_point": point.as_str(),
        "timestamp": "2026-01-01T00:00:00Z", "sequence": 1,
        "agent": {"id": "a", "framework": "hookwire"}, "session": {"id": "s"},
        member: body,
    }))
    .unwrap()
}

/// What a scripted emission did.
struct Run {
    combined: Combined,
    dispatched: Vec<usize>,
    consulted: Vec<(Option<usize>, Verdict)>,
    target: Value,
}

fn run_at(
    point: InterceptionPoint,
    composition: Composition,
    mode: Mode,
    verdicts: Vec<Verdict>,
    resolutions: Vec<Resolved>,
) -> Run {
    let mut ctx = ctx(point);
    let plan = Plan {
        composition,
        mode,
        point: ctx.point(),
        interceptors: verdicts.len(),
        resolver: !resolutions.is_empty(),
        limits: ContextLimits::default(),
    };
    let mut composer = Composer::new(plan);
    let mut resolutions = resolutions.into_iter();
    let (mut dispatched, mut consulted) = (Vec::new(), Vec::new());
    let mut step = composer.start();
    let combined = loop {
        step = match step {
            Step::Dispatch(i) => {
                dispatched.push(i);
                composer.on_verdict(i, verdicts[i].clone(), &mut ctx)
            }
            Step::DispatchAll => {
                dispatched.extend(0..verdicts.len());
                composer.on_verdicts(verdicts.clone(), &mut ctx)
            }
            Step::Consult { index, verdict } => {
                consulted.push((index, verdict));
                let r = resolutions.next().expect("scripted resolution");
                composer.on_resolution(r, &mut ctx)
            }
            Step::Done(c) => break c,
        };
    };
    Run {
        combined,
        dispatched,
        consulted,
        target: ctx.target().cloned().unwrap(),
    }
}

fn run(c: Composition, verdicts: Vec<Verdict>, resolutions: Vec<Resolved>) -> Run {
    run_at(
        InterceptionPoint::PreToolCall,
        c,
        Mode::Enforce,
        verdicts,
        resolutions,
    )
}

fn reason(r: &Run) -> &str {
    r.combined.verdict.reason.as_deref().unwrap_or_default()
}

fn first_deny() -> Composition {
    Composition::new(Profile::SequentialFirstDeny)
}
fn run_all() -> Composition {
    Composition::new(Profile::SequentialRunAll)
}
fn strictest() -> Composition {
    Composition::new(Profile::ParallelStrictest)
}
fn unanimous() -> Composition {
    Composition::new(Profile::ParallelUnanimous)
}
fn t(path: &str, v: Value) -> Verdict {
    Verdict::transform(path, v)
}
fn lifted(v: Verdict) -> Resolved {
    Resolved::Lifted(v)
}

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

#[test]
fn warnings_and_labels_are_unioned_first_seen() {
    let w = |r: &str| Warning {
        reason: Some(r.into()),
        message: None,
    };
    let r = run(
        run_all(),
        vec![
            Verdict::allow().with_warning(w("a")).with_label("x"),
            Verdict::allow()
                .with_warning(w("b"))
                .with_warning(w("a"))
                .with_label("y"),
            t("$target.url", json!("z"))
                .with_label("x")
                .with_warning(w("c")),
        ],
        vec![],
    );
    let v = &r.combined.verdict;
    assert_eq!(v.warnings, vec![w("a"), w("b"), w("c")]);
    assert_eq!(v.result_labels, vec!["x".to_string(), "y".to_string()]);
    let r = run(
        strictest(),
        vec![
            Verdict::allow().with_label("x").with_warning(w("a")),
            Verdict::deny("d"),
        ],
        vec![],
    );
    assert_eq!(r.combined.verdict.warnings, vec![w("a")]);
    assert!(
        r.combined.verdict.result_labels.is_empty(),
        "labels dropped on deny"
    );
}

/// Every mix of up to three verdicts (allow, good transform, bad transform,
/// deny, liftable deny) under every profile, knob, mode and resolver
/// behaviour: the invariants the spec states for all of them hold.
#[test]
fn invariants_hold_for_every_profile_knob_and_verdict_mix() {
    let kinds = [
        Verdict::allow().with_label("l"),
        t("$target.url", json!("x")).with_label("t"),
        t("$target.nope", json!(1)),
        Verdict::deny("d"),
        Verdict::escalate("e"),
    ];
    let compositions = [
        Composition::first_deny(OnApproval::Stop),
        Composition::first_deny(OnApproval::Resume),
        run_all(),
        Composition::strictest(Synthesis::Deny),
        Composition::strictest(Synthesis::Approval),
        Composition::unanimous(Synthesis::Deny),
        Composition::unanimous(Synthesis::Approval),
    ];
    let resolvers: [Option<Resolved>; 3] = [
        None,
        Some(lifted(Verdict::allow())),
        Some(Resolved::Stands(Verdict::deny("rejected"))),
    ];
    let mut mixes: Vec<Vec<Verdict>> = vec![vec![]];
    for _ in 0..3 {
        let longer: Vec<Vec<Verdict>> = mixes
            .iter()
            .filter(|m| m.len() == mixes.last().map_or(0, Vec::len))
            .flat_map(|m| {
                kinds.iter().map(move |k| {
                    let mut n = m.clone();
                    n.push(k.clone());
                    n
                })
            })
            .collect();
        mixes.extend(longer);
    }
    let mut checked = 0;
    for mix in mixes.iter().filter(|m| !m.is_empty()) {
        for c in compositions {
            for mode in [Mode::Enforce, Mode::EvaluateOnly] {
                for resolver in &resolvers {
                    let resolutions: Vec<Resolved> =
                        resolver.iter().cloned().cycle().take(mix.len()).collect();
                    let r = run_at(
                        InterceptionPoint::PreToolCall,
                        c,
                        mode,
                        mix.clone(),
                        resolutions,
                    );
                    check_invariants(c, mode, mix, resolver.is_some(), &r);
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 155 * 7 * 2 * 3);
}

fn check_invariants(c: Composition, mode: Mode, mix: &[Verdict], resolver: bool, r: &Run) {
    let v = &r.combined.verdict;
    let ctx = format!("{c:?} {mode:?} resolver={resolver} mix={mix:?} -> {v:?}");
    let plain_deny = mix
        .iter()
        .any(|m| m.decision == Decision::Deny && !m.is_liftable());
    // §5.4: labels only travel with a permit.
    if !v.is_permit() {
        assert!(v.result_labels.is_empty(), "{ctx}");
    }
    // §8: evaluate_only never consults and never rewrites.
    if mode == Mode::EvaluateOnly {
        assert!(r.consulted.is_empty(), "{ctx}");
        assert!(!r.combined.transformed, "{ctx}");
        assert_eq!(r.target["url"], json!("a"), "{ctx}");
    }
    // §9: only liftable denies are offered, and only with a resolver.
    assert!(r.consulted.iter().all(|(_, d)| d.is_liftable()), "{ctx}");
    if !resolver {
        assert!(
            r.consulted.is_empty() && r.combined.resolved_by.is_none(),
            "{ctx}"
        );
    }
    // §10.3: decided_by points at a registered interceptor; summaries cover
    // exactly the interceptors that ran.
    assert!(r.combined.decided_by.is_none_or(|i| i < mix.len()), "{ctx}");
    assert_eq!(r.combined.summaries.len(), r.dispatched.len(), "{ctx}");
    // The target changes only in enforce mode; in parallel profiles only
    // through a permit (a sequential fold keeps what folded before a deny,
    // which then blocks the action, §7.4).
    if r.target["url"] != json!("a") {
        assert_eq!(mode, Mode::Enforce, "{ctx}");
        assert!(c.profile.is_sequential() || v.is_permit(), "{ctx}");
    }
    if c.profile.is_sequential() {
        // §7.4: strictly in order, truncation recorded.
        let expected: Vec<usize> = (0..r.dispatched.len()).collect();
        assert_eq!(r.dispatched, expected, "{ctx}");
        assert_eq!(
            r.combined.fold_truncated,
            Some(r.dispatched.len() < mix.len()),
            "{ctx}"
        );
        if c.profile == Profile::SequentialRunAll {
            // Nothing short-circuits except a failed fold transform.
            let bad_transform = mix.iter().any(|m| {
                m.transform
                    .as_ref()
                    .is_some_and(|t| t.path == "$target.nope")
            });
            if !bad_transform {
                assert_eq!(r.dispatched.len(), mix.len(), "{ctx}");
            }
            // A plain deny is never lifted: consulting would be pointless.
            if plain_deny {
                assert!(r.consulted.is_empty() && !v.is_permit(), "{ctx}");
            }
            assert!(r.consulted.len() <= 1, "{ctx}");
        }
    } else {
        // §7.5: everyone sees the snapshot; no fold.
        assert_eq!(r.dispatched, (0..mix.len()).collect::<Vec<_>>(), "{ctx}");
        assert_eq!(r.combined.fold_truncated, None, "{ctx}");
        assert!(r.consulted.len() <= 1, "{ctx}");
        if c.profile == Profile::ParallelStrictest && plain_deny {
            assert!(!v.is_permit() && r.consulted.is_empty(), "{ctx}");
        }
        if c.profile == Profile::ParallelUnanimous {
            let all_allow = mix.iter().all(|m| m.decision == Decision::Allow);
            if all_allow {
                assert_eq!(v.decision, Decision::Allow, "{ctx}");
            } else if r.combined.resolved_by != Some(ResolvedBy::Approval) {
                assert!(!v.is_permit(), "{ctx}");
            }
        }
    }
    // A permit combined verdict after a returned deny needs an approval.
    if v.is_permit()
        && mix
            .iter()
            .take(r.dispatched.len())
            .any(|m| m.decision == Decision::Deny)
        && c.profile != Profile::ParallelUnanimous
    {
        assert_eq!(r.combined.resolved_by, Some(ResolvedBy::Approval), "{ctx}");
    }
}

/// What the host pays per transform for the §12.3 re-check of the
/// transformed context (`AgentContext::check_limits`), next to writing the
/// transform itself, on a `pre_tool_call` context of about 1 KiB. A
/// timing, not a check; both pieces are `hookwire`'s, so optimizing that
/// crate alone measures them:
/// `cargo test -p hookwire-client --lib --config
/// 'profile.dev.package.hookwire.opt-level=3' -- --ignored --nocapture
/// recheck`.
#[test]
#[ignore = "a timing, not a check"]
fn recheck_after_a_transform_timing() {
    use std::hint::black_box;
    use std::time::Instant;

    let args = json!({
        "cmd": "x".repeat(700),
        "cwd": "/home/agent/work",
        "env": {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
        "timeout_s": 30,
        "flags": ["-l", "-a", "--color=never"],
    });
    let mut ctx = AgentContext::from_json(json!({
        "spec": "agent-hooks/0.1", "interception_point": "pre_tool_call",
        "timestamp": "2026-01-01T00:00:00Z", "sequence": 1,
        "agent": {"id": "billing-agent", "framework": "hookwire"},
        "session": {"id": "run-1"},
        "tool_call": {"id": "call-1", "name": "bash", "args": args},
    }))
    .unwrap();
    let target_bytes = serde_json::to_vec(ctx.target().unwrap()).unwrap().len();
    let limits = ContextLimits::default();
    let rounds = 200_000u32;
    let per = |f: &mut dyn FnMut()| {
        for _ in 0..rounds / 10 {
            f();
        }
        let started = Instant::now();
        for _ in 0..rounds {
            f();
        }
        started.elapsed() / rounds
    };
    let mut n = 0u64;
    let transform = per(&mut || {
        n += 1;
        let target = ctx.target_mut().unwrap();
        black_box(hookwire::path::replace(target, "$target.timeout_s", json!(n)).unwrap());
    });
    let recheck = per(&mut || ctx.check_limits(black_box(&limits)).unwrap());
    println!("target {target_bytes} B: transform {transform:?}, §12.3 re-check {recheck:?}");
}
