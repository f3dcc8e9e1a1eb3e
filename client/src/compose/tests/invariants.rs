//! Warnings and labels, and the invariants that hold over every profile,
//! knob and verdict mix.

use super::*;

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
